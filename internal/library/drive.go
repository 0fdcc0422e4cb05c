package library

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/kura-backup/kura/internal/tape"
)

// Polling bounds while waiting for a busy drive. flock cannot be waited on
// with a deadline, so Acquire retries with a growing delay.
const (
	acquireFirstDelay = 5 * time.Millisecond
	acquireMaxDelay   = 200 * time.Millisecond
)

func newDriveLock(path string) *flock.Flock { return flock.New(path) }

// vtlDrive is an acquired drive of a library: its holder, in this process,
// is the only user of the drive across all processes until Release.
type vtlDrive struct {
	lib  *Library
	n    int
	lock *flock.Flock

	mu       sync.Mutex
	cur      tape.Device
	released bool
}

// Acquire takes drive n (1-based), or with n = 0 the first free drive,
// exclusively across processes (a flock on DIR/drives/N.lock). While the
// drive (or every drive) is busy it waits, until ctx ends; the error then
// wraps ErrDriveBusy and the context's cause.
func (l *Library) Acquire(ctx context.Context, n int) (Drive, error) {
	i, lk, err := acquireDrive(ctx, l.cfg.Name, l.cfg.Drives, n, l.driveLockPath)
	if err != nil {
		return nil, err
	}
	return &vtlDrive{lib: l, n: i, lock: lk}, nil
}

// acquireDrive takes the lock of drive n of a library of drives drives (0:
// the first free one), lockPath naming each drive's lock file, waiting
// while it is busy until ctx ends; every kind of library leases its drives
// this way.
func acquireDrive(ctx context.Context, lib string, drives, n int, lockPath func(int) string) (int, *flock.Flock, error) {
	var want []int
	if n == 0 {
		for i := 1; i <= drives; i++ {
			want = append(want, i)
		}
	} else {
		if n < 1 || n > drives {
			return 0, nil, NoDrive(lib, n, drives)
		}
		want = []int{n}
	}
	delay := acquireFirstDelay
	var timer *time.Timer
	for {
		for _, i := range want {
			lk := newDriveLock(lockPath(i))
			ok, err := lk.TryLock()
			if err != nil {
				return 0, nil, fmt.Errorf("library %s: locking drive %d: %w", lib, i, err)
			}
			if ok {
				return i, lk, nil
			}
		}
		if timer == nil {
			timer = time.NewTimer(delay)
			defer timer.Stop()
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
			what := "a free drive"
			if n != 0 {
				what = fmt.Sprintf("drive %d", n)
			}
			return 0, nil, fmt.Errorf("library %s: gave up waiting for %s: %w: %w", lib, what, ErrDriveBusy, context.Cause(ctx))
		case <-timer.C:
		}
		delay = min(2*delay, acquireMaxDelay)
	}
}

// Number is the drive's number, 1-based.
func (d *vtlDrive) Number() int { return d.n }

// closeCur closes the tape the drive has open. Called with d.mu held.
func (d *vtlDrive) closeCur() error {
	t := d.cur
	d.cur = nil
	return closeDevice(t)
}

func (d *vtlDrive) check() error {
	if d.released {
		return fmt.Errorf("drive %d of library %s: %w", d.n, d.lib.cfg.Name, ErrReleased)
	}
	return nil
}

// put moves bc into this drive in inv, sending whatever the drive held back
// to its home slot. Called under the library lock.
func (d *vtlDrive) put(inv *inventory, bc string) {
	for _, e := range inv.Tapes {
		if e.Drive == d.n {
			e.Drive = 0
		}
	}
	inv.Tapes[bc].Drive = d.n
}

// open opens bc with the drive's settings.
func (d *vtlDrive) open(bc string, set driveEntry) (tape.Device, error) {
	t, err := d.lib.media.Open(bc, tape.Label{}, d.lib.driveOptions(set))
	if err != nil {
		return nil, fmt.Errorf("drive %d of library %s: opening tape %s: %w", d.n, d.lib.cfg.Name, bc, err)
	}
	d.cur = t
	return t, nil
}

