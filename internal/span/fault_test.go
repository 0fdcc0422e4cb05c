package span

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/faultdev"
)

// TestDeviceFaultsKeepEarlierParts: whatever the second tape's drive does
// wrong — a write error, a tape that ends early without warning, a failing
// Append, or the first tape's failing Finish — the saveset fails with an
// error that says so (errors.Is), the failed part leaves nothing behind,
// and the part finished before it reads back whole.
func TestDeviceFaultsKeepEarlierParts(t *testing.T) {
	for _, c := range []struct {
		name    string
		tape    string // the tape the fault is on
		rule    faultdev.Rule
		want    error
		t1Parts int // complete tape files T1 keeps
	}{
		{"WriteError", "T2", faultdev.Rule{Op: faultdev.Write, AfterBytes: 300 << 10, Err: syscall.EIO}, syscall.EIO, 1},
		{"ShortWrite", "T2", faultdev.Rule{Op: faultdev.Write, AfterBytes: 300 << 10, Short: true, Err: syscall.ENOSPC}, syscall.ENOSPC, 1},
		{"EndOfMediaEarly", "T2", faultdev.Rule{Op: faultdev.EndOfMedia, AfterBytes: 500 << 10}, tape.ErrEndOfMedia, 1},
		{"AppendFails", "T2", faultdev.Rule{Op: faultdev.Append, Err: syscall.EIO}, syscall.EIO, 1},
		{"FinishFails", "T1", faultdev.Rule{Op: faultdev.Finish, Err: syscall.EIO}, syscall.EIO, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newShelf(t, "T1", "T2", "T3")
			fd := faultdev.New(s.tapes[c.tape], c.rule)
			s.tapes[c.tape] = fd
			dev, bc := s.first()
			w := NewWriter(dev, bc, s.next, header, "saveset 7")
			var frames [][]byte
			var err error
			for i := range 10 { // five frames fit on a tape
				frames = append(frames, frame(i, 200<<10))
				if _, err = w.WriteFrame(frames[i]); err != nil {
					break
				}
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("writing through the fault: %v, want %v", err, c.want)
			}
			if _, ferr := w.Finish(); !errors.Is(ferr, c.want) {
				t.Errorf("Finish after the fault: %v, want %v", ferr, c.want)
			}
			if fd.Injected() == 0 {
				t.Error("the fault was never injected")
			}
			for _, bc := range []string{"T2", "T3"} {
				if files, _ := s.tapes[bc].Files(); len(files) != 0 || s.tapes[bc].Used() != 0 {
					t.Errorf("%s after the fault: %+v, %d bytes: the failed part is not removed", bc, files, s.tapes[bc].Used())
				}
			}
			files, err := s.tapes["T1"].Files()
			if err != nil || len(files) != c.t1Parts {
				t.Fatalf("T1 after the fault: %+v, %v; want %d tape files", files, err, c.t1Parts)
			}
			if c.t1Parts == 0 {
				return
			}
			hdr := int64(len(header(0)))
			parts := []Part{{Barcode: "T1", File: 1, Bytes: files[0].Bytes, Header: hdr}}
			if got := readAll(t, NewReader(s.open, parts), stream.Location{Offset: hdr}); !bytes.Equal(got, slices.Concat(frames[:5]...)) {
				t.Errorf("the part on T1 reads back %d bytes, want its five frames", len(got))
			}
		})
	}
}

// TestReaderCorruptBlock: a corrupt block in the second part stops a read
// across the tapes at that block with a *tape.CorruptError naming the tape,
// after every byte before the block.
func TestReaderCorruptBlock(t *testing.T) {
	s := newShelf(t, "T1", "T2")
	dev, bc := s.first()
	w := NewWriter(dev, bc, s.next, header, "saveset 7")
	var frames [][]byte
	for i := range 8 {
		frames = append(frames, frame(i, 200<<10))
	}
	writeFrames(t, w, frames)
	parts, err := w.Finish()
	if err != nil || len(parts) != 2 {
		t.Fatalf("parts %+v, %v", parts, err)
	}
	const at = 300<<10 + 5 // in tape file 1 of T2
	s.tapes["T2"] = faultdev.New(s.tapes["T2"], faultdev.Rule{Op: faultdev.Corrupt, File: 1, AfterBytes: at})
	rc, err := NewReader(s.open, parts).OpenAt(stream.Location{Offset: parts[0].Header})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	var ce *tape.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, tape.ErrCorrupt) || ce.Barcode != "T2" || ce.File != 1 || ce.Block != at/4096 {
		t.Fatalf("reading into the corrupt block: %v", err)
	}
	goodOnT2 := at/4096*4096 - parts[1].Header
	if want := slices.Concat(frames...)[:5*200<<10+goodOnT2]; !bytes.Equal(got, want) {
		t.Errorf("read %d bytes before the corrupt block, want %d", len(got), len(want))
	}
}
