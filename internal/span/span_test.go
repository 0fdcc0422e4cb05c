package span

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/faultdev"
	"github.com/kura-backup/kura/internal/tape/memtape"
)

const (
	capacity = 16 << 20 // the smallest library tape
	early    = 1 << 20  // early warning: small, so a few frames span
)

// shelf is a set of tapes in memory (package memtape), handed out in order
// by next, the way the engine hands out LoadWritable's tapes. A test may
// wrap a tape in faults (package faultdev) before it is handed out;
// library_test.go runs the same writer on a folder library.
type shelf struct {
	t        *testing.T
	tapes    map[string]tape.Device
	queue    []string
	excludes [][]string // what next was given, call by call
	full     []bool     // and whether the tape left was full
	lent     int        // tapes open gave readers
	returned int        // of those, closed
}

func newShelf(t *testing.T, barcodes ...string) *shelf {
	t.Helper()
	s := &shelf{t: t, tapes: map[string]tape.Device{}, queue: barcodes}
	t.Cleanup(func() {
		if !t.Failed() && s.lent != s.returned {
			t.Errorf("readers opened %d tapes and closed %d: a tape left open holds a drive", s.lent, s.returned)
		}
	})
	for _, bc := range barcodes {
		tp, err := memtape.New(tape.Label{
			Barcode: bc, Library: "test", BlockSize: 4096, Capacity: capacity, EarlyWarning: early,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tp.Close() })
		s.tapes[bc] = tp
	}
	return s
}

// first takes the first tape off the queue.
func (s *shelf) first() (tape.Device, string) {
	bc := s.queue[0]
	s.queue = s.queue[1:]
	return s.tapes[bc], bc
}

func (s *shelf) next(exclude []string, full bool) (tape.Device, string, error) {
	s.excludes = append(s.excludes, exclude)
	s.full = append(s.full, full)
	for len(s.queue) > 0 {
		bc := s.queue[0]
		s.queue = s.queue[1:]
		if !slices.Contains(exclude, bc) {
			return s.tapes[bc], bc, nil
		}
	}
	return nil, "", errors.New("no writable tape in library test")
}

func (s *shelf) open(bc string) (tape.Device, error) {
	tp, ok := s.tapes[bc]
	if !ok {
		return nil, fmt.Errorf("tape %s is exported; import it", bc)
	}
	s.lent++
	return &shelved{Device: tp, s: s}, nil
}

// shelved is a tape on the shelf lent to a reader, which closes it when
// done; the shelf keeps it open and counts what came back.
type shelved struct {
	tape.Device
	s      *shelf
	closed bool
}

func (t *shelved) Close() error {
	if t.closed {
		return tape.ErrClosed
	}
	t.closed = true
	t.s.returned++
	return nil
}

func header(part int) []byte { return fmt.Appendf(nil, "HEADER saveset 7 part %d\n", part) }

// frame is frame i of n bytes, its content telling frames apart.
func frame(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j*7 + j>>9)
	}
	return b
}

// writeFrames writes frames and returns their locations.
func writeFrames(t *testing.T, w *Writer, frames [][]byte) []stream.Location {
	t.Helper()
	var locs []stream.Location
	for i, f := range frames {
		loc, err := w.WriteFrame(f)
		if err != nil {
			t.Fatalf("WriteFrame %d: %v", i, err)
		}
		locs = append(locs, loc)
	}
	return locs
}