// Load moves the tape from its slot into this drive (unloading the tape the
// drive held, back to that tape's home slot) and opens it with the drive's
// block size and buffer size. A tape in another drive is taken from it if
// nobody has acquired that drive; otherwise Load fails with ErrDriveBusy.
// An exported tape fails with ErrExported.
func (d *vtlDrive) Load(barcode string) (tape.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return nil, err
	}
	if err := d.closeCur(); err != nil {
		return nil, err
	}
	var set driveEntry
	err := d.lib.update(func(inv *inventory) error {
		e, err := d.lib.entry(inv, barcode)
		if err != nil {
			return err
		}
		if e.MailSlot > 0 {
			return fmt.Errorf("cannot load into drive %d: %w", d.n, exportedErr(barcode))
		}
		if e.Drive != d.n {
			if err := d.lib.takeFromDrive(barcode, e); err != nil {
				return fmt.Errorf("loading into drive %d: %w", d.n, err)
			}
		}
		d.put(inv, barcode)
		set = inv.Drives[d.n-1]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d.open(barcode, set)
}

// LoadWritable loads a tape to write on and returns it with its barcode.
// Tapes named in exclude, marked full, at or past early warning, exported,
// in another drive or unreadable are never picked. Preference order:
//
//  1. the tape already in this drive, if appendable (holds tape files);
//  2. an appendable tape from the slots, fullest first (then by barcode);
//  3. the tape already in this drive, if blank;
//  4. a blank tape from the slots, by barcode.
//
// With none, it fails with a *NoTapeError: "no writable tape in library
// NAME" (the CLI says how to add tapes).
func (d *vtlDrive) LoadWritable(exclude ...string) (tape.Device, string, error) {
	return d.LoadWritableIf(nil, exclude...)
}

// TapeFilter says whether a writable tape may be taken (tape pools): blank
// reports whether the tape holds no tape files.
type TapeFilter func(barcode string, blank bool) bool

// LoadWritableIf is LoadWritable among the tapes allow accepts (nil: all).
func (d *vtlDrive) LoadWritableIf(allow TapeFilter, exclude ...string) (tape.Device, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return nil, "", err
	}
	if err := d.closeCur(); err != nil {
		return nil, "", err
	}
	var (
		set    driveEntry
		chosen string
	)
	// The choice and the move happen under one library lock, so two
	// drives never pick the same tape.
	err := d.lib.update(func(inv *inventory) error {
		type cand struct {
			bc      string
			here    bool
			blank   bool
			used    int64
			ranking int
		}
		var cands []cand
		for bc, e := range inv.Tapes {
			if slices.Contains(exclude, bc) || e.Full || e.MailSlot > 0 || (e.Drive != 0 && e.Drive != d.n) {
				continue
			}
			ts := d.lib.inspect(bc, e)
			if ts.State != StateBlank && ts.State != StateAppendable {
				continue
			}
			c := cand{bc: bc, here: e.Drive == d.n, blank: ts.State == StateBlank, used: ts.Used}
			if allow != nil && !allow(bc, c.blank) {
				continue
			}
			switch {
			case c.here && !c.blank:
				c.ranking = 1
			case !c.blank:
				c.ranking = 2
			case c.here:
				c.ranking = 3
			default:
				c.ranking = 4
			}
			cands = append(cands, c)
		}
		if len(cands) == 0 {
			return &NoTapeError{Library: d.lib.cfg.Name, Pool: allow != nil}
		}
		best := slices.MinFunc(cands, func(a, b cand) int {
			return cmp.Or(cmp.Compare(a.ranking, b.ranking), cmp.Compare(b.used, a.used), cmp.Compare(a.bc, b.bc))
		})
		chosen = best.bc
		d.put(inv, chosen)
		set = inv.Drives[d.n-1]
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	t, err := d.open(chosen, set)
	if err != nil {
		return nil, "", err
	}
	return t, chosen, nil
}

// Unload closes the loaded tape and puts it back into its home slot. An
// empty drive is not an error.
func (d *vtlDrive) Unload() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return err
	}
	closeErr := d.closeCur()
	err := d.lib.update(func(inv *inventory) error {
		for _, e := range inv.Tapes {
			if e.Drive == d.n {
				e.Drive = 0
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return closeErr
}

// Release closes the loaded tape (which stays in the drive, as in a real
// library) and frees the drive for other holders. Calls after Release fail
// with ErrReleased.
func (d *vtlDrive) Release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return err
	}
	d.released = true
	closeErr := d.closeCur()
	if err := d.lock.Close(); err != nil {
		return fmt.Errorf("drive %d of library %s: releasing: %w", d.n, d.lib.cfg.Name, err)
	}
	return closeErr
}
