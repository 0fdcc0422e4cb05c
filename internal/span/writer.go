// Package span carries a saveset's data across tapes.
//
// A Writer puts whole frames into tape files, one tape file ("part") per
// tape. Before each frame it asks the tape file how many bytes still fit
// before the tape's early-warning point; when the frame does not fit it
// finishes the part (filemark) and continues on the next tape. A frame is
// never cut between two tapes.
//
// A part starts with header(part) — the saveset's self-describing label —
// followed by frames:
//
//	tape KUR001, file 3:  [header(0)] [frame 0] [frame 1] … [frame k]  filemark
//	tape KUR002, file 1:  [header(1)] [frame k+1] …                     filemark
//
// A Reader gives the bytes from a Location on and follows into the later
// parts, skipping each later part's header (Part.Header bytes), so it
// returns the frames back to back; it returns a header only when asked to
// start inside one (for example at offset 0 of part 0).
//
// Invariants:
//   - Part i holds frames in order; a frame's Location is (i, offset of its
//     first byte in the tape file).
//   - A part is listed in the result of Finish only once its tape file is
//     complete (durable filemark); the parts finished before a failure or an
//     Abort stay intact on their tapes.
//   - A tape is left for the next one only between frames. A frame larger
//     than an empty tape's room before early warning is written past early
//     warning, up to capacity (the tape fails with tape.ErrEndOfMedia
//     beyond); on a tape that already holds data, such a frame moves to the
//     next tape.
//   - The first error sticks: every later call returns it.
package span

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNoNextTape: the writer needed another tape and got none.
	ErrNoNextTape = errors.New("no next tape for a spanning saveset")
	// ErrPartMismatch: a part's tape file does not hold what the parts
	// list says.
	ErrPartMismatch = errors.New("tape file does not match the saveset's part")
	// ErrBadLocation: a location outside the parts.
	ErrBadLocation = errors.New("location outside the saveset's data")
)

// Part is one tape file of a saveset's data.
type Part struct {
	Barcode string `json:"barcode"`
	File    int    `json:"file"`  // tape file number on the tape, 1-based
	Bytes   int64  `json:"bytes"` // bytes in the tape file, header included
	// Header is the number of header bytes at the start of the tape file.
	// A Reader following on from the previous part skips them, so the data
	// it returns is the frames without the repeated headers.
	Header int64 `json:"header,omitempty"`
}

// Next gives the next writable tape. exclude lists every tape this writer
// has already written on or passed over; the one it just left is last.
// full says why it was left: it is full (early warning, or no room for the
// next frame), or, false, another writer holds it (tape.ErrBusy at
// Append: a writer of another process, or one that died and whose lock
// has not run out) and it is only passed over. The engine wires
// Drive.LoadWritable and Library.MarkFull into it.
type Next func(exclude []string, full bool) (dev tape.Device, barcode string, err error)

// Writer is a stream.FrameSink that writes frames into tape files, moving to
// the next tape when a frame would not fit before the tape's early-warning
// point. It ends in exactly one of Finish or Abort. Not safe for concurrent
// use.
type Writer struct {
	dev     tape.Device
	barcode string
	next    Next
	header  func(part int) []byte
	tag     string

	fw        tape.FileWriter // current part's tape file; nil between parts
	hdrLen    int64           // header bytes of the current part
	frames    int             // frames in the current part
	parts     []Part          // finished parts
	visited   []string        // tapes written on or passed over
	finished  int64           // bytes of the finished parts
	err       error           // sticky
	closed    bool
	partCount int // parts started, for header numbering
}

var _ stream.FrameSink = (*Writer)(nil)

// errWriterClosed marks calls after Finish or Abort.
var errWriterClosed = fmt.Errorf("span writer: %w", tape.ErrClosed)

