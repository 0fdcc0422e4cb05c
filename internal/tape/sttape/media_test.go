package sttape

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// Records of a tape with two tape files of 3 blocks each:
//
//	0 label, 1 label copy, 2 FM, 3-5 data 1, 6 FM, 7 trailer 1, 8 FM,
//	9-11 data 2, 12 FM, 13 trailer 2, 14 FM
func twoFiles(t *testing.T) (*emulated, [][]byte) {
	d := newEmulated(t, testCapacity, 2*testCapacity, 3*testCapacity)
	var data [][]byte
	for i := range 2 {
		b := tapetest.Payload(uint64(i), 3*testBlock-100)
		tapetest.WriteFile(t, d, "file", b, 0)
		data = append(data, b)
	}
	if n := d.media.Records(); n != 15 {
		t.Fatalf("%d records on the media, want 15", n)
	}
	return d, data
}

// TestCorruptBlock: a bit flipped in a data block is a *CorruptError that
// names the tape file and block; the other blocks and files read.
func TestCorruptBlock(t *testing.T) {
	d, data := twoFiles(t)
	d.media.FlipBit(10, 77) // tape file 2, block 1
	d2 := d.Reopen(t)
	r, err := d2.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	var ce *tape.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, tape.ErrCorrupt) || ce.File != 2 || ce.Block != 1 || ce.Barcode != "ST0001L8" {
		t.Fatalf("reading a damaged block: %v, want a CorruptError for tape file 2 block 1", err)
	}
	if _, err := r.Seek(2*testBlock, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, data[1][2*testBlock:]) {
		t.Fatalf("the block after the damaged one: %v", err)
	}
	r.Close()
	if !bytes.Equal(tapetest.ReadFile(t, d2, 1), data[0]) {
		t.Fatal("tape file 1 wrong")
	}
}

// TestCorruptTrailer: a damaged trailer makes Files and Open of that tape
// file a CorruptError; the tape still opens, the other tape file reads,
// and appending goes on after the last.
func TestCorruptTrailer(t *testing.T) {
	d, data := twoFiles(t)
	d.media.FlipBit(7, 300) // trailer 1
	d2 := d.Reopen(t)
	var ce *tape.CorruptError
	if _, err := d2.Files(); !errors.As(err, &ce) || ce.File != 1 || !errors.Is(err, tape.ErrCorrupt) {
		t.Errorf("Files() with trailer 1 damaged: %v", err)
	}
	if _, err := d2.Open(1); !errors.As(err, &ce) || ce.File != 1 {
		t.Errorf("Open(1) with its trailer damaged: %v", err)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d2, 2), data[1]) {
		t.Fatal("tape file 2 unreadable because tape file 1's trailer is damaged")
	}
	if info := tapetest.WriteFile(t, d2, "third", []byte("three"), 0); info.Number != 3 {
		t.Errorf("appended tape file %d, want 3", info.Number)
	}
}

// TestCrash: a writer that dies leaves data without a trailer (with the
// filemark the driver writes on close, or, at a power loss, without).
// Opening lists it as incomplete; the next Append writes over it.
func TestCrash(t *testing.T) {
	for _, closed := range []bool{true, false} {
		d, data := twoFiles(t)
		w, err := d.Append("dies")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(tapetest.Payload(7, 5*testBlock)); err != nil {
			t.Fatal(err)
		}
		if closed {
			d.d.Close() // the process dies: the driver ends the data with a filemark
		} else {
			d.media.Cut(d.media.Records()) // the power fails
		}
		testCrashed(t, d, data, 5)
	}
}

// TestCrashInFinish: a writer that dies in Finish, before or inside the
// trailer or before the filemark after it, leaves an incomplete tape
// file; the tape stays appendable.
func TestCrashInFinish(t *testing.T) {
	// Records of a third tape file of 2 blocks after twoFiles: 15-16 data,
	// 17 FM, 18 trailer, 19 FM.
	for _, cut := range []int{17, 18, 19} {
		d, data := twoFiles(t)
		tapetest.WriteFile(t, d, "third", tapetest.Payload(3, 2*testBlock), 0)
		d.media.Cut(cut)
		testCrashed(t, d, data, 2)
	}
}

func testCrashed(t *testing.T, d *emulated, data [][]byte, blocks int64) {
	t.Helper()
	d2 := d.Reopen(t)
	files, err := d2.Files()
	if err != nil || len(files) != 3 || files[2].Status != tape.FileIncomplete || files[2].Blocks != blocks {
		t.Fatalf("Files() after a crash = %+v, %v; want 2 complete and an incomplete one of %d blocks", files, err, blocks)
	}
	if _, err := d2.Open(3); !errors.Is(err, tape.ErrIncomplete) {
		t.Errorf("Open(incomplete) = %v", err)
	}
	third := tapetest.Payload(8, testBlock+1)
	if info := tapetest.WriteFile(t, d2, "again", third, 0); info.Number != 3 {
		t.Errorf("Append after a crash made tape file %d, want 3", info.Number)
	}
	d3 := d2.(*emulated).Reopen(t)
	for i, want := range [][]byte{data[0], data[1], third} {
		if !bytes.Equal(tapetest.ReadFile(t, d3, i+1), want) {
			t.Fatalf("tape file %d wrong after the crash and the append", i+1)
		}
	}
	if files, _ := d3.Files(); len(files) != 3 {
		t.Errorf("%d tape files after the append, want 3", len(files))
	}
}

