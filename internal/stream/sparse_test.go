package stream

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
)

// sparseItem is a sparse file as a test writes it: its extents and the
// bytes of each.
type sparseItem struct {
	e    index.Entry
	data []Extent
}

// extentBytes is the content of extent x of a test file: a pattern that
// depends on the offset, so a misplaced extent shows.
func extentBytes(x Extent) []byte {
	b := make([]byte, x.Length)
	for i := range b {
		b[i] = byte((x.Offset+int64(i))*7 + 1)
	}
	return b
}

func (s sparseItem) content() io.Reader {
	var rs []io.Reader
	for _, x := range s.data {
		rs = append(rs, bytes.NewReader(extentBytes(x)))
	}
	return io.MultiReader(rs...)
}

// logical is the whole content, holes as zeros (small files only).
func (s sparseItem) logical() []byte {
	b := make([]byte, s.e.Size)
	for _, x := range s.data {
		copy(b[x.Offset:], extentBytes(x))
	}
	return b
}

const gib = int64(1) << 30

// sparseLayouts are the shapes a sparse file takes: data between holes,
// a hole first or last, only a hole, one past 8 GiB (ustar's size field),
// and names and owners ustar cannot hold.
func sparseLayouts() []sparseItem {
	file := func(p string, size int64, data ...Extent) sparseItem {
		return sparseItem{e: index.Entry{Path: p, Type: index.TypeFile, Mode: 0o640, UID: 1000, GID: 1000, MTime: 1_700_000_000e9, Size: size}, data: data}
	}
	items := []sparseItem{
		file("a/data-hole-data", 3<<20, Extent{0, 4096}, Extent{2 << 20, 5000}),
		file("a/hole-first", 1<<20+10, Extent{1 << 20, 10}),
		file("a/hole-last", 200_000, Extent{0, 100}),
		file("a/only-hole", 64<<20),
		file("a/tiny", 9000, Extent{4096, 1}),
		file("b/big", 9*gib+123, Extent{0, 4096}, Extent{4 * gib, 69_632}, Extent{9*gib + 100, 23}),
		file("b/"+string(bytes.Repeat([]byte("long-é-\xff"), 20)), 1<<20, Extent{512, 512}),
	}
	items[1].e.UID, items[1].e.GID = 3_000_000, 4_000_000 // past ustar's 7 octal digits
	items[2].e.Xattrs = map[string]string{"user.k": "v\x00\xff", "security.capability": "\x01\x00\x00\x02"}
	items[3].e.MTime = -86400e9 // before 1970
	return items
}

// writeSparse writes a stream of the sparse layouts, each between two
// plain files, and returns the entries as written and the frame table.
func writeSparse(t *testing.T, sink FrameSink, opts Options) ([]index.Entry, []sparseItem, []index.Frame) {
	t.Helper()
	w, err := NewWriter(sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	var all []index.Entry
	sp := sparseLayouts()
	for i := range sp {
		before := index.Entry{Path: sp[i].e.Path + ".before", Type: index.TypeFile, Mode: 0o644, Size: 700}
		if err := w.WriteEntry(&before, bytes.NewReader(bytes.Repeat([]byte{'x'}, 700))); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteSparseEntry(&sp[i].e, sp[i].data, sp[i].content()); err != nil {
			t.Fatalf("WriteSparseEntry(%q): %v", sp[i].e.Path, err)
		}
		all = append(all, before, sp[i].e)
	}
	frames, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return all, sp, frames
}

// readSparseContent reads an entry's content the way a restore does: the
// holes skipped, the data extents read. It returns the digest of the
// logical content and the extents with their bytes checked.
func readSparseContent(t *testing.T, rd *Reader, e *index.Entry) ([16]byte, []Extent) {
	t.Helper()
	hs := NewDigest()
	var pos int64
	ext := slices.Clone(rd.Extents())
	for _, x := range ext {
		if err := rd.Discard(x.Offset - pos); err != nil {
			t.Fatalf("%s: discard hole: %v", e.Path, err)
		}
		hashZeros(hs, x.Offset-pos)
		b := make([]byte, x.Length)
		if _, err := io.ReadFull(rd, b); err != nil {
			t.Fatalf("%s: extent %+v: %v", e.Path, x, err)
		}
		if !bytes.Equal(b, extentBytes(x)) {
			t.Fatalf("%s: extent %+v holds other bytes", e.Path, x)
		}
		hs.Write(b)
		pos = x.End()
	}
	if err := rd.Discard(e.Size - pos); err != nil {
		t.Fatalf("%s: discard last hole: %v", e.Path, err)
	}
	hashZeros(hs, e.Size-pos)
	if n, err := rd.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("%s: after the content: %d, %v", e.Path, n, err)
	}
	return SumDigest(hs), ext
}