// NewWriter starts writing on first (barcode names it). header(part) is
// written at the start of each part (part is 0-based; it may return nil);
// tag is attached to every tape file, followed by " part N" (1-based).
func NewWriter(first tape.Device, barcode string, next Next, header func(part int) []byte, tag string) *Writer {
	if header == nil {
		header = func(int) []byte { return nil }
	}
	return &Writer{dev: first, barcode: barcode, next: next, header: header, tag: tag}
}

// Bytes is the number of media bytes written so far, over all parts,
// headers included.
func (w *Writer) Bytes() int64 {
	if w.fw != nil {
		return w.finished + w.fw.Written()
	}
	return w.finished
}

// WriteFrame writes one whole frame and returns where it starts.
func (w *Writer) WriteFrame(frame []byte) (stream.Location, error) {
	if w.closed {
		return stream.Location{}, errWriterClosed
	}
	if w.err != nil {
		return stream.Location{}, w.err
	}
	loc, err := w.writeFrame(frame)
	if err != nil {
		w.err = err
	}
	return loc, err
}

func (w *Writer) writeFrame(frame []byte) (stream.Location, error) {
	n := int64(len(frame))
	if w.fw != nil && w.frames > 0 && !fits(w.fw, n) {
		// The frame does not fit before early warning (or, on a drive that
		// only signals it, early warning was reached): close this part and
		// move on.
		if err := w.finishPart(); err != nil {
			return stream.Location{}, err
		}
		if err := w.nextTape(true); err != nil {
			return stream.Location{}, err
		}
	}
	for w.fw == nil {
		if w.dev == nil {
			if err := w.nextTape(true); err != nil {
				return stream.Location{}, err
			}
		}
		ok, err := w.startPart(n)
		if errors.Is(err, tape.ErrBusy) {
			// Another writer holds this tape: pass it over, not full.
			if err := w.nextTape(false); err != nil {
				return stream.Location{}, err
			}
			continue
		}
		if err != nil {
			return stream.Location{}, err
		}
		if !ok {
			// This tape already holds data and has no room for the
			// frame: try the next one.
			if err := w.nextTape(true); err != nil {
				return stream.Location{}, err
			}
		}
	}
	loc := stream.Location{Part: len(w.parts), Offset: w.fw.Written()}
	if _, err := w.fw.Write(frame); err != nil {
		return stream.Location{}, fmt.Errorf("span: writing frame of %d bytes to tape %s (part %d): %w", n, w.barcode, len(w.parts)+1, err)
	}
	w.frames++
	return loc, nil
}

// fits reports whether n more bytes can go to fw before early warning: by
// its exact count when the device knows it (tape.Remainer), else as long as
// the drive has not signalled early warning (the margin between early
// warning and the end of the tape holds the frame that crosses it).
func fits(fw tape.FileWriter, n int64) bool {
	if r, ok := fw.(tape.Remainer); ok {
		return n <= r.Remaining()
	}
	return !fw.EarlyWarning()
}

// startPart appends a tape file to the current tape and writes the header.
// With frameLen >= 0 it first checks that the header and a frame of that
// size fit before early warning; if they do not and the tape already holds
// data, it starts nothing and returns false.
func (w *Writer) startPart(frameLen int64) (bool, error) {
	hdr := w.header(w.partCount)
	lab := w.dev.Label()
	usedBefore := w.dev.Used()
	if frameLen >= 0 && usedBefore > 0 && lab.EarlyWarning-usedBefore < int64(len(hdr))+frameLen {
		w.dev = nil
		return false, nil
	}
	w.visit(w.barcode)
	fw, err := w.dev.Append(fmt.Sprintf("%s part %d", w.tag, w.partCount+1))
	if err != nil {
		return false, fmt.Errorf("span: starting part %d on tape %s: %w", w.partCount+1, w.barcode, err)
	}
	// The tape's own figures, once it has truncated any incomplete tape
	// file, are the exact ones: check again.
	if frameLen >= 0 && w.dev.Used() > 0 && !fits(fw, int64(len(hdr))+frameLen) {
		if err := fw.Abort(); err != nil {
			return false, fmt.Errorf("span: leaving tape %s: %w", w.barcode, err)
		}
		w.dev = nil
		return false, nil
	}
	if _, err := fw.Write(hdr); err != nil {
		fw.Abort()
		return false, fmt.Errorf("span: writing header of part %d on tape %s: %w", w.partCount+1, w.barcode, err)
	}
	w.fw, w.hdrLen, w.frames = fw, int64(len(hdr)), 0
	w.partCount++
	return true, nil
}

