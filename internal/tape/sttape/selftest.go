package sttape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/kura-backup/kura/internal/tape"
)

// Errors of SelfTest.
var (
	// ErrNoTape: the drive has no tape loaded.
	ErrNoTape = errors.New("no tape in the drive")
	// ErrMismatch: the tape file written by the write check read back
	// different.
	ErrMismatch = errors.New("the tape file read back differs from what was written")
	// ErrNotScratch: the write check was asked for on a tape that holds
	// data or is write-protected.
	ErrNotScratch = errors.New("the write check needs a blank, writable tape")
)

// SelfTestOptions say what SelfTest does. Without Write it only reads.
type SelfTestOptions struct {
	// Write writes one tape file on a blank tape, reads it back and
	// compares it, then blanks the tape again (a filemark at its
	// beginning). A tape that is not blank is refused.
	Write bool
	// Bytes is how much the write check writes; 0 means 64 MiB.
	Bytes int64
	// BlockSize is the block size it writes; 0 means 256 KiB.
	BlockSize int
	// Clock times the rates; nil means time.Now.
	Clock func() time.Time
}

// SelfTestReport is what SelfTest found.
type SelfTestReport struct {
	Status         Status
	Online         bool
	WriteProtected bool
	BlockSize      int // the driver's block size setting (0: variable)
	Blank          bool
	Label          *tape.Label     // a Kura label, if the tape has one
	LabelProblem   string          // a damaged or foreign label
	Files          []tape.FileInfo // the Kura tape files on it
	FilesProblem   string

	// The write check.
	Wrote         int64
	WriteBlock    int
	WriteSeconds  float64
	ReadSeconds   float64
	Match         bool
	WriteRate     float64 // bytes per second
	ReadRate      float64
	LeftBlank     bool // the tape was blanked again after the check
	WriteProblems string
}

// SelfTest checks a drive without changing anything on its tape unless
// opts.Write: its status, the block size setting, write protection, the
// Kura label and tape files if there are any. The drive is not closed.
// The report is filled as far as the check got; the error says why it
// stopped (ErrNoTape, ErrNotScratch, ErrMismatch, or the drive's).
func SelfTest(d Drive, opts SelfTestOptions) (SelfTestReport, error) {
	var r SelfTestReport
	now := opts.Clock
	if now == nil {
		now = time.Now
	}
	st, err := d.Status()
	if err != nil {
		return r, fmt.Errorf("status (MTIOCGET): %w", err)
	}
	r.Status, r.Online, r.WriteProtected, r.BlockSize = st, st.Online(), st.WriteProtected(), st.BlockSize
	if !r.Online {
		return r, ErrNoTape
	}
	// Leave the driver's block size as it was, and the tape rewound.
	defer func() {
		d.Op(mtSETBLK, int32(st.BlockSize))
		d.Op(mtREW, 1)
	}()
	t := &Device{d: d, opts: Options{keepCompression: true}}
	l, damage, err := t.readLabel()
	switch {
	case errors.Is(err, tape.ErrBlank):
		r.Blank = true
	case err != nil:
		r.LabelProblem = err.Error()
	default:
		r.Label = &l
		if damage != nil {
			r.LabelProblem = damage.Error()
		}
		t.label = l
		err := t.scan()
		if err == nil {
			_, err = t.Files() // a damaged trailer
		}
		if err != nil {
			r.FilesProblem = err.Error()
		}
		r.Files = append(append(r.Files, t.files...), partial(t)...)
	}
	if !opts.Write {
		return r, nil
	}
	if !r.Blank || r.WriteProtected {
		why := "it holds data"
		if r.WriteProtected {
			why = "it is write-protected"
		}
		return r, fmt.Errorf("%w: %s", ErrNotScratch, why)
	}
	size, bs := opts.Bytes, opts.BlockSize
	if size <= 0 {
		size = 64 << 20
	}
	if bs == 0 {
		bs = 256 << 10
	}
	r.WriteBlock = bs
	err = writeCheck(d, &r, size, bs, now)
	// Blank the tape again whatever happened: a filemark at its beginning.
	if berr := blank(d); berr == nil {
		r.LeftBlank = true
	} else if err == nil {
		err = fmt.Errorf("blank the tape after the check: %w", berr)
	}
	if err != nil {
		r.WriteProblems = err.Error()
	}
	return r, err
}

func partial(t *Device) []tape.FileInfo {
	if t.partial == nil {
		return nil
	}
	return []tape.FileInfo{*t.partial}
}

func blank(d Drive) error {
	if err := d.Op(mtREW, 1); err != nil {
		return err
	}
	return d.Op(mtWEOF, 1)
}

// writeCheck labels the blank tape SELFTEST, writes one tape file of size
// pseudo-random bytes, reads it back (every block's CRC checked) and
// compares.
func writeCheck(d Drive, r *SelfTestReport, size int64, bs int, now func() time.Time) error {
	dev, err := Format(d, tape.Label{Barcode: "SELFTEST", Library: "selftest", BlockSize: bs, Capacity: 1 << 62},
		Options{keepCompression: true})
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(uint64(size), uint64(bs)))
	fill := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	w, err := dev.Append("kura tape selftest")
	if err != nil {
		return err
	}
	start := now()
	for left := size; left > 0; {
		b := chunk[:min(int64(len(chunk)), left)]
		fill(b)
		if _, err := w.Write(b); err != nil {
			w.Abort()
			return err
		}
		left -= int64(len(b))
	}
	if _, err := w.Finish(); err != nil {
		return err
	}
	r.Wrote = size
	r.WriteSeconds = now().Sub(start).Seconds()
	fr, err := dev.Open(1)
	if err != nil {
		return err
	}
	defer fr.Close()
	rng = rand.New(rand.NewPCG(uint64(size), uint64(bs)))
	want, got := make([]byte, len(chunk)), make([]byte, len(chunk))
	start = now()
	r.Match = true
	for left := size; left > 0; {
		n := int(min(int64(len(chunk)), left))
		fill(want[:n])
		if _, err := io.ReadFull(fr, got[:n]); err != nil {
			r.Match = false
			if errors.Is(err, tape.ErrCorrupt) || errors.Is(err, tape.ErrTruncated) {
				return fmt.Errorf("%w: %w", ErrMismatch, err)
			}
			return err
		}
		if !bytes.Equal(want[:n], got[:n]) {
			r.Match = false
		}
		left -= int64(n)
	}
	if n, _ := fr.Read(got[:1]); n != 0 {
		r.Match = false
	}
	r.ReadSeconds = now().Sub(start).Seconds()
	if r.WriteSeconds > 0 {
		r.WriteRate = float64(size) / r.WriteSeconds
	}
	if r.ReadSeconds > 0 {
		r.ReadRate = float64(size) / r.ReadSeconds
	}
	if !r.Match {
		return ErrMismatch
	}
	return nil
}