func readAll(t *testing.T, r *Reader, loc stream.Location) []byte {
	t.Helper()
	rc, err := r.OpenAt(loc)
	if err != nil {
		t.Fatalf("OpenAt(%+v): %v", loc, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading from %+v: %v", loc, err)
	}
	return b
}

func TestSpanOverThreeTapes(t *testing.T) {
	s := newShelf(t, "T1", "T2", "T3", "T4")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "saveset 7")
	// 200 KiB frames: five fit before the 1 MiB early warning with the
	// header, the sixth does not.
	var frames [][]byte
	for i := range 15 {
		frames = append(frames, frame(i, 200<<10))
	}
	locs := writeFrames(t, w, frames)
	parts, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}

	hdr := int64(len(header(0)))
	wantParts := []Part{
		{Barcode: "T1", File: 1, Bytes: hdr + 5*200<<10, Header: hdr},
		{Barcode: "T2", File: 1, Bytes: hdr + 5*200<<10, Header: hdr},
		{Barcode: "T3", File: 1, Bytes: hdr + 5*200<<10, Header: hdr},
	}
	if !slices.Equal(parts, wantParts) {
		t.Fatalf("parts:\n got %+v\nwant %+v", parts, wantParts)
	}
	if want := [][]string{{"T1"}, {"T1", "T2"}}; !slices.EqualFunc(s.excludes, want, slices.Equal) {
		t.Errorf("next got excludes %v, want %v", s.excludes, want)
	}
	if got := w.Bytes(); got != 3*(hdr+5*200<<10) {
		t.Errorf("Bytes = %d", got)
	}
	for i, loc := range locs {
		want := stream.Location{Part: i / 5, Offset: hdr + int64(i%5)*200<<10}
		if loc != want {
			t.Errorf("frame %d at %+v, want %+v", i, loc, want)
		}
	}
	// Every tape file is complete, tagged, below early warning, and its
	// raw data is header(part) then the frames.
	for p, part := range parts {
		tp := s.tapes[part.Barcode]
		files, err := tp.Files()
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 || files[0].Status != tape.FileComplete || files[0].Tag != fmt.Sprintf("saveset 7 part %d", p+1) {
			t.Errorf("tape %s files: %+v", part.Barcode, files)
		}
		if tp.Used() > early {
			t.Errorf("tape %s used %d, past early warning %d", part.Barcode, tp.Used(), early)
		}
		fr, err := tp.Open(1)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(fr)
		fr.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Concat(append([][]byte{header(p)}, frames[5*p:5*p+5]...)...)
		if !bytes.Equal(raw, want) {
			t.Errorf("tape %s data differs from header + frames", part.Barcode)
		}
	}
	if files, _ := s.tapes["T4"].Files(); len(files) != 0 {
		t.Errorf("unused tape T4 got files: %+v", files)
	}

	// Reading from every frame's location gives that frame and every later
	// one, across the tapes, without the later parts' headers.
	r := NewReader(s.open, parts)
	for i, loc := range locs {
		if got, want := readAll(t, r, loc), slices.Concat(frames[i:]...); !bytes.Equal(got, want) {
			t.Errorf("from frame %d (%+v): %d bytes, want %d", i, loc, len(got), len(want))
		}
	}
	// From the very start: the first header, then the frames.
	if got, want := readAll(t, r, stream.Location{}), slices.Concat(append([][]byte{header(0)}, frames...)...); !bytes.Equal(got, want) {
		t.Errorf("from the start: %d bytes, want %d", len(got), len(want))
	}
	// From inside a frame and from the end of a part.
	mid := stream.Location{Part: 1, Offset: hdr + 1000}
	if got, want := readAll(t, r, mid), slices.Concat(frames[5:]...)[1000:]; !bytes.Equal(got, want) {
		t.Errorf("from %+v: %d bytes, want %d", mid, len(got), len(want))
	}
	end := stream.Location{Part: 0, Offset: parts[0].Bytes}
	if got, want := readAll(t, r, end), slices.Concat(frames[5:]...); !bytes.Equal(got, want) {
		t.Errorf("from the end of part 1: %d bytes, want %d", len(got), len(want))
	}
	if got := readAll(t, r, stream.Location{Part: 2, Offset: parts[2].Bytes}); len(got) != 0 {
		t.Errorf("from the very end: %d bytes", len(got))
	}
	// Small reads across a part boundary.
	rc, err := r.OpenAt(locs[4])
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.LimitReader(struct{ io.Reader }{rc}, 300<<10))
	if err != nil || !bytes.Equal(got, slices.Concat(frames[4:6]...)[:300<<10]) {
		t.Errorf("reading across the boundary: %v", err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Read(make([]byte, 1)); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

func TestWriterStates(t *testing.T) {
	s := newShelf(t, "T1", "T2")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "saveset 8")
	if _, err := w.WriteFrame(frame(0, 100)); err != nil {
		t.Fatal(err)
	}
	parts, err := w.Finish()
	if err != nil || len(parts) != 1 {
		t.Fatalf("Finish: %v, %v", parts, err)
	}
	if _, err := w.WriteFrame(frame(1, 100)); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("WriteFrame after Finish: %v", err)
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("second Finish: %v", err)
	}
	if err := w.Abort(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Abort after Finish: %v", err)
	}

	// No frames at all: one part with the header.
	dev, bc = s.first()
	w = NewWriter(dev, bc, s.next, header, "empty")
	parts, err = w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Part{{Barcode: "T2", File: 1, Bytes: int64(len(header(0))), Header: int64(len(header(0)))}}; !slices.Equal(parts, want) {
		t.Errorf("empty saveset parts %+v, want %+v", parts, want)
	}
	if got := readAll(t, NewReader(s.open, parts), stream.Location{}); !bytes.Equal(got, header(0)) {
		t.Errorf("empty saveset reads %q", got)
	}
}

