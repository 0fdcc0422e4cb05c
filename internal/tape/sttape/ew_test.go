package sttape

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// labelBytes is what Format puts on the media before tape file 1: the
// label twice.
const labelBytes = 2 * MetaBlockSize

// TestEarlyWarningFromTheDrive: the drive's early warning (1 MiB on the
// media, far below the label's capacity) shows in EarlyWarning() after
// exactly the write whose block crosses it, sticks, lets writing go on past
// it (through the driver's alternating ENOSPC), and the tape file still
// finishes, trailer and all, and reads back.
func TestEarlyWarningFromTheDrive(t *testing.T) {
	const ew = 1 << 20
	d := newEmulated(t, 64<<20, ew, 2<<20)
	w, err := d.Append("crosses early warning")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(tape.Remainer); ok {
		t.Error("a drive's writer claims to know exactly how much fits (tape.Remainer)")
	}
	data := tapetest.Payload(9, 1200<<10)
	var at int64 = -1
	for off := 0; off < len(data); off += testBlock {
		if _, err := w.Write(data[off : off+testBlock]); err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
		if w.EarlyWarning() && at < 0 {
			at = w.Written()
		}
		if at >= 0 && !w.EarlyWarning() {
			t.Fatalf("EarlyWarning() went back to false at %d", w.Written())
		}
	}
	// The block that takes the media to 1 MiB is the one ending at data
	// byte 1 MiB - the label.
	if want := int64(ew - labelBytes); at != want {
		t.Errorf("EarlyWarning() first true after %d bytes, want %d (the write that crosses the drive's early warning)", at, want)
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish past early warning: %v", err)
	}
	if info.Bytes != int64(len(data)) {
		t.Errorf("Finish: %d bytes, want %d", info.Bytes, len(data))
	}
	d2 := d.Reopen(t)
	if got := tapetest.ReadFile(t, d2, 1); !bytes.Equal(got, data) {
		t.Fatal("the tape file written past early warning reads back wrong")
	}
}

// TestPhysicalEnd: writing on past early warning ends at the physical end
// with ErrEndOfMedia; the Finish that must follow fails and cuts the tape
// file off; the earlier tape files read back, and the room is free again.
func TestPhysicalEnd(t *testing.T) {
	d := newEmulated(t, 64<<20, 1<<20, 2<<20)
	first := tapetest.Payload(1, 300<<10)
	tapetest.WriteFile(t, d, "first", first, 0)
	w, err := d.Append("too big")
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for werr == nil {
		_, werr = w.Write(make([]byte, 64<<10))
	}
	if !errors.Is(werr, tape.ErrEndOfMedia) || !w.EarlyWarning() {
		t.Fatalf("write to the physical end: %v (early warning %v), want ErrEndOfMedia", werr, w.EarlyWarning())
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrEndOfMedia) {
		t.Fatalf("Finish after the end: %v", err)
	}
	d2 := d.Reopen(t)
	files, err := d2.Files()
	if err != nil || len(files) != 1 || d2.Used() != int64(len(first)) {
		t.Fatalf("after the failed file: %+v, %v, used %d", files, err, d2.Used())
	}
	if !bytes.Equal(tapetest.ReadFile(t, d2, 1), first) {
		t.Fatal("tape file 1 damaged")
	}
	second := tapetest.Payload(2, 500<<10)
	if info := tapetest.WriteFile(t, d2, "second", second, 0); info.Number != 2 {
		t.Errorf("the next tape file is number %d, want 2", info.Number)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d2, 2), second) {
		t.Fatal("tape file 2 wrong")
	}
}

// TestSpanOnTheDrivesEarlyWarning: a saveset spans two emulated drives;
// the part on the first ends with the frame whose write met the drive's
// early warning, and the whole stream reads back across both.
func TestSpanOnTheDrivesEarlyWarning(t *testing.T) {
	const ew = 1 << 20
	tapes := map[string]*emulated{
		"T1": newEmulated(t, 64<<20, ew, 4<<20),
		"T2": newEmulated(t, 64<<20, ew, 4<<20),
	}
	next := func(exclude []string, _ bool) (tape.Device, string, error) {
		if !slices.Contains(exclude, "T2") {
			return tapes["T2"], "T2", nil
		}
		return nil, "", errors.New("no more tapes")
	}
	w := span.NewWriter(tapes["T1"], "T1", next, nil, "saveset 1")
	var frames [][]byte
	var locs []stream.Location
	for i := range 10 {
		f := tapetest.Payload(uint64(i), 200<<10)
		frames = append(frames, f)
		loc, err := w.WriteFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	parts, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	// Four frames (800 KiB) leave the media below 1 MiB with the label; the
	// fifth crosses it and still goes on T1.
	want := []span.Part{{Barcode: "T1", File: 1, Bytes: 5 * 200 << 10}, {Barcode: "T2", File: 1, Bytes: 5 * 200 << 10}}
	if !slices.Equal(parts, want) {
		t.Fatalf("parts:\n got %+v\nwant %+v", parts, want)
	}
	r := span.NewReader(func(bc string) (tape.Device, error) { return tapes[bc].Reopen(t), nil }, parts)
	for _, i := range []int{0, 4, 5, 9} {
		rc, err := r.OpenAt(locs[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, slices.Concat(frames[i:]...)) {
			t.Fatalf("from frame %d: %d bytes, %v; the stream reads back wrong", i, len(got), err)
		}
	}
}
