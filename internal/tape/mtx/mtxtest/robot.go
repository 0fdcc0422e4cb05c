// Package mtxtest emulates a tape library for tests: a changer that
// answers mtx's command lines (package mtx's Runner) as mtx does — the
// inventory printed in mtx's format, load, unload and transfer applied —
// and refuses what a real changer refuses, and its drives, which open the
// cartridges they hold as sttape emulations (sttape.Emulation).
package mtxtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/tape/mtx"
	"github.com/kura-backup/kura/internal/tape/sttape"
)

// Robot is an emulated changer and its drives. Its methods are safe for
// concurrent use.
type Robot struct {
	mu     sync.Mutex
	st     mtx.Status
	drives []string                 // st device path of each drive
	media  map[string]*sttape.Media // cartridges by barcode
	fail   map[string]error         // the next failure of a verb
	moves  int
}

// New is a changer at device with one drive per path in drives, slots
// storage slots and mail import/export slots (numbered after the storage
// slots, as most libraries do), all empty.
func New(device string, drives []string, slots, mail int) *Robot {
	r := &Robot{st: mtx.Status{Device: device}, drives: slices.Clone(drives), media: map[string]*sttape.Media{}, fail: map[string]error{}}
	for i := range drives {
		r.st.Drives = append(r.st.Drives, mtx.Drive{Number: i})
	}
	for i := range slots + mail {
		r.st.Slots = append(r.st.Slots, mtx.Slot{Number: i + 1, ImportExport: i >= slots})
	}
	return r
}

// Insert puts a cartridge with barcode (no barcode label: "") into an
// empty slot, as an operator does through the door.
func (r *Robot) Insert(slot int, barcode string, m *sttape.Media) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sl := &r.st.Slots[slot-1]
	if sl.Full {
		panic(fmt.Sprintf("mtxtest: slot %d is full", slot))
	}
	sl.Full, sl.VolumeTag = true, barcode
	if barcode != "" {
		r.media[barcode] = m
	}
}

// Remove takes the cartridge out of a slot (an operator emptying a mail
// slot) and returns its barcode.
func (r *Robot) Remove(slot int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sl := &r.st.Slots[slot-1]
	bc := sl.VolumeTag
	sl.Full, sl.VolumeTag = false, ""
	return bc
}

// Media returns the cartridge with barcode.
func (r *Robot) Media(barcode string) *sttape.Media {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.media[barcode]
}

// Status is the inventory now.
func (r *Robot) Status() mtx.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.st
	s.Drives, s.Slots = slices.Clone(s.Drives), slices.Clone(s.Slots)
	return s
}

// Moves counts the moves done (load, unload, transfer).
func (r *Robot) Moves() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.moves
}

// FailNext makes the next command verb ("load", "unload", "transfer",
// "status") fail as mtx does when the changer reports an error: exit
// status 1 and the sense data on stderr, nothing moved.
func (r *Robot) FailNext(verb string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[verb] = errors.New("mtx: Request Sense: Sense Key=Hardware Error, ASC=0x15 (MECHANICAL POSITIONING ERROR)")
}

// exitErr is how mtx.Exec reports mtx failing.
func exitErr(args []string, msg string) error {
	return fmt.Errorf("mtx %v: exit status 1: %s", args, msg)
}