func (w *Writer) visit(bc string) {
	if !slices.Contains(w.visited, bc) {
		w.visited = append(w.visited, bc)
	} else {
		// keep the tape just left last
		i := slices.Index(w.visited, bc)
		w.visited = append(slices.Delete(w.visited, i, i+1), bc)
	}
}

// finishPart writes the filemark of the current part and records it.
func (w *Writer) finishPart() error {
	fw := w.fw
	w.fw = nil
	info, err := fw.Finish()
	if err != nil {
		return fmt.Errorf("span: finishing part %d on tape %s: %w", len(w.parts)+1, w.barcode, err)
	}
	w.parts = append(w.parts, Part{Barcode: w.barcode, File: info.Number, Bytes: info.Bytes, Header: w.hdrLen})
	w.finished += info.Bytes
	w.dev = nil
	return nil
}

// nextTape asks for the next tape, excluding every tape used so far.
func (w *Writer) nextTape(full bool) error {
	if w.barcode != "" {
		w.visit(w.barcode)
	}
	w.dev = nil
	why := fmt.Sprintf("tape %s is full after %d part(s)", w.barcode, len(w.parts))
	if !full {
		why = fmt.Sprintf("tape %s is in use by another writer", w.barcode)
	}
	if w.next == nil {
		return fmt.Errorf("span: %s: %w", why, ErrNoNextTape)
	}
	dev, bc, err := w.next(slices.Clone(w.visited), full)
	if err != nil {
		return fmt.Errorf("span: %s: %w: %w", why, ErrNoNextTape, err)
	}
	if dev == nil {
		return fmt.Errorf("span: %s: %w", why, ErrNoNextTape)
	}
	if slices.Contains(w.visited, bc) {
		return fmt.Errorf("span: next tape %s was already used by this saveset: %w", bc, ErrNoNextTape)
	}
	w.dev, w.barcode = dev, bc
	return nil
}

// Finish finishes the last tape file and returns every part in order. A
// writer that got no frame still writes one part holding the header.
func (w *Writer) Finish() ([]Part, error) {
	if w.closed {
		return nil, errWriterClosed
	}
	w.closed = true
	if w.err != nil {
		w.abortPart()
		return nil, w.err
	}
	if w.fw == nil && len(w.parts) == 0 {
		for w.fw == nil {
			if w.dev == nil {
				if err := w.nextTape(true); err != nil {
					w.err = err
					return nil, err
				}
			}
			_, err := w.startPart(-1)
			if errors.Is(err, tape.ErrBusy) {
				if err := w.nextTape(false); err != nil {
					w.err = err
					return nil, err
				}
				continue
			}
			if err != nil {
				w.err = err
				return nil, err
			}
		}
	}
	if w.fw != nil {
		if err := w.finishPart(); err != nil {
			w.err = err
			return nil, err
		}
	}
	return slices.Clone(w.parts), nil
}

func (w *Writer) abortPart() error {
	if w.fw == nil {
		return nil
	}
	fw := w.fw
	w.fw = nil
	return fw.Abort()
}

// Abort stops writing. The current tape file stays incomplete (the tape
// truncates it at its next append); parts finished on earlier tapes stay
// intact.
func (w *Writer) Abort() error {
	if w.closed {
		return errWriterClosed
	}
	w.closed = true
	if err := w.abortPart(); err != nil {
		return fmt.Errorf("span: aborting part on tape %s: %w", w.barcode, err)
	}
	return nil
}