// TestSparseRoundTrip: sparse files of every layout come back from the
// stream with their size, extents, bytes, digest and metadata, read in
// order or reached by SeekTo, between plain files that stay intact.
func TestSparseRoundTrip(t *testing.T) {
	sink := &memSink{}
	all, sp, frames := writeSparse(t, sink, Options{FrameSize: MinFrameSize})
	byPath := map[string]sparseItem{}
	for _, s := range sp {
		if s.e.Flags&index.FlagSparse == 0 {
			t.Errorf("%s: written without FlagSparse", s.e.Path)
		}
		byPath[s.e.Path] = s
	}
	check := func(rd *Reader, want index.Entry) {
		t.Helper()
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("Next at %s: %v", want.Path, err)
		}
		if e.Path != want.Path || e.Size != want.Size || e.Offset != want.Offset || e.UID != want.UID || e.GID != want.GID ||
			e.MTime != want.MTime || !equalXattrs(e.Xattrs, want.Xattrs) {
			t.Fatalf("entry %+v, wrote %+v", e, want)
		}
		s, sparse := byPath[want.Path]
		if got := e.Flags&index.FlagSparse != 0; got != sparse {
			t.Fatalf("%s: FlagSparse %v", want.Path, got)
		}
		if !sparse {
			if rd.Extents() != nil {
				t.Fatalf("%s: extents of a plain file", want.Path)
			}
			return // read on by the next Next
		}
		d, ext := readSparseContent(t, rd, e)
		if !slices.Equal(ext, s.data) {
			t.Errorf("%s: extents %v, wrote %v", want.Path, ext, s.data)
		}
		if d != want.Digest {
			t.Errorf("%s: digest of what was read differs from the one written", want.Path)
		}
	}
	rd, err := NewReader(sink.source(), frames, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, want := range all {
		check(rd, want)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("after the last entry: %v", err)
	}
	// Backwards, each reached by its offset, as a single-file restore does.
	for i := len(all) - 1; i >= 0; i-- {
		if err := rd.SeekTo(all[i].Offset); err != nil {
			t.Fatal(err)
		}
		check(rd, all[i])
	}
	// Small sparse files read whole: holes read as zeros.
	for _, p := range []string{"a/data-hole-data", "a/tiny", "a/hole-last"} {
		var e index.Entry
		for _, a := range all {
			if a.Path == p {
				e = a
			}
		}
		if err := rd.SeekTo(e.Offset); err != nil {
			t.Fatal(err)
		}
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rd)
		if err != nil || !bytes.Equal(got, byPath[p].logical()) {
			t.Errorf("%s: read whole: %d bytes, %v", p, len(got), err)
		}
	}
}

