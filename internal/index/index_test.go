package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func smallBlocks(t *testing.T, n int) {
	old := blockEntries
	blockEntries = n
	t.Cleanup(func() { blockEntries = old })
}

func testFrames(n int) []Frame {
	var fs []Frame
	var off, poff int64
	for i := range n {
		f := Frame{Offset: off, Size: 1 << 20, CSize: uint32(300_000 + i*7), Part: int32(i / 50), PartOffset: poff}
		if i%50 == 49 {
			poff = 0
		} else {
			poff += int64(f.CSize)
		}
		off += int64(f.Size)
		fs = append(fs, f)
	}
	return fs
}

func TestRoundTrip(t *testing.T) {
	for _, blk := range []int{1, 7, 2048} {
		smallBlocks(t, blk)
		rng := rand.New(rand.NewPCG(1, uint64(blk)))
		want := randomEntries(rng, 3000)
		meta := []byte(`{"saveset":42,"client":"hélène"}`)
		frames := testFrames(120)
		r := open(t, build(t, meta, frames, want))
		if !bytes.Equal(r.Meta(), meta) {
			t.Errorf("Meta = %q", r.Meta())
		}
		if !slices.Equal(r.Frames(), frames) {
			t.Errorf("Frames differ: %v", r.Frames()[:3])
		}
		if r.Len() != int64(len(want)) {
			t.Errorf("Len = %d, want %d", r.Len(), len(want))
		}
		got, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, got, want)
		for i, e := range want {
			if blk > 7 && i%25 != 0 {
				continue // a Lookup decodes a whole block: sample the big ones
			}
			g, ok, err := r.Lookup(e.Path)
			if err != nil || !ok || !equalEntry(g, e) {
				t.Fatalf("Lookup(%q) = %+v, %v, %v", e.Path, g, ok, err)
			}
		}
	}
}

func TestLongPathsAndNonUTF8(t *testing.T) {
	long := strings.Repeat("é/", 2000) + "\xff\xfe end" // 8 KiB, not UTF-8
	want := []Entry{
		{Path: "\x80\x81", Type: TypeFile, Size: 1},
		{Path: strings.Repeat("a", 4096), Type: TypeSymlink, Link: strings.Repeat("\xc3", 5000)},
		{Path: long, Type: TypeFile, Xattrs: map[string]string{"user.\xff": "\x00bin\x00"}},
	}
	slices.SortFunc(want, func(a, b Entry) int { return Compare(a.Path, b.Path) })
	r := open(t, build(t, nil, nil, want))
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, want)
	d, _ := split(long)
	l, err := r.List(d)
	if err != nil || len(l) != 1 || l[0].Path != long {
		t.Fatalf("List(long dir) = %d entries, %v", len(l), err)
	}
}

func TestEmpty(t *testing.T) {
	r := open(t, build(t, []byte("m"), nil, nil))
	if r.Len() != 0 || len(r.Frames()) != 0 || string(r.Meta()) != "m" {
		t.Fatalf("Len %d Frames %d Meta %q", r.Len(), len(r.Frames()), r.Meta())
	}
	if got, err := readAll(r); err != nil || len(got) != 0 {
		t.Fatalf("Iter: %d entries, %v", len(got), err)
	}
	if l, err := r.List(""); err != nil || len(l) != 0 {
		t.Fatalf("List: %d entries, %v", len(l), err)
	}
	if _, ok, err := r.Lookup("a"); ok || err != nil {
		t.Fatalf("Lookup: %v %v", ok, err)
	}
}

