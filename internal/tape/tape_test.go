package tape_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// reopenable is a *Tape that tapetest can reopen from its folder.
type reopenable struct {
	*tape.Tape
	dir  string
	opts tape.Options
}

// DamageLabel flips one bit of the label file (its copy stays good).
func (r reopenable) DamageLabel(t *testing.T) {
	p := filepath.Join(r.dir, "label")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, flipped(b, len(b)/2), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r reopenable) Reopen(t *testing.T) tape.Device {
	t2, err := tape.Open(r.dir, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { t2.Close() })
	return t2
}

func testLabel(blockSize int, capacity int64) tape.Label {
	return tape.Label{Barcode: "A00001L", Library: "vtl1", BlockSize: blockSize, Capacity: capacity}
}

func newTape(t testing.TB, blockSize int, capacity int64, opts tape.Options) (*tape.Tape, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "A00001L")
	tp, err := tape.Format(dir, testLabel(blockSize, capacity), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp, dir
}

func TestConformance(t *testing.T) {
	for _, c := range []struct{ block, buffer int }{
		{512, 0},     // default ring
		{4096, 8192}, // the minimum ring of 2
		{65536, 257 << 10},
	} {
		t.Run(fmt.Sprintf("block=%d/buffer=%d", c.block, c.buffer), func(t *testing.T) {
			tapetest.Run(t, func(t *testing.T) tape.Device {
				opts := tape.Options{BufferSize: c.buffer}
				tp, dir := newTape(t, c.block, 2<<20, opts)
				return reopenable{Tape: tp, dir: dir, opts: opts}
			})
		})
	}
}

// TestDeviceFaults runs the device-level fault tests (tapetest.RunFaults)
// on a folder tape.
func TestDeviceFaults(t *testing.T) {
	tapetest.RunFaults(t, func(t *testing.T) tape.Device {
		opts := tape.Options{BufferSize: 64 << 10}
		tp, dir := newTape(t, 4096, 2<<20, opts)
		return reopenable{Tape: tp, dir: dir, opts: opts}
	})
}

func TestDataFileIsRaw(t *testing.T) {
	tp, _ := newTape(t, 4096, 1<<20, tape.Options{})
	data := tapetest.Payload(9, 10000)
	tapetest.WriteFile(t, tp, "raw", data, 333)
	got, err := os.ReadFile(tp.DataPath(1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("data file does not hold exactly the bytes written")
	}
}

func TestBlockSizePerFile(t *testing.T) {
	tp, dir := newTape(t, 512, 1<<20, tape.Options{})
	a := tapetest.Payload(1, 5000)
	tapetest.WriteFile(t, tp, "512", a, 0)
	big, err := tape.Open(dir, tape.Options{BlockSize: 8192})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	b := tapetest.Payload(2, 20000)
	info := tapetest.WriteFile(t, big, "8192", b, 0)
	if info.BlockSize != 8192 || info.Blocks != 3 {
		t.Errorf("info = %+v, want 3 blocks of 8192", info)
	}
	files, err := tp.Files()
	if err != nil {
		t.Fatal(err)
	}
	if files[0].BlockSize != 512 || files[1].BlockSize != 8192 {
		t.Errorf("block sizes %d, %d", files[0].BlockSize, files[1].BlockSize)
	}
	if !bytes.Equal(tapetest.ReadFile(t, tp, 1), a) || !bytes.Equal(tapetest.ReadFile(t, tp, 2), b) {
		t.Fatal("reader did not adapt to each tape file's block size")
	}
}

func TestBitFlipIsCorrupt(t *testing.T) {
	tp, _ := newTape(t, 1024, 1<<20, tape.Options{})
	data := tapetest.Payload(3, 10*1024)
	tapetest.WriteFile(t, tp, "x", data, 0)
	flipByte(t, tp.DataPath(1), 5*1024+77)

	r, err := tp.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	var ce *tape.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, tape.ErrCorrupt) {
		t.Fatalf("read of a flipped bit: %v, want a *CorruptError wrapping ErrCorrupt", err)
	}
	if ce.Library != "vtl1" || ce.Barcode != "A00001L" || ce.File != 1 || ce.Block != 5 {
		t.Errorf("CorruptError = %+v, want vtl1/A00001L file 1 block 5", ce)
	}
	if errors.Is(err, tape.ErrTruncated) {
		t.Error("corruption also reports ErrTruncated")
	}
	if !bytes.Equal(got, data[:5*1024]) {
		t.Errorf("read %d good bytes before the bad block, want %d", len(got), 5*1024)
	}
	// Blocks after the bad one are still reachable by seeking.
	if _, err := r.Seek(6*1024, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, data[6*1024:]) {
		t.Fatalf("read after the bad block: %v", err)
	}
}