func TestBigFrames(t *testing.T) {
	s := newShelf(t, "T1", "T2", "T3")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "big")
	small, big := frame(0, 1000), frame(1, 3<<20) // big is past early warning
	writeFrames(t, w, [][]byte{small, big})
	parts, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	// The big frame left T1 (it holds data) and went past early warning on
	// the empty T2.
	if len(parts) != 2 || parts[0].Barcode != "T1" || parts[1].Barcode != "T2" || s.tapes["T2"].Used() <= early {
		t.Fatalf("parts %+v, T2 used %d", parts, s.tapes["T2"].Used())
	}
	if got := readAll(t, NewReader(s.open, parts), stream.Location{Part: 0, Offset: int64(len(header(0)))}); !bytes.Equal(got, slices.Concat(small, big)) {
		t.Errorf("read back %d bytes", len(got))
	}

	// A frame bigger than a whole tape meets the end of media.
	dev, bc = s.first()
	w = NewWriter(dev, bc, s.next, header, "huge")
	_, err = w.WriteFrame(frame(2, capacity+1))
	if err == nil {
		_, err = w.Finish()
	} else if _, ferr := w.Finish(); !errors.Is(ferr, tape.ErrEndOfMedia) {
		t.Errorf("Finish after end of media: %v", ferr)
	}
	if !errors.Is(err, tape.ErrEndOfMedia) {
		t.Fatalf("frame bigger than the tape: %v", err)
	}
	if files, _ := s.tapes["T3"].Files(); len(files) != 0 || s.tapes["T3"].Used() != 0 {
		t.Errorf("T3 after end of media: %+v, used %d: the failed part is not removed", files, s.tapes["T3"].Used())
	}
}

func TestSkipsTapeWithoutRoom(t *testing.T) {
	s := newShelf(t, "T1", "T2")
	// T1 already holds 900 KiB of an earlier saveset.
	fw, err := s.tapes["T1"].Append("earlier")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(frame(9, 900<<10))
	if _, err := fw.Finish(); err != nil {
		t.Fatal(err)
	}
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "skip")
	f := frame(0, 200<<10)
	loc, err := w.WriteFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if loc != (stream.Location{Part: 0, Offset: int64(len(header(0)))}) || len(parts) != 1 || parts[0].Barcode != "T2" {
		t.Errorf("frame at %+v, parts %+v; want all on T2", loc, parts)
	}
	if files, _ := s.tapes["T1"].Files(); len(files) != 1 {
		t.Errorf("T1 files: %+v (want only the earlier one)", files)
	}
	if want := [][]string{{"T1"}}; !slices.EqualFunc(s.excludes, want, slices.Equal) {
		t.Errorf("excludes %v, want %v", s.excludes, want)
	}
}