func TestOrderRejected(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, nil)
	add := func(p string) error { return w.Add(&Entry{Path: p, Type: TypeFile}) }
	for _, p := range []string{"a", "b", "a/x"} {
		if err := add(p); err != nil {
			t.Fatalf("Add(%q): %v", p, err)
		}
	}
	for _, p := range []string{"a/x", "a", "b", "c", "a/b/c/d/", "a/a"} {
		// "c" is a sibling of "a" and "b": it must come before a's children.
		if err := add(p); !errors.Is(err, ErrOrder) && !errors.Is(err, ErrInvalid) {
			t.Errorf("Add(%q) = %v, want ErrOrder", p, err)
		}
	}
	// A refused entry leaves the Writer usable.
	if err := add("a/y"); err != nil {
		t.Fatalf("Add(a/y) after refusals: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(open(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range got {
		paths = append(paths, e.Path)
	}
	if want := []string{"a", "b", "a/x", "a/y"}; !slices.Equal(paths, want) {
		t.Fatalf("paths = %q, want %q", paths, want)
	}
	if err := w.Add(&Entry{Path: "z", Type: TypeFile}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

func TestInvalidEntries(t *testing.T) {
	w := NewWriter(io.Discard, nil)
	for _, e := range []Entry{
		{Path: "", Type: TypeFile},
		{Path: "/abs", Type: TypeFile},
		{Path: "a//b", Type: TypeFile},
		{Path: "a/./b", Type: TypeFile},
		{Path: "../b", Type: TypeFile},
		{Path: "a/", Type: TypeFile},
		{Path: "nul\x00", Type: TypeFile},
		{Path: "a", Type: 0},
		{Path: "a", Type: 8},
		{Path: "a", Type: TypeFile, Size: -1},
	} {
		if err := w.Add(&e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Add(%+v) = %v, want ErrInvalid", e, err)
		}
	}
	for _, e := range []Entry{
		{Path: strings.Repeat("a", MaxPath+1), Type: TypeFile},
		{Path: "a", Type: TypeSymlink, Link: strings.Repeat("l", MaxPath+1)},
		{Path: "a", Type: TypeFile, Xattrs: map[string]string{"k": strings.Repeat("v", MaxXattrs)}},
	} {
		if err := w.Add(&e); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Add(%.40q) = %v, want ErrTooLarge", e.Path, err)
		}
	}
	if w.Len() != 0 {
		t.Errorf("Len = %d after refusals", w.Len())
	}
	w2 := NewWriter(io.Discard, make([]byte, MaxMeta+1))
	if err := w2.Close(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Close with huge meta = %v, want ErrTooLarge", err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(b []byte) (int, error) {
	if f.n < len(b) {
		n := f.n
		f.n = 0
		return n, errors.New("disk full")
	}
	f.n -= len(b)
	return len(b), nil
}

func TestWriteErrorSticks(t *testing.T) {
	smallBlocks(t, 2)
	w := NewWriter(&failWriter{n: 100}, []byte("meta"))
	var err error
	for i := 0; err == nil && i < 100; i++ {
		err = w.Add(&Entry{Path: string(rune('a'+i%26)) + strings.Repeat("z", i), Type: TypeFile})
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Add = %v, want the write error", err)
	}
	if err2 := w.Close(); err2 == nil || !strings.Contains(err2.Error(), "disk full") {
		t.Fatalf("Close = %v, want the write error", err2)
	}
}

// smallIndex is a file of several blocks, meta and frames, for the damage
// tests.
func smallIndex(t *testing.T) ([]byte, []Entry) {
	smallBlocks(t, 5)
	want := randomEntries(rand.New(rand.NewPCG(3, 3)), 23)
	return build(t, []byte(`{"id":1}`), testFrames(4), want), want
}

func TestTruncated(t *testing.T) {
	b, _ := smallIndex(t)
	for n := range len(b) {
		_, err := Open(bytes.NewReader(b[:n]), int64(n))
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("Open of the first %d of %d bytes = %v, want ErrTruncated", n, len(b), err)
		}
	}
}

// checkAll opens b and reads everything; it returns the first error.
func checkAll(b []byte) error {
	r, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err
	}
	if _, err := readAll(r); err != nil {
		return err
	}
	for _, d := range []string{"", "a", "b/c"} {
		if _, err := r.List(d); err != nil {
			return err
		}
		it := r.Subtree(d)
		for it.Next() {
		}
		if it.Err() != nil {
			return it.Err()
		}
	}
	return nil
}

func TestCorruptEveryByte(t *testing.T) {
	b, _ := smallIndex(t)
	for i := range b {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			c := slices.Clone(b)
			c[i] ^= x
			err := checkAll(c)
			if err == nil {
				t.Fatalf("byte %d ^ %#x: no error", i, x)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) &&
				!errors.Is(err, ErrVersion) && !errors.Is(err, ErrNotIndex) {
				t.Fatalf("byte %d ^ %#x: %v is none of the sentinel errors", i, x, err)
			}
		}
	}
}