// Run is an mtx.Runner: "-f DEVICE status|load S D|unload S D|transfer S S".
func (r *Robot) Run(ctx context.Context, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(args) < 3 || args[0] != "-f" {
		return nil, exitErr(args, "Usage: mtx [ -f <loader-dev> ] ...")
	}
	if args[1] != r.st.Device {
		return nil, exitErr(args, "cannot open SCSI device '"+args[1]+"' - No such file or directory")
	}
	verb, nums := args[2], args[3:]
	if err := r.fail[verb]; err != nil {
		delete(r.fail, verb)
		return nil, exitErr(args, err.Error())
	}
	var n []int
	for _, a := range nums {
		v, err := strconv.Atoi(a)
		if err != nil {
			return nil, exitErr(args, "bad argument "+a)
		}
		n = append(n, v)
	}
	want := map[string]int{"status": 0, "load": 2, "unload": 2, "transfer": 2}
	w, ok := want[verb]
	if !ok || len(n) != w {
		return nil, exitErr(args, "Usage: mtx [ -f <loader-dev> ] [nobarcode] [invert] [noattach] <command> [ <command> ]*")
	}
	slot := func(s int) (*mtx.Slot, error) {
		if s < 1 || s > len(r.st.Slots) {
			return nil, exitErr(args, fmt.Sprintf("Invalid argument '%d' to '%s' command", s, verb))
		}
		return &r.st.Slots[s-1], nil
	}
	drive := func(d int) (*mtx.Drive, error) {
		if d < 0 || d >= len(r.st.Drives) {
			return nil, exitErr(args, fmt.Sprintf("Invalid argument '%d' to '%s' command", d, verb))
		}
		return &r.st.Drives[d], nil
	}
	switch verb {
	case "status":
		return []byte(r.st.String()), nil
	case "load":
		s, err := slot(n[0])
		if err != nil {
			return nil, err
		}
		d, err := drive(n[1])
		if err != nil {
			return nil, err
		}
		switch {
		case !s.Full:
			return nil, exitErr(args, fmt.Sprintf("source Element Address %d is Empty", n[0]))
		case d.Full:
			return nil, exitErr(args, fmt.Sprintf("Drive %d Full (Storage Element %d loaded)", n[1], d.Source))
		}
		*d = mtx.Drive{Number: d.Number, Full: true, Source: n[0], VolumeTag: s.VolumeTag}
		s.Full, s.VolumeTag = false, ""
	case "unload":
		s, err := slot(n[0])
		if err != nil {
			return nil, err
		}
		d, err := drive(n[1])
		if err != nil {
			return nil, err
		}
		switch {
		case !d.Full:
			return nil, exitErr(args, fmt.Sprintf("Data Transfer Element %d is Empty", n[1]))
		case s.Full:
			return nil, exitErr(args, fmt.Sprintf("Storage Element %d is Already Full", n[0]))
		}
		if m := r.media[d.VolumeTag]; m != nil && !m.Ejected() {
			// The drive still holds the cartridge: the robot cannot pull it.
			return nil, exitErr(args, "MOVE MEDIUM from Element Address 500 to 1 Failed: Request Sense: Sense Key=Illegal Request, ASC=0x53 ASCQ=0x02 (MEDIUM REMOVAL PREVENTED)")
		}
		s.Full, s.VolumeTag = true, d.VolumeTag
		*d = mtx.Drive{Number: d.Number}
	case "transfer":
		from, err := slot(n[0])
		if err != nil {
			return nil, err
		}
		to, err := slot(n[1])
		if err != nil {
			return nil, err
		}
		switch {
		case !from.Full:
			return nil, exitErr(args, fmt.Sprintf("source Element Address %d is Empty", n[0]))
		case to.Full:
			return nil, exitErr(args, fmt.Sprintf("destination Element Address %d is Already Full", n[1]))
		}
		to.Full, to.VolumeTag = true, from.VolumeTag
		from.Full, from.VolumeTag = false, ""
	}
	r.moves++
	return nil, nil
}

// OpenDrive is sttape.OpenDrive for the robot's drives: a drive path it
// does not have fails as a missing device node does; an empty drive opens
// (as O_NONBLOCK lets the st driver do) and reports no tape; a drive with
// a cartridge opens it as an sttape.Emulation (EROFS for writing a
// write-protected one).
func (r *Robot) OpenDrive(path string, write bool) (sttape.Drive, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.drives, path)
	if i < 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
	}
	d := r.st.Drives[i]
	if !d.Full || r.media[d.VolumeTag] == nil {
		return noTape{}, nil
	}
	return r.media[d.VolumeTag].Load(write)
}

// noTape is a drive without a cartridge: every operation fails with EIO
// (the st driver's "no medium"), Status is offline.
type noTape struct{}

func (noTape) Read([]byte) (int, error)       { return 0, unix.EIO }
func (noTape) Write([]byte) (int, error)      { return 0, unix.EIO }
func (noTape) Op(int16, int32) error          { return unix.EIO }
func (noTape) Status() (sttape.Status, error) { return sttape.Status{FileNo: -1, BlockNo: -1}, nil }
func (noTape) Tell() (int64, error)           { return 0, unix.EIO }
func (noTape) Close() error                   { return nil }
