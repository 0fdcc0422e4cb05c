package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

// tapeWriter puts one saveset's tape files on the tapes of a drive, as a
// backup and a copy both do: the data through a span writer (a label frame
// at the head of every part; at a tape's early-warning point the tape is
// marked full and the next writable tape of the pool is loaded), then the
// index tape file after the data.
type tapeWriter struct {
	e       *Env
	job     *catalog.Job
	lib     library.Changer
	drv     library.Drive
	allow   library.TapeFilter
	pool    string
	cur     tape.Device
	barcode string
	tapes   []string // every tape written, in order
	sw      *span.Writer
	// noteTape, if set, is told every tape loaded after the first (the
	// progress ticker's setTape).
	noteTape func(barcode string)
}

// newTapeWriter loads the first writable tape of pool into drv and opens the
// span writer; label is the saveset's label (Part and PrevBarcode are set
// per part), tag names the data tape files. With label nil the parts start
// with no header: the data of an encrypted saveset is one age file over its
// parts, its label inside the encryption.
func (e *Env) newTapeWriter(job *catalog.Job, lib library.Changer, drv library.Drive, pool string, label *stream.Label, tag string) (*tapeWriter, error) {
	allow, err := e.poolFilter(pool)
	if err != nil {
		return nil, err
	}
	first, barcode, err := drv.LoadWritableIf(allow)
	if err != nil {
		return nil, err
	}
	if err := e.claimTape(lib, barcode, pool); err != nil {
		return nil, err
	}
	w := &tapeWriter{e: e, job: job, lib: lib, drv: drv, allow: allow, pool: pool, cur: first, barcode: barcode, tapes: []string{barcode}}
	e.logf(job, "library %s, drive %d: tape %s (block %s)", lib.Config().Name, drv.Number(), barcode,
		units.FormatKiB(int64(first.Label().BlockSize)))
	prev := ""
	header := func(part int) []byte {
		if label == nil {
			return nil
		}
		l := *label
		l.Part, l.PrevBarcode = part, prev
		prev = w.barcode
		return stream.LabelFrame(l)
	}
	w.sw = span.NewWriter(first, barcode, w.next, header, tag)
	return w, nil
}

// next is the span writer's way to the next tape: the current one is full,
// or another writer holds it and nothing of this saveset is on it.
func (w *tapeWriter) next(exclude []string, full bool) (tape.Device, string, error) {
	if full {
		return w.move(exclude, leftFull)
	}
	return w.move(exclude, leftBusy)
}

// left says why a tapeWriter leaves its tape.
type left int

const (
	// leftFull: at the early-warning point, or no room; marked full.
	leftFull left = iota
	// leftBusy: another writer holds it and nothing of this saveset is on
	// it: passed over, not one of the job's tapes.
	leftBusy
	// leftBusyKept: another writer took it after this saveset's data
	// went on it: passed over for the index, still one of the job's tapes.
	leftBusyKept
)

// move leaves the current tape for the next writable one (none in exclude
// nor among the job's tapes) and loads it.
func (w *tapeWriter) move(exclude []string, why left) (tape.Device, string, error) {
	if why == leftFull {
		if err := w.lib.MarkFull(w.barcode); err != nil {
			return nil, "", err
		}
	}
	t, bc, err := w.drv.LoadWritableIf(w.allow, append(exclude, w.tapes...)...)
	if err != nil {
		return nil, "", err
	}
	if err := w.e.claimTape(w.lib, bc, w.pool); err != nil {
		return nil, "", err
	}
	switch why {
	case leftFull:
		w.e.logf(w.job, "tape %s reached its early-warning point: continuing on tape %s", w.barcode, bc)
	case leftBusy:
		w.e.logf(w.job, "tape %s is in use by another writer: writing on tape %s", w.barcode, bc)
		// Passed over, nothing written on it: not one of the job's tapes.
		w.tapes = slices.DeleteFunc(w.tapes, func(b string) bool { return b == w.barcode })
	case leftBusyKept:
		w.e.logf(w.job, "tape %s is in use by another writer: the index goes on tape %s", w.barcode, bc)
	}
	w.cur, w.barcode = t, bc
	w.tapes = append(w.tapes, bc)
	if w.noteTape != nil {
		w.noteTape(bc)
	}
	return t, bc, nil
}

// appendIndex writes size bytes of idx (from its start) as the index tape
// file, on the tape in the drive or the next one if it does not fit
// before early warning, and logs where the data and the index went.
func (w *tapeWriter) appendIndex(idx *os.File, size int64, tag string, parts []catalog.Part) (catalog.Part, error) {
	dev := w.cur
	if l := dev.Label(); l.EarlyWarning-dev.Used() < size {
		var err error
		if dev, _, err = w.next(nil, true); err != nil {
			return catalog.Part{}, err
		}
	}
	// Another writer may have taken the tape since the data's tape file
	// ended (its lock is held only while a file is written): pass it over
	// as the data would be, keeping a tape that holds data of this saveset
	// among the job's tapes.
	var passed []string
	fw, err := dev.Append(tag)
	for errors.Is(err, tape.ErrBusy) {
		why := leftBusy
		if slices.ContainsFunc(parts, func(p catalog.Part) bool { return p.Barcode == w.barcode }) {
			why = leftBusyKept
		}
		passed = append(passed, w.barcode)
		if dev, _, err = w.move(passed, why); err != nil {
			return catalog.Part{}, err
		}
		fw, err = dev.Append(tag)
	}
	if err != nil {
		return catalog.Part{}, err
	}
	if _, err := idx.Seek(0, io.SeekStart); err != nil {
		fw.Abort()
		return catalog.Part{}, err
	}
	if _, err := io.Copy(fw, idx); err != nil {
		fw.Abort()
		return catalog.Part{}, fmt.Errorf("writing the %s: %w", tag, err)
	}
	info, err := fw.Finish()
	if err != nil {
		return catalog.Part{}, fmt.Errorf("writing the %s: %w", tag, err)
	}
	for _, p := range parts {
		w.e.logf(w.job, "data: tape %s, tape file %d, %s", p.Barcode, p.File, units.FormatSize(p.Bytes))
	}
	return catalog.Part{Barcode: w.barcode, File: info.Number, Bytes: info.Bytes}, nil
}

// wroteElsewhere takes note of the tapes a span writer on the library's own
// machine wrote (a storage node's: Produced.Tapes, in order, the first the
// one this writer loaded): each is claimed for the pool, and the drive's
// device is the last one's again, for the index tape file.
func (w *tapeWriter) wroteElsewhere(tapes []string) error {
	if len(tapes) == 0 || tapes[0] != w.barcode && !slices.Contains(w.tapes, tapes[0]) {
		return fmt.Errorf("the storage node wrote on tapes %v, not starting with tape %s in drive %d", tapes, w.barcode, w.drv.Number())
	}
	for _, bc := range tapes[1:] {
		if err := w.e.claimTape(w.lib, bc, w.pool); err != nil {
			return err
		}
	}
	w.tapes = slices.Clone(tapes)
	if last := tapes[len(tapes)-1]; last != w.barcode {
		w.e.logf(w.job, "the storage node continued on tape %s", last)
		dev, err := w.drv.Load(last)
		if err != nil {
			return err
		}
		w.cur, w.barcode = dev, last
		if w.noteTape != nil {
			w.noteTape(last)
		}
	}
	return nil
}