// TestWriteProtected: a write-protected tape reads; Append says why it
// cannot write; the drive refuses to open it for writing.
func TestWriteProtected(t *testing.T) {
	d, data := twoFiles(t)
	d.media.SetWriteProtected(true)
	if _, err := d.media.Load(true); err == nil {
		t.Error("a write-protected tape opened for writing")
	}
	if _, err := d.Append("no"); !errors.Is(err, ErrWriteProtected) {
		t.Errorf("Append on a write-protected tape: %v", err)
	}
	drv, err := d.media.Load(false)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(drv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !bytes.Equal(tapetest.ReadFile(t, ro, 2), data[1]) {
		t.Fatal("tape file 2 wrong")
	}
}

// TestLocateBySpacing: opening a tape reads its label and one trailer per
// tape file, no data block; opening tape file n spaces over filemarks and
// reads no block of the tape files before it; reading it reads its blocks
// once.
func TestLocateBySpacing(t *testing.T) {
	d := newEmulated(t, 64<<20, 128<<20, 256<<20)
	const files, blocks = 20, 50
	for i := range files {
		tapetest.WriteFile(t, d, "f", tapetest.Payload(uint64(i), blocks*testBlock), 0)
	}
	before := d.media.Counts()
	d2 := d.Reopen(t)
	opened := d2.(*emulated).media.Counts()
	if got := opened.BlocksRead - before.BlocksRead; got != 2+files {
		t.Errorf("opening the tape read %d blocks, want %d (the label twice and one trailer per tape file)", got, 2+files)
	}
	r, err := d2.Open(17)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	after := d2.(*emulated).media.Counts()
	if got := after.BlocksRead - opened.BlocksRead; got != 1+blocks {
		t.Errorf("reading tape file 17 read %d blocks, want %d (its trailer and its data)", got, 1+blocks)
	}
	if after.Rewinds != opened.Rewinds {
		t.Errorf("reading tape file 17 rewound the tape %d times", after.Rewinds-opened.Rewinds)
	}
}

// TestFormat: Format refuses a labelled tape and one holding other data
// unless told to overwrite; Open of a blank tape is ErrBlank.
func TestFormat(t *testing.T) {
	m := NewMedia(1<<30, 2<<30)
	drv, _ := m.Load(true)
	if _, err := Open(drv, Options{}); !errors.Is(err, tape.ErrBlank) {
		t.Errorf("Open(blank) = %v", err)
	}
	l := tape.Label{Barcode: "A", Library: "l", BlockSize: testBlock, Capacity: 1 << 20}
	if _, err := Format(drv, l, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Format(drv, l, Options{}); err == nil {
		t.Error("Format over a label succeeded")
	}
	// Data another program wrote: variable blocks of 100 bytes.
	other := NewMedia(1<<30, 2<<30)
	od, _ := other.Load(true)
	od.Write(make([]byte, 100))
	od.Op(mtWEOF, 1)
	if _, err := Open(od, Options{}); !errors.Is(err, tape.ErrBadLabel) {
		t.Errorf("Open(foreign tape) = %v, want ErrBadLabel", err)
	}
	if _, err := Format(od, l, Options{}); !errors.Is(err, ErrNotBlank) {
		t.Errorf("Format(foreign tape) = %v, want ErrNotBlank", err)
	}
	dev, err := Format(od, l, Options{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if files, err := dev.Files(); err != nil || len(files) != 0 {
		t.Errorf("Files() after Format with Overwrite = %v, %v", files, err)
	}
}

// TestRelabel: relabelling a tape with tape files leaves it empty, its
// generation one higher, its barcode kept; reopened, it reads the same and
// takes appends from tape file 1. A write-protected tape is refused and
// keeps its tape files.
func TestRelabel(t *testing.T) {
	d, data := twoFiles(t)
	d.media.SetWriteProtected(true)
	if err := d.Relabel(tape.Label{}); !errors.Is(err, ErrWriteProtected) {
		t.Fatalf("relabel a write-protected tape: %v, want ErrWriteProtected", err)
	}
	d.media.SetWriteProtected(false)
	if !bytes.Equal(tapetest.ReadFile(t, d, 2), data[1]) {
		t.Fatal("a refused relabel lost tape file 2")
	}
	gen := d.Label().Generation
	if err := d.Relabel(tape.Label{Library: "other"}); err != nil {
		t.Fatal(err)
	}
	d2 := d.Reopen(t)
	l := d2.Label()
	files, err := d2.Files()
	if err != nil || len(files) != 0 || d2.Used() != 0 {
		t.Fatalf("relabelled tape: files %v, used %d, %v; want none", files, d2.Used(), err)
	}
	if l.Barcode != "ST0001L8" || l.Library != "other" || l.Generation != gen+1 {
		t.Fatalf("relabelled: %+v, want barcode kept, library other, generation %d", l, gen+1)
	}
	if info := tapetest.WriteFile(t, d2, "again", []byte("again"), 0); info.Number != 1 {
		t.Fatalf("first append after relabel is tape file %d", info.Number)
	}
}

// TestOffline: Offline ejects the cartridge (the robot may take it); the
// drive handle then reads nothing, and the cartridge loads again.
func TestOffline(t *testing.T) {
	d, data := twoFiles(t)
	if d.media.Ejected() {
		t.Fatal("ejected before Offline")
	}
	if err := Offline(d.d); err != nil {
		t.Fatal(err)
	}
	if !d.media.Ejected() {
		t.Fatal("not ejected after Offline")
	}
	if _, err := d.Open(1); err == nil {
		t.Fatal("read a tape file after the tape was ejected")
	}
	if !bytes.Equal(tapetest.ReadFile(t, d.Reopen(t), 1), data[0]) || d.media.Ejected() {
		t.Fatal("the cartridge did not load again after its ejection")
	}
}
