package job

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/pgtest"
)

const childEnv = "KURA_JOB_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "wait" {
		_, _ = io.ReadAll(os.Stdin) // lives until the test closes stdin or kills it
		os.Exit(0)
	}
	s, err := pgtest.Start("fsync=off")
	if err != nil {
		fmt.Fprintln(os.Stderr, "job tests:", err)
		os.Exit(1)
	}
	pg = s
	code := m.Run()
	if err := pg.Stop(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "job tests:", err)
		code = 1
	}
	os.Exit(code)
}

// pg is the PostgreSQL server of the tests that run on both catalogs.
var pg *pgtest.Server

// startChild starts a process that lives until killed, and returns it and
// its holder name.
func startChild(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=wait")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	start, _, err := procStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, Holder{Host: Self().Host, PID: cmd.Process.Pid, Start: start, Random: "feed"}.String()
}

func TestHolderString(t *testing.T) {
	h := Holder{Host: "db1:backup", PID: 4242, Start: 987654, Random: "0a1b"}
	got, ok := ParseHolder(h.String())
	if !ok || got != h {
		t.Errorf("ParseHolder(%q) = %+v, %v", h.String(), got, ok)
	}
	for _, bad := range []string{"", "a", "host:12:random", "host:x:1:r", "host:12:x:r", ":12:1:r", "host:0:1:r", "host:12:1:"} {
		if _, ok := ParseHolder(bad); ok {
			t.Errorf("ParseHolder(%q) accepted", bad)
		}
	}
	me := Self()
	if me != Self() || me.PID != os.Getpid() || me.Start == 0 || me.Random == "" {
		t.Errorf("Self() = %+v", me)
	}
}

// A holder on this host is gone once its process has died, been killed
// (even before it is reaped), or its PID has been reused; a live one, this
// process and a holder on another host are not.
func TestHolderGone(t *testing.T) {
	if HolderGone(Self().String()) != "" {
		t.Error("this process is gone")
	}
	reused := Self()
	reused.Start++
	if w := HolderGone(reused.String()); !strings.Contains(w, "another process") {
		t.Errorf("a holder whose PID now runs another process: %q", w)
	}
	elsewhere := Self()
	elsewhere.Host += ".elsewhere"
	elsewhere.PID = 1 << 30
	if w := HolderGone(elsewhere.String()); w != "" {
		t.Errorf("a holder on another host: %q, want unknown", w)
	}
	if w := HolderGone("a"); w != "" {
		t.Errorf("a holder named by hand: %q", w)
	}

	live, holder := startChild(t)
	legacy := fmt.Sprintf("%d-0a1b.lock", live.Process.Pid) // an owner from before leases
	if w := HolderGone(holder); w != "" {
		t.Fatalf("a live process is gone: %q", w)
	}
	if w := HolderGone(legacy); w != "" {
		t.Fatalf("a live process, named by its old lock file, is gone: %q", w)
	}
	// Killed, not yet reaped: a zombie.
	must(t, live.Process.Kill())
	var info unix.Siginfo
	must(t, unix.Waitid(unix.P_PID, live.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil))
	if w := HolderGone(holder); !strings.Contains(w, "has exited") {
		t.Errorf("a killed process not yet reaped: %q", w)
	}
	live.Wait()
	if w := HolderGone(holder); !strings.Contains(w, "no longer runs") {
		t.Errorf("a killed, reaped process: %q", w)
	}
	if w := HolderGone(legacy); !strings.Contains(w, "no longer runs") {
		t.Errorf("a killed, reaped process, named by its old lock file: %q", w)
	}
}