func TestDistinctErrors(t *testing.T) {
	b, _ := smallIndex(t)
	cases := []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"not an index", func(b []byte) []byte {
			return []byte("ustar\x00 this is a tar file, not an index file at all......................")
		}, ErrNotIndex},
		{"header version", func(b []byte) []byte { b[7] = 2; return b }, ErrVersion},
		{"footer version", func(b []byte) []byte { b[len(b)-1] = 2; return b }, ErrVersion},
		{"meta bit", func(b []byte) []byte { b[13] ^= 1; return b }, ErrCorrupt},
		{"footer crc", func(b []byte) []byte { b[len(b)-10] ^= 1; return b }, ErrCorrupt},
		{"trailer bit", func(b []byte) []byte { b[len(b)-50] ^= 1; return b }, ErrCorrupt},
		{"block bit", func(b []byte) []byte { b[40] ^= 1; return b }, ErrCorrupt},
		{"cut", func(b []byte) []byte { return b[:len(b)-1] }, ErrTruncated},
		{"empty", func(b []byte) []byte { return nil }, ErrTruncated},
	}
	for _, c := range cases {
		err := checkAll(c.edit(slices.Clone(b)))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestOpenFile(t *testing.T) {
	want := test2(3, 100, false)
	p := filepath.Join(t.TempDir(), "x.idx")
	if err := os.WriteFile(p, build(t, []byte("m"), nil, want), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.List("data/test2/d001")
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, want[105:205])
	if err := os.WriteFile(p, []byte("nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(p); !errors.Is(err, ErrNotIndex) {
		t.Fatalf("OpenFile(not an index) = %v", err)
	}
}

// TestTest2Compact checks the size goal on 40,000 entries of the test2 tree: below
// 40 bytes an entry, 16 of which are the random digest.
func TestTest2Compact(t *testing.T) {
	for _, jitter := range []bool{false, true} {
		e := test2(4, 10_000, jitter)
		b := build(t, []byte(`{"saveset":1}`), testFrames(100), e)
		per := float64(len(b)) / float64(len(e))
		t.Logf("jitter=%v: %d entries, %d bytes, %.2f bytes/entry", jitter, len(e), len(b), per)
		if per >= 40 {
			t.Errorf("jitter=%v: %.2f bytes/entry, want < 40", jitter, per)
		}
	}
}

// TestConcurrentReads runs List, Lookup and Iter on one Reader from several
// goroutines (run with -race).
func TestConcurrentReads(t *testing.T) {
	smallBlocks(t, 64)
	want := test2(4, 300, false)
	r := open(t, build(t, nil, nil, want))
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			d := fmt.Sprintf("data/test2/d%03d", g)
			l, err := r.List(d)
			if err == nil && len(l) != 300 {
				err = fmt.Errorf("List(%q): %d entries", d, len(l))
			}
			if err == nil {
				_, ok, lerr := r.Lookup(l[g*7].Path)
				if !ok || lerr != nil {
					err = fmt.Errorf("Lookup(%q): %v %v", l[g*7].Path, ok, lerr)
				}
			}
			if err == nil {
				var all []Entry
				all, err = readAll(r)
				if err == nil && len(all) != len(want) {
					err = fmt.Errorf("Iter: %d entries", len(all))
				}
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestSetMetaReplacesHeaderMeta(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, []byte("early"))
	if err := w.Add(&Entry{Path: "a", Type: TypeFile}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetMeta([]byte(`{"parts":[1,2]}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Meta()); got != `{"parts":[1,2]}` {
		t.Fatalf("Meta = %q, want the final meta", got)
	}
	if r.Len() != 1 {
		t.Fatalf("Len = %d", r.Len())
	}
}

// TestCheckFindsDamagedBlocks: Open checks only the ends of the file, Check
// every block: a bit flipped anywhere in a block fails Check with
// ErrCorrupt although Open succeeds.
func TestCheckFindsDamagedBlocks(t *testing.T) {
	b, _ := smallIndex(t)
	r := open(t, b)
	if err := r.Check(); err != nil {
		t.Fatalf("Check of a good index: %v", err)
	}
	if len(r.blocks) < 2 {
		t.Fatalf("want several blocks, have %d", len(r.blocks))
	}
	start := r.blocks[0].off
	last := r.blocks[len(r.blocks)-1]
	for i := start; i < last.off+last.length; i++ {
		c := slices.Clone(b)
		c[i] ^= 0x10
		r, err := Open(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			t.Fatalf("byte %d (a block) flipped: Open = %v, want it to open", i, err)
		}
		if err := r.Check(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d (a block) flipped: Check = %v, want ErrCorrupt", i, err)
		}
	}
}
