package job

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Holder is who holds a lease: one process. Its string form,
// "host:pid:start:random", is what the catalog records (catalog.Lease.Holder
// and catalog.Job.Owner).
type Holder struct {
	Host string
	PID  int
	// Start is the process's start time, in clock ticks since the machine
	// booted (field 22 of /proc/PID/stat); 0 where it cannot be read. With
	// PID it names one process even after the PID is reused.
	Start uint64
	// Random tells apart processes that got the same PID and start time on
	// two machines of the same name, or after a reboot.
	Random string
}

// String is the holder's recorded form.
func (h Holder) String() string {
	return fmt.Sprintf("%s:%d:%d:%s", h.Host, h.PID, h.Start, h.Random)
}

// ParseHolder reads a holder's recorded form; false if s is not one (a
// holder named by hand, or by another program).
func ParseHolder(s string) (Holder, bool) {
	f := strings.Split(s, ":")
	if len(f) < 4 {
		return Holder{}, false
	}
	n := len(f)
	pid, err1 := strconv.Atoi(f[n-3])
	start, err2 := strconv.ParseUint(f[n-2], 10, 64)
	host := strings.Join(f[:n-3], ":")
	if err1 != nil || err2 != nil || pid <= 0 || host == "" || f[n-1] == "" {
		return Holder{}, false
	}
	return Holder{Host: host, PID: pid, Start: start, Random: f[n-1]}, true
}

var (
	selfOnce sync.Once
	self     Holder
)

// Self is this process's holder: one per process, whatever the number of
// registries (each opened catalog has one) it runs.
func Self() Holder {
	selfOnce.Do(func() {
		self.Host, _ = os.Hostname()
		if self.Host == "" {
			self.Host = "localhost"
		}
		self.PID = os.Getpid()
		self.Start, _, _ = procStat(self.PID)
		var b [4]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		self.Random = hex.EncodeToString(b[:])
	})
	return self
}

// legacyOwner reads the PID of an owner recorded by a Kura from before
// leases: "PID-RANDOM.lock".
func legacyOwner(owner string) (int, bool) {
	name, ok := strings.CutSuffix(owner, ".lock")
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(name, "-")
	pid, err := strconv.Atoi(p)
	if !ok || err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// errNoProcess: /proc says no process has that PID.
var errNoProcess = errors.New("no such process")

// procStat reads the start time and state of process pid from
// /proc/PID/stat: errNoProcess if it does not exist, another error if /proc
// cannot tell (not Linux, not mounted).
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/stat"); serr == nil {
			return 0, 0, errNoProcess
		}
	}
	if err != nil {
		return 0, 0, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so the fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64) // field 22: starttime
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0][0], nil
}

// HolderGone says why the process holding a lease is known to be dead, or
// "" when it may be alive. Only a holder on this host (same host name) can
// be checked: it is gone when no process has its PID, when the process with
// its PID started at another time (the PID was reused), or when that process
// is a zombie (killed, not yet reaped). A holder on another host, or one
// this process cannot read, may be alive: its lease must expire. This
// process itself is never gone. The owner a Kura from before leases
// recorded, "PID-RANDOM.lock" (a lock file in the home's run/ folder, so a
// process of this host), is checked by its PID.
func HolderGone(holder string) string {
	me := Self()
	h, ok := ParseHolder(holder)
	if !ok {
		pid, ok := legacyOwner(holder)
		if !ok {
			return ""
		}
		h = Holder{Host: me.Host, PID: pid}
	}
	if h.Host != me.Host {
		return ""
	}
	if h.PID == me.PID && h.Start == me.Start {
		return ""
	}
	start, state, err := procStat(h.PID)
	switch {
	case errors.Is(err, errNoProcess):
		return fmt.Sprintf("is gone (process %d no longer runs)", h.PID)
	case err != nil:
		// No /proc: ask the kernel whether the PID exists.
		if errors.Is(syscall.Kill(h.PID, 0), syscall.ESRCH) {
			return fmt.Sprintf("is gone (process %d no longer runs)", h.PID)
		}
		return ""
	case state == 'Z' || state == 'X':
		return fmt.Sprintf("is gone (process %d has exited)", h.PID)
	case h.Start != 0 && start != h.Start:
		return fmt.Sprintf("is gone (process %d is another process: it started at tick %d, the holder at %d)", h.PID, start, h.Start)
	}
	return ""
}