func TestChecksumTableFlipIsCorrupt(t *testing.T) {
	tp, dir := newTape(t, 1024, 1<<20, tape.Options{})
	tapetest.WriteFile(t, tp, "x", tapetest.Payload(3, 4000), 0)
	flipByte(t, filepath.Join(dir, "000001.crc"), 20)
	_, err := tp.Open(1)
	var ce *tape.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, tape.ErrCorrupt) || ce.File != 1 {
		t.Fatalf("Open with a damaged checksum table: %v", err)
	}
}

func TestTruncatedData(t *testing.T) {
	tp, _ := newTape(t, 1024, 1<<20, tape.Options{})
	data := tapetest.Payload(4, 10*1024)
	tapetest.WriteFile(t, tp, "x", data, 0)
	if err := os.Truncate(tp.DataPath(1), 7*1024+10); err != nil {
		t.Fatal(err)
	}
	r, err := tp.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	var ce *tape.CorruptError
	if !errors.Is(err, tape.ErrTruncated) || !errors.As(err, &ce) {
		t.Fatalf("read of a short data file: %v, want ErrTruncated", err)
	}
	if errors.Is(err, tape.ErrCorrupt) {
		t.Error("truncation also reports ErrCorrupt")
	}
	if ce.Block != 7 || len(got) != 7*1024 {
		t.Errorf("truncated at block %d after %d bytes, want block 7 after %d", ce.Block, len(got), 7*1024)
	}
}

func TestLabelErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := tape.Open(filepath.Join(dir, "none"), tape.Options{}); !errors.Is(err, tape.ErrBlank) {
		t.Errorf("Open of a missing folder: %v, want ErrBlank", err)
	}
	if _, err := tape.ReadLabel(dir); !errors.Is(err, tape.ErrBlank) {
		t.Errorf("ReadLabel of an empty folder: %v, want ErrBlank", err)
	}
	tp, tdir := newTape(t, 4096, 1<<20, tape.Options{})
	l, err := tape.ReadLabel(tdir)
	if err != nil || l != tp.Label() {
		t.Fatalf("ReadLabel = %+v, %v; want %+v", l, err, tp.Label())
	}
	if l.Generation != 1 || l.EarlyWarning != l.Capacity || l.Version != 1 {
		t.Errorf("new label %+v", l)
	}
	if _, err := tape.Format(tdir, testLabel(4096, 1<<20), tape.Options{}); err == nil {
		t.Error("Format of a labelled tape succeeded")
	}
	good, err := os.ReadFile(filepath.Join(tdir, "label"))
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := os.ReadFile(filepath.Join(tdir, "label.copy")); err != nil || !bytes.Equal(cp, good) {
		t.Fatalf("label.copy = %q, %v; want the label's bytes", cp, err)
	}
	bad := map[string][]byte{
		"empty":     {},
		"truncated": good[:len(good)/2],
		"flipped":   flipped(good, len(good)/2),
		"garbage":   bytes.Repeat([]byte{0xff}, 100),
		"huge":      bytes.Repeat([]byte("x"), 1<<20),
	}
	for name, b := range bad {
		// Both copies damaged: the label is lost.
		for _, f := range []string{"label", "label.copy"} {
			if err := os.WriteFile(filepath.Join(tdir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tape.Open(tdir, tape.Options{}); !errors.Is(err, tape.ErrBadLabel) {
			t.Errorf("%s label and copy: Open = %v, want ErrBadLabel", name, err)
		}
		if _, err := tape.ReadLabel(tdir); !errors.Is(err, tape.ErrBadLabel) {
			t.Errorf("%s label and copy: ReadLabel = %v, want ErrBadLabel", name, err)
		}
		// One copy damaged: the tape reads as before and says so.
		for _, f := range []string{"label", "label.copy"} {
			other := map[string]string{"label": "label.copy", "label.copy": "label"}[f]
			if err := os.WriteFile(filepath.Join(tdir, other), good, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tdir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
			o, err := tape.Open(tdir, tape.Options{})
			if err != nil {
				t.Fatalf("%s %s: Open = %v, want the tape readable from the other copy", name, f, err)
			}
			if o.Label() != l || !errors.Is(o.LabelDamage(), tape.ErrBadLabel) {
				t.Errorf("%s %s: label %+v, damage %v; want %+v and ErrBadLabel", name, f, o.Label(), o.LabelDamage(), l)
			}
			if rl, damage, err := tape.CheckLabel(tdir); err != nil || rl != l || !errors.Is(damage, tape.ErrBadLabel) {
				t.Errorf("%s %s: CheckLabel = %+v, %v, %v", name, f, rl, damage, err)
			}
			o.Close()
		}
	}
	// A copy missing while the label is damaged: the label is lost.
	if err := os.Remove(filepath.Join(tdir, "label.copy")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, "label"), bad["flipped"], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tape.Open(tdir, tape.Options{}); !errors.Is(err, tape.ErrBadLabel) || errors.Is(err, tape.ErrBlank) {
		t.Errorf("damaged label, no copy: Open = %v, want ErrBadLabel", err)
	}
	// A tape labelled before the copy existed (label only) is not damaged.
	if err := os.WriteFile(filepath.Join(tdir, "label"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := tape.Open(tdir, tape.Options{})
	if err != nil || o.Label() != l || o.LabelDamage() != nil {
		t.Fatalf("label without copy: Open = %v, damage %v", err, o.LabelDamage())
	}
	// Its next append gives it the copy.
	tapetest.WriteFile(t, o, "after", tapetest.Payload(3, 100), 0)
	o.Close()
	if cp, err := os.ReadFile(filepath.Join(tdir, "label.copy")); err != nil || !bytes.Equal(cp, good) {
		t.Errorf("label.copy after an append to a tape without one: %q, %v", cp, err)
	}
}

// TestLabelCopyHealed: a writer rewrites a damaged or stale copy of the
// label, and a reader of the healed tape finds nothing wrong.
func TestLabelCopyHealed(t *testing.T) {
	for _, f := range []string{"label", "label.copy"} {
		tp, tdir := newTape(t, 4096, 1<<20, tape.Options{})
		l := tp.Label()
		tapetest.WriteFile(t, tp, "before", tapetest.Payload(1, 5000), 0)
		good, err := os.ReadFile(filepath.Join(tdir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tdir, f), flipped(good, 40), 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := tape.Open(tdir, tape.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(o.LabelDamage(), tape.ErrBadLabel) {
			t.Fatalf("%s flipped: LabelDamage = %v", f, o.LabelDamage())
		}
		var show strings.Builder
		if err := tape.Describe(&show, o); err != nil || !strings.Contains(show.String(), "DAMAGED") || !strings.Contains(show.String(), "file 1: complete") {
			t.Errorf("%s flipped: Describe = %v:\n%s", f, err, show.String())
		}
		tapetest.WriteFile(t, o, "after", tapetest.Payload(2, 5000), 0)
		if o.LabelDamage() != nil {
			t.Errorf("%s flipped: damage after an append: %v", f, o.LabelDamage())
		}
		o.Close()
		if _, damage, err := tape.CheckLabel(tdir); err != nil || damage != nil {
			t.Errorf("%s flipped, after an append: CheckLabel = %v, %v", f, damage, err)
		}
		o2, err := tape.Open(tdir, tape.Options{})
		if err != nil || o2.Label() != l {
			t.Fatalf("reopen: %v", err)
		}
		if !bytes.Equal(tapetest.ReadFile(t, o2, 1), tapetest.Payload(1, 5000)) {
			t.Error("tape file 1 differs")
		}
		o2.Close()
	}
}

func TestBadOptionsAndLabels(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		l    tape.Label
		opts tape.Options
	}{
		"no barcode":      {tape.Label{BlockSize: 4096, Capacity: 1 << 20}, tape.Options{}},
		"slash":           {tape.Label{Barcode: "a/b", BlockSize: 4096, Capacity: 1 << 20}, tape.Options{}},
		"tiny block":      {testLabel(100, 1<<20), tape.Options{}},
		"no capacity":     {testLabel(4096, 0), tape.Options{}},
		"warning > cap":   {tape.Label{Barcode: "X", BlockSize: 4096, Capacity: 10, EarlyWarning: 11}, tape.Options{}},
		"bad opt block":   {testLabel(4096, 1<<20), tape.Options{BlockSize: 3}},
		"negative buffer": {testLabel(4096, 1<<20), tape.Options{BufferSize: -1}},
	} {
		if _, err := tape.Format(filepath.Join(dir, name), c.l, c.opts); err == nil {
			t.Errorf("%s: Format succeeded", name)
		}
	}
}

func TestRelabel(t *testing.T) {
	clock := fixedClock()
	tp, dir := newTape(t, 4096, 1<<20, tape.Options{Clock: clock})
	tapetest.WriteFile(t, tp, "a", tapetest.Payload(1, 5000), 0)
	tapetest.WriteFile(t, tp, "b", tapetest.Payload(2, 6000), 0)
	w, err := tp.Append("open")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Relabel(tape.Label{}); !errors.Is(err, tape.ErrBusy) {
		t.Fatalf("Relabel with an open writer: %v, want ErrBusy", err)
	}
	w.Abort()
	if err := tp.Relabel(tape.Label{Library: "vtl2", BlockSize: 8192}); err != nil {
		t.Fatal(err)
	}
	l := tp.Label()
	if l.Generation != 2 || l.Library != "vtl2" || l.BlockSize != 8192 || l.Barcode != "A00001L" || !l.Labelled.After(l.Created) {
		t.Errorf("after Relabel: %+v", l)
	}
	if files, err := tp.Files(); err != nil || len(files) != 0 || tp.Used() != 0 {
		t.Errorf("after Relabel: Files() = %v, %v; Used() = %d", files, err, tp.Used())
	}
	if onDisk, err := tape.ReadLabel(dir); err != nil || onDisk != l {
		t.Errorf("label on disk %+v, %v", onDisk, err)
	}
	if err := tp.Relabel(tape.Label{Barcode: "OTHER"}); err == nil {
		t.Error("Relabel changed the barcode")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "label" && e.Name() != "label.copy" && e.Name() != "lock" {
			t.Errorf("left after Relabel: %s", e.Name())
		}
	}
	info := tapetest.WriteFile(t, tp, "new", []byte("x"), 0)
	if info.Number != 1 || info.BlockSize != 8192 {
		t.Errorf("first file after Relabel: %+v", info)
	}
}

func TestCloseAbortsWriter(t *testing.T) {
	tp, dir := newTape(t, 4096, 1<<20, tape.Options{})
	w, err := tp.Append("x")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("d")); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Write after tape Close: %v", err)
	}
	if _, err := tp.Files(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Files after Close: %v", err)
	}
	tp2, err := tape.Open(dir, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tp2.Close()
	tapetest.WriteFile(t, tp2, "y", []byte("y"), 0) // the lock was released
}

func TestDescribe(t *testing.T) {
	tp, dir := newTape(t, 4096, 10<<20, tape.Options{Clock: fixedClock()})
	tapetest.WriteFile(t, tp, "saveset 12 data part 1", tapetest.Payload(1, 3*4096+100), 0)
	tapetest.WriteFile(t, tp, "saveset 12 index", tapetest.Payload(2, 900), 0)
	tapetest.WriteFile(t, tp, "", nil, 0)
	// What a crashed writer leaves: data without a filemark (Abort would
	// remove it).
	if err := os.WriteFile(filepath.Join(dir, "000004.data"), tapetest.Payload(3, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tape.Describe(&b, tp); err != nil {
		t.Fatal(err)
	}
	// The incomplete file's time is its data file's mtime: pin it.
	got := b.Bytes()
	golden(t, "describe.golden", normaliseIncompleteTime(got))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// normaliseIncompleteTime replaces the last "written:" stamp (the
// incomplete file's mtime) with a fixed text.
func normaliseIncompleteTime(b []byte) []byte {
	i := bytes.LastIndex(b, []byte("written: "))
	if i < 0 {
		return b
	}
	j := i + len("written: ")
	k := j + bytes.IndexByte(b[j:], '\n')
	return append(append(append([]byte{}, b[:j]...), "(mtime)"...), b[k:]...)
}

// fixedClock returns a clock that starts at a fixed time and advances one
// second per call.
func fixedClock() func() time.Time {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, flipped(b, int(off)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func flipped(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x10
	return c
}

// TestOpenWithLabel: a tape whose label and copy are both damaged reads
// with a stand-in label (every tape file records its own block size),
// says so, refuses appends, and is labelled again by Relabel.
func TestOpenWithLabel(t *testing.T) {
	tp, tdir := newTape(t, 4096, 1<<20, tape.Options{})
	want := tapetest.Payload(7, 3*4096+11)
	tapetest.WriteFile(t, tp, "data", want, 0)
	standIn := testLabel(8192, 1<<20) // not the block size the file was written with
	if o, err := tape.OpenWithLabel(tdir, standIn, tape.Options{}); err != nil || o.Label() != tp.Label() || o.LabelDamage() != nil {
		t.Fatalf("OpenWithLabel of a good tape: %v, label %+v; want the tape's own", err, o.Label())
	}
	for _, f := range []string{"label", "label.copy"} {
		must(t, os.WriteFile(filepath.Join(tdir, f), []byte("KURA-TAPE-LABEL 1\ngarbage"), 0o644))
	}
	if _, err := tape.Open(tdir, tape.Options{}); !errors.Is(err, tape.ErrBadLabel) {
		t.Fatalf("Open with both copies damaged: %v", err)
	}
	o, err := tape.OpenWithLabel(tdir, standIn, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(o.LabelDamage(), tape.ErrBadLabel) || !o.LabelLost() || o.Label().Barcode != standIn.Barcode || o.Used() != int64(len(want)) {
		t.Errorf("stand-in: label %+v, damage %v, used %d", o.Label(), o.LabelDamage(), o.Used())
	}
	if !bytes.Equal(tapetest.ReadFile(t, o, 1), want) {
		t.Error("tape file 1 differs under a stand-in label")
	}
	if _, err := o.Append("more"); !errors.Is(err, tape.ErrBadLabel) {
		t.Errorf("Append under a stand-in label: %v, want ErrBadLabel", err)
	}
	if _, err := tape.OpenWithLabel(tdir, tape.Label{}, tape.Options{}); !errors.Is(err, tape.ErrBadLabel) {
		t.Errorf("OpenWithLabel with an invalid stand-in: %v, want the ErrBadLabel of Open", err)
	}
	if err := o.Relabel(tape.Label{}); err != nil {
		t.Fatal(err)
	}
	if o.LabelLost() {
		t.Error("LabelLost after Relabel")
	}
	if l, damage, err := tape.CheckLabel(tdir); err != nil || damage != nil || l.Generation != 2 {
		t.Errorf("after Relabel: %+v, %v, %v", l, damage, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Reclaim takes back at once the space of what a writer that died left (a
// tape file without a filemark), and leaves a tape being written alone.
func TestReclaim(t *testing.T) {
	tp, dir := newTape(t, 4096, 1<<20, tape.Options{})
	first := tapetest.Payload(1, 5000)
	tapetest.WriteFile(t, tp, "a", first, 0)
	if freed, err := tp.Reclaim(); freed != 0 || err != nil {
		t.Fatalf("Reclaim of a tape without debris: %d, %v", freed, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000002.data"), make([]byte, 9000), 0o600); err != nil {
		t.Fatal(err)
	}
	freed, err := tp.Reclaim()
	if err != nil || freed != 9000 {
		t.Fatalf("Reclaim = %d, %v; want the 9000 bytes of the unfinished file", freed, err)
	}
	if files, err := tp.Files(); err != nil || len(files) != 1 || tp.Used() != int64(len(first)) {
		t.Fatalf("after Reclaim: %+v, %v, used %d", files, err, tp.Used())
	}
	w, err := tp.Append("b")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("being written"))
	other, err := tape.Open(dir, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Reclaim(); !errors.Is(err, tape.ErrBusy) {
		t.Errorf("Reclaim while another writer holds the tape: %v, want ErrBusy", err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatalf("the writer after a Reclaim attempt: %v", err)
	}
}