func TestAbortKeepsEarlierParts(t *testing.T) {
	s := newShelf(t, "T1", "T2", "T3")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "aborted")
	var frames [][]byte
	for i := range 12 { // five on T1, five on T2, two on T3
		frames = append(frames, frame(i, 200<<10))
	}
	writeFrames(t, w, frames)
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFrame(frames[0]); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("WriteFrame after Abort: %v", err)
	}
	for i, bc := range []string{"T1", "T2"} {
		files, err := s.tapes[bc].Files()
		if err != nil || len(files) != 1 || files[0].Status != tape.FileComplete {
			t.Fatalf("%s after Abort: %+v, %v", bc, files, err)
		}
		fr, err := s.tapes[bc].Open(1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(fr)
		fr.Close()
		if want := slices.Concat(append([][]byte{header(i)}, frames[5*i:5*i+5]...)...); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s reads back %d bytes (%v), want %d", bc, len(got), err, len(want))
		}
	}
	files, err := s.tapes["T3"].Files()
	if err != nil || len(files) != 0 {
		t.Errorf("T3 after Abort: %+v, %v: the unfinished part is not removed", files, err)
	}
}

func TestOutOfTapes(t *testing.T) {
	s := newShelf(t, "T1", "T2")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "too big")
	var err error
	var written int
	for i := range 20 {
		if _, err = w.WriteFrame(frame(i, 200<<10)); err != nil {
			break
		}
		written++
	}
	if !errors.Is(err, ErrNoNextTape) || written != 10 {
		t.Fatalf("after %d frames: %v", written, err)
	}
	if want := "span: tape T2 is full after 2 part(s): no next tape for a spanning saveset: no writable tape in library test"; err.Error() != want {
		t.Errorf("error text:\n got %s\nwant %s", err, want)
	}
	if _, err2 := w.WriteFrame(frame(0, 10)); !errors.Is(err2, ErrNoNextTape) {
		t.Errorf("error does not stick: %v", err2)
	}
	if _, err2 := w.Finish(); !errors.Is(err2, ErrNoNextTape) {
		t.Errorf("Finish: %v", err2)
	}
	for _, bc := range []string{"T1", "T2"} {
		if files, _ := s.tapes[bc].Files(); len(files) != 1 || files[0].Status != tape.FileComplete {
			t.Errorf("%s: %+v", bc, files)
		}
	}

	// Without a Next at all.
	s = newShelf(t, "T1")
	dev, bc = s.first()
	w = NewWriter(dev, bc, nil, nil, "no next")
	for i := range 6 {
		if _, err = w.WriteFrame(frame(i, 200<<10)); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrNoNextTape) {
		t.Errorf("nil Next: %v", err)
	}
}

func TestReaderErrors(t *testing.T) {
	s := newShelf(t, "T1", "T2")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "r")
	for i := range 7 {
		if _, err := w.WriteFrame(frame(i, 200<<10)); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := w.Finish()
	if err != nil || len(parts) != 2 {
		t.Fatalf("parts %+v, %v", parts, err)
	}
	r := NewReader(s.open, parts)
	for _, loc := range []stream.Location{{Part: -1}, {Part: 2}, {Part: 0, Offset: -1}, {Part: 0, Offset: parts[0].Bytes + 1}} {
		if _, err := r.OpenAt(loc); !errors.Is(err, ErrBadLocation) {
			t.Errorf("OpenAt(%+v): %v", loc, err)
		}
	}
	// A parts list that claims more bytes than the tape file holds.
	bad := slices.Clone(parts)
	bad[1].Bytes += 10
	rc, err := NewReader(s.open, bad).OpenAt(stream.Location{Part: 0, Offset: parts[0].Header})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, ErrPartMismatch) || !errors.Is(err, tape.ErrTruncated) {
		t.Errorf("reading into a short part: %v", err)
	}
	rc.Close()
	// A tape that cannot be opened.
	gone := slices.Clone(parts)
	gone[1].Barcode = "T9"
	rc, err = NewReader(s.open, gone).OpenAt(stream.Location{Part: 0, Offset: parts[0].Bytes - 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); err == nil || err.Error() != "span: part 2 (tape T9, file 1): tape T9 is exported; import it" {
		t.Errorf("reading on to a missing tape: %v", err)
	}
	rc.Close()
}