func equalXattrs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSparseStoresOnlyData: the holes take no room in the stream.
func TestSparseStoresOnlyData(t *testing.T) {
	sink := &memSink{}
	w, err := NewWriter(sink, Options{Level: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := sparseLayouts()[5] // 9 GiB, 72 KiB of data
	if err := w.WriteSparseEntry(&s.e, s.data, s.content()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Uncompressed > 80_000+4096 {
		t.Fatalf("a 9 GiB file of 74 KiB data took %d stream bytes", st.Uncompressed)
	}
}

// TestSparseWithGoTar: Go's archive/tar reads the decompressed stream as
// GNU sparse files with their real names, sizes and content.
func TestSparseWithGoTar(t *testing.T) {
	sink := &memSink{}
	all, sp, _ := writeSparse(t, sink, Options{})
	raw := decompressParts(t, sink.parts)
	tr := tar.NewReader(bytes.NewReader(raw))
	small := map[string][]byte{}
	for _, s := range sp {
		if s.e.Size < 64<<20 {
			small[s.e.Path] = s.logical()
		}
	}
	for _, want := range all {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("at %s: %v", want.Path, err)
		}
		if h.Name != want.Path || h.Size != want.Size || h.Uid != int(want.UID) {
			t.Fatalf("Go's tar reads %q (%d bytes, uid %d), wrote %q (%d, %d)", h.Name, h.Size, h.Uid, want.Path, want.Size, want.UID)
		}
		if c, ok := small[want.Path]; ok {
			got, err := io.ReadAll(tr)
			if err != nil || !bytes.Equal(got, c) {
				t.Fatalf("%s: Go's tar reads other content (%d bytes, %v)", want.Path, len(got), err)
			}
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// decompressParts returns the pax archive the parts hold.
func decompressParts(t *testing.T, parts [][]byte) []byte {
	t.Helper()
	var raw bytes.Buffer
	for _, p := range parts {
		rd, err := NewReader(&memSource{parts: [][]byte{p}}, nil, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rd.start(0, 0)
		if _, err := io.Copy(&raw, rd.pipe); err != nil {
			t.Fatal(err)
		}
		rd.Close()
	}
	return raw.Bytes()
}

// TestSparseWithGNUTar: the label's recipe (zstd and GNU tar) restores
// every sparse layout with its holes: the right size, the right bytes,
// and no more disk than its data — the 9 GiB file included.
func TestSparseWithGNUTar(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	sink := &fileSink{dir: dir}
	_, sp, _ := writeSparse(t, sink, Options{})
	out := extractWithStockTools(t, sink.close(t))
	for _, s := range sp {
		p := filepath.Join(out, s.e.Path)
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatalf("%s: %v", s.e.Path, err)
		}
		if st.Size != s.e.Size {
			t.Errorf("%s: GNU tar made %d bytes, want %d", s.e.Path, st.Size, s.e.Size)
		}
		var data int64
		for _, x := range s.data {
			data += x.Length
		}
		if alloc := st.Blocks * 512; alloc > data+int64(len(s.data)+1)*64<<10 {
			t.Errorf("%s: %d bytes allocated for %d bytes of data: the holes were written", s.e.Path, alloc, data)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range s.data {
			b := make([]byte, x.Length)
			if _, err := f.ReadAt(b, x.Offset); err != nil || !bytes.Equal(b, extentBytes(x)) {
				t.Errorf("%s: extent %+v: %v", s.e.Path, x, err)
			}
		}
		f.Close()
	}
}

// TestSparseShrinks: a sparse file whose data ends early is padded and
// flagged, and the stream goes on readable.
func TestSparseShrinks(t *testing.T) {
	sink := &memSink{}
	w, err := NewWriter(sink, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := sparseLayouts()[0]
	short := io.LimitReader(s.content(), 5000)
	err = w.WriteSparseEntry(&s.e, s.data, short)
	if !errors.Is(err, ErrShrank) || s.e.Flags&index.FlagChanged == 0 {
		t.Fatalf("WriteSparseEntry of short content: %v, flags %b", err, s.e.Flags)
	}
	next := index.Entry{Path: "z", Type: index.TypeFile, Size: 3}
	if err := w.WriteEntry(&next, bytes.NewReader([]byte("abc"))); err != nil {
		t.Fatal(err)
	}
	frames, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	rd, _ := NewReader(sink.source(), frames, ReaderOptions{})
	defer rd.Close()
	items, err := readAll(rd)
	if err != nil || len(items) != 2 || string(items[1].content) != "abc" {
		t.Fatalf("read back: %d items, %v", len(items), err)
	}
	if d := items[0].e.Digest; d != s.e.Digest {
		t.Errorf("digest of the padded content differs")
	}
}

// TestSparseBadExtents: extents that overlap, are empty, are out of order
// or lie past the size are refused and nothing is written.
func TestSparseBadExtents(t *testing.T) {
	for name, data := range map[string][]Extent{
		"overlap":   {{0, 100}, {50, 10}},
		"order":     {{500, 10}, {0, 10}},
		"empty":     {{0, 0}},
		"past end":  {{990, 20}},
		"negative":  {{-1, 5}},
		"unaligned": {{0, 100}, {512, 10}},
	} {
		sink := &memSink{}
		w, _ := NewWriter(sink, Options{})
		e := index.Entry{Path: "f", Type: index.TypeFile, Size: 1000}
		if err := w.WriteSparseEntry(&e, data, bytes.NewReader(make([]byte, 100))); !errors.Is(err, ErrEntry) {
			t.Errorf("%s: %v, want ErrEntry", name, err)
		}
		if w.Stats().Entries != 0 {
			t.Errorf("%s: an entry was written", name)
		}
		w.Abort()
	}
}

// TestSparseHostileMap: a sparse map that lies (past the size, overlapping,
// more data than the header holds) is a bad entry, never a panic or a
// read past the entry.
func TestSparseHostileMap(t *testing.T) {
	build := func(mapText string, realSize, phys int64) []byte {
		h := &tar.Header{Name: "f", Mode: 0o644, ModTime: time.Unix(0, 0)}
		hdr, err := sparseHeader(h, realSize, phys)
		if err != nil {
			t.Fatal(err)
		}
		b := append(hdr, mapText...)
		b = append(b, make([]byte, blockPad(int64(len(b))))...)
		b = append(b, make([]byte, phys-int64(len(b)-len(hdr)))...)
		b = append(b, make([]byte, blockPad(int64(len(b))))...)
		return append(b, make([]byte, 1024)...)
	}
	for name, in := range map[string][]byte{
		"past size":  build("1\n900\n200\n", 1000, 512+200),
		"overlap":    build("2\n0\n100\n50\n100\n", 1000, 512+200),
		"short phys": build("1\n0\n600\n", 1000, 512+100),
		"long phys":  build("1\n0\n10\n", 1000, 512+600),
		"bad number": build("1\n0x\n10\n", 1000, 512+10),
		"huge count": build("99999999\n0\n10\n", 1000, 512+10),
		"negative":   build("1\n-5\n10\n", 1000, 512+10),
	} {
		rd, err := NewReader(&memSource{parts: [][]byte{frameOf(t, in)}}, nil, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = rd.Next()
		// A map that claims more numbers than its blocks hold makes Go's
		// reader read on to the end: truncated.
		if !errors.Is(err, ErrEntry) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: Next gave %v, want a bad entry", name, err)
		}
		rd.Close()
	}
}

// frameOf is a one-part stream holding raw as one frame.
func frameOf(t *testing.T, raw []byte) []byte {
	t.Helper()
	return compress.AppendRawFrame(LabelFrame(Label{SavesetID: 1, Client: "test"}), raw)
}

// TestAlignExtents: extents found in a file become storable ones: whole
// blocks but the last, merged when they touch, inside the file.
func TestAlignExtents(t *testing.T) {
	for _, c := range []struct {
		in   []Extent
		size int64
		want []Extent
	}{
		{[]Extent{{0, 4096}, {8192, 4096}}, 12288, []Extent{{0, 4096}, {8192, 4096}}},
		{[]Extent{{0, 100}, {4096, 10}}, 5000, []Extent{{0, 512}, {4096, 10}}},
		{[]Extent{{0, 100}, {300, 10}}, 5000, []Extent{{0, 512}}},
		{[]Extent{{0, 4096}, {4096, 4096}}, 8192, []Extent{{0, 8192}}},
		{[]Extent{{0, 8192}}, 5000, []Extent{{0, 5000}}}, // the file shrank
		{[]Extent{{6000, 100}}, 5000, []Extent{}},        // past the end
		{[]Extent{{0, 1000}, {1100, 50}}, 1120, []Extent{{0, 1024}, {1100, 20}}},
	} {
		got := AlignExtents(slices.Clone(c.in), c.size)
		if !slices.Equal(got, c.want) || checkExtents(got, c.size) != nil {
			t.Errorf("AlignExtents(%v, %d) = %v, want %v (%v)", c.in, c.size, got, c.want, checkExtents(got, c.size))
		}
	}
}