// ewOnly is a device that, like a physical drive, tells its writers only
// that early warning was reached, not how many bytes still fit.
func ewOnly(d tape.Device) tape.Device { return faultdev.New(d).EarlyWarningOnly() }

// TestSpanOnEarlyWarningOnly: on a drive that only signals early warning,
// the frame that crosses it still goes to the tape (the margin past early
// warning holds it) and the next frame starts the next part.
func TestSpanOnEarlyWarningOnly(t *testing.T) {
	s := newShelf(t, "T1", "T2", "T3")
	next := func(exclude []string, full bool) (tape.Device, string, error) {
		d, bc, err := s.next(exclude, full)
		if err != nil {
			return nil, "", err
		}
		return ewOnly(d), bc, nil
	}
	dev, bc := s.first()
	w := NewWriter(ewOnly(dev), bc, next, header, "saveset 7")
	var frames [][]byte
	for i := range 10 {
		frames = append(frames, frame(i, 200<<10))
	}
	locs := writeFrames(t, w, frames)
	parts, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	hdr := int64(len(header(0)))
	// Five frames stay below 1 MiB with the header; the sixth crosses it.
	want := []Part{
		{Barcode: "T1", File: 1, Bytes: hdr + 6*200<<10, Header: hdr},
		{Barcode: "T2", File: 1, Bytes: hdr + 4*200<<10, Header: hdr},
	}
	if !slices.Equal(parts, want) {
		t.Fatalf("parts:\n got %+v\nwant %+v", parts, want)
	}
	r := NewReader(s.open, parts)
	for i, loc := range locs {
		if got, want := readAll(t, r, loc), slices.Concat(frames[i:]...); !bytes.Equal(got, want) {
			t.Fatalf("from frame %d on the stream reads back wrong", i)
		}
	}
}

// busyTape is a tape another writer holds: Append is tape.ErrBusy.
type busyTape struct{ tape.Device }

func (busyTape) Append(string) (tape.FileWriter, error) {
	return nil, fmt.Errorf("append: %w: held by another process", tape.ErrBusy)
}

// TestSpanPassesOverABusyTape: a tape another writer holds (a process
// that died with its lock still leased) is passed over, not marked full:
// the saveset goes to the next tape, and Next is told the tape left was
// not full.
func TestSpanPassesOverABusyTape(t *testing.T) {
	for _, frames := range []int{3, 0} {
		s := newShelf(t, "T1", "T2")
		dev, bc := s.first()
		w := NewWriter(busyTape{dev}, bc, s.next, header, "saveset 9")
		for i := range frames {
			if _, err := w.WriteFrame(frame(i, 10<<10)); err != nil {
				t.Fatal(err)
			}
		}
		parts, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 1 || parts[0].Barcode != "T2" {
			t.Errorf("%d frames: parts %+v, want one on T2", frames, parts)
		}
		if len(s.full) != 1 || s.full[0] || !slices.Equal(s.excludes[0], []string{"T1"}) {
			t.Errorf("%d frames: next called with %v, full %v; want [T1], not full", frames, s.excludes, s.full)
		}
		if files, _ := s.tapes["T1"].Files(); len(files) != 0 {
			t.Errorf("the busy tape got files %+v", files)
		}
	}
}
