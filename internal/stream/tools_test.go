package stream

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
)

// fileSink writes frames to files part0, part1, ... in dir, each starting
// with its label; a new part begins once a part holds limit bytes.
type fileSink struct {
	dir   string
	limit int64
	files []*os.File
	size  int64
}

func (s *fileSink) WriteFrame(f []byte) (Location, error) {
	if len(s.files) == 0 || (s.limit > 0 && s.size >= s.limit) {
		fh, err := os.Create(filepath.Join(s.dir, "part"+string(rune('0'+len(s.files)))))
		if err != nil {
			return Location{}, err
		}
		lf := LabelFrame(Label{SavesetID: 9, Part: len(s.files), Client: "test"})
		if _, err := fh.Write(lf); err != nil {
			return Location{}, err
		}
		s.files, s.size = append(s.files, fh), int64(len(lf))
	}
	loc := Location{Part: len(s.files) - 1, Offset: s.size}
	n, err := s.files[len(s.files)-1].Write(f)
	s.size += int64(n)
	return loc, err
}

func (s *fileSink) close(t *testing.T) []string {
	var names []string
	for _, f := range s.files {
		names = append(names, f.Name())
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func needTools(t *testing.T) {
	t.Helper()
	for _, c := range []string{"zstd", "tar", "sh", "cat"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is required for this test: %v", c, err)
		}
	}
}

// extractWithStockTools runs the label's recipe in a fresh directory.
func extractWithStockTools(t *testing.T, parts []string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", Recipe(parts))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", Recipe(parts), err, out)
	}
	return dir
}

func checkExtracted(t *testing.T, dir string, items []item) {
	t.Helper()
	for _, it := range items {
		e := it.e
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatalf("%q: %v", e.Path, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		switch e.Type {
		case index.TypeFile:
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(b, it.content) {
				t.Fatalf("%q: content differs (%v)", e.Path, err)
			}
		case index.TypeSymlink:
			if l, _ := os.Readlink(p); l != e.Link {
				t.Fatalf("%q: link %q, want %q", e.Path, l, e.Link)
			}
			continue
		case index.TypeHardlink:
			ti, err := os.Lstat(filepath.Join(dir, e.Link))
			if err != nil || !os.SameFile(fi, ti) {
				t.Fatalf("%q: not a hard link of %q", e.Path, e.Link)
			}
			continue
		case index.TypeFifo:
			if fi.Mode()&os.ModeNamedPipe == 0 {
				t.Fatalf("%q: not a fifo", e.Path)
			}
		}
		if uint32(st.Mode)&0o7777 != e.Mode&0o7777 {
			t.Fatalf("%q: mode %o, want %o", e.Path, st.Mode&0o7777, e.Mode)
		}
		if got := st.Mtim.Nano(); got != floorDiv(e.MTime, 1e9)*1e9 { // tar keeps whole seconds
			t.Fatalf("%q (%v): mtime %d, want %d", e.Path, e.Type, got, e.MTime)
		}
	}
}

// toolTree is a tree that an unprivileged GNU tar can restore exactly.
func toolTree(r *rand.Rand, n int) []item {
	items := genTree(r, n, false)
	for i := range items {
		e := &items[i].e
		e.UID, e.GID = uint32(os.Getuid()), uint32(os.Getgid())
		e.Xattrs = nil
		e.MTime = 1_600_000_000_000_000_000 + r.Int64N(1e17) // ns precision
		if e.Type == index.TypeDir {
			e.Mode = 0o755
		}
		e.Mode &= 0o777
	}
	return items
}

func TestStockToolsRestore(t *testing.T) {
	needTools(t)
	for _, lvl := range []compress.Level{compress.LevelNone, compress.LevelAuto} {
		t.Run(lvl.String(), func(t *testing.T) {
			items := toolTree(rand.New(rand.NewPCG(5, uint64(lvl))), 80)
			sink := &fileSink{dir: t.TempDir()}
			writeStream(t, sink, items, Options{Level: lvl, FrameSize: MinFrameSize})
			parts := sink.close(t)
			checkExtracted(t, extractWithStockTools(t, parts), items)
		})
	}
}

// Two parts: part 2 starts with its own label; cat part1 part2 | zstd -dc
// | tar x restores everything, and the Reader crosses the part boundary.
func TestStockToolsRestoreTwoParts(t *testing.T) {
	needTools(t)
	items := toolTree(rand.New(rand.NewPCG(6, 6)), 80)
	sink := &fileSink{dir: t.TempDir(), limit: 20000}
	frames := writeStream(t, sink, items, Options{Level: compress.LevelLow, FrameSize: MinFrameSize})
	parts := sink.close(t)
	if len(parts) < 2 {
		t.Fatalf("want ≥2 parts, got %d", len(parts))
	}
	checkExtracted(t, extractWithStockTools(t, parts), items)

	var raw [][]byte
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ReadLabelFrame(bytes.NewReader(b))
		if err != nil || l.Part != len(raw) {
			t.Fatalf("label of %s: %+v %v", p, l, err)
		}
		raw = append(raw, b)
	}
	rd, _ := NewReader(&memSource{parts: raw}, frames, ReaderOptions{})
	defer rd.Close()
	got, err := readAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	compareItems(t, got, items)
}

// Names: non-UTF-8 bytes and long paths through Go's archive/tar and GNU
// tar. GNU tar extracts a path of up to PATH_MAX-1 bytes; longer paths are
// stored and read back by this package (see the package doc).
func TestGNUTarNames(t *testing.T) {
	needTools(t)
	deep := func(limit int) []item {
		var items []item
		long := ""
		for i := 0; ; i++ {
			c := strings.Repeat(string(rune('a'+i%26)), 250) // 250-byte components
			if len(long)+1+len(c) > limit {
				break
			}
			if long != "" {
				long += "/"
			}
			long += c
			items = append(items, item{index.Entry{Path: long, Type: index.TypeDir, Mode: 0o755, MTime: 1e18}, nil})
		}
		f := long + "/f\xff\xfe-latin1-\xe9"
		return append(items,
			item{index.Entry{Path: f, Type: index.TypeFile, Size: 3, Mode: 0o644, MTime: 1e18 + 7}, []byte("abc")},
			item{index.Entry{Path: "l\xe9", Type: index.TypeSymlink, Link: f, Mode: 0o777}, nil},
		)
	}
	// Up to PATH_MAX-1 (4095 bytes): GNU tar restores it exactly.
	items := deep(4095 - len("/f\xff\xfe-latin1-\xe9"))
	sink := &fileSink{dir: t.TempDir()}
	writeStream(t, sink, items, Options{Level: compress.LevelLow})
	checkExtracted(t, extractWithStockTools(t, sink.close(t)), items)

	// Beyond PATH_MAX (6000 bytes): Go reads the same names back.
	items = deep(6000)
	ms := &memSink{}
	frames := writeStream(t, ms, items, Options{Level: compress.LevelLow})
	rd, _ := NewReader(ms.source(), frames, ReaderOptions{})
	defer rd.Close()
	got, err := readAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	compareItems(t, got, items)
}

func TestCorruptFrameIsNamed(t *testing.T) {
	items := genTree(rand.New(rand.NewPCG(8, 8)), 80, true)
	for _, lvl := range []compress.Level{compress.LevelNone, compress.LevelLow} {
		sink := &memSink{}
		frames := writeStream(t, sink, items, Options{Level: lvl, FrameSize: MinFrameSize})
		if len(frames) < 4 {
			t.Fatalf("%d frames", len(frames))
		}
		const bad = 2
		f := frames[bad]
		part := bytes.Clone(sink.parts[0])
		part[f.PartOffset+int64(f.CSize)/2] ^= 0x10
		for _, table := range [][]index.Frame{frames, nil} {
			rd, _ := NewReader(&memSource{parts: [][]byte{part}}, table, ReaderOptions{})
			_, err := readAll(rd)
			rd.Close()
			var fe *FrameError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || fe.Frame != bad {
				t.Fatalf("level %v table=%v: err %v, want ErrCorrupt in frame %d", lvl, table != nil, err, bad)
			}
			if !strings.Contains(err.Error(), "frame 2") {
				t.Errorf("message %q does not name the frame", err)
			}
		}
	}
}

func TestTruncatedStream(t *testing.T) {
	items := genTree(rand.New(rand.NewPCG(9, 9)), 80, true)
	sink := &memSink{}
	frames := writeStream(t, sink, items, Options{Level: compress.LevelLow, FrameSize: MinFrameSize})
	whole := sink.parts[0]
	last := frames[len(frames)-1]
	cuts := map[string]int64{
		"inside a frame":    frames[1].PartOffset + 100,
		"at frame boundary": last.PartOffset, // everything but the last frame
		"in last frame":     last.PartOffset + int64(last.CSize) - 3,
	}
	for name, cut := range cuts {
		for _, table := range [][]index.Frame{frames, nil} {
			rd, _ := NewReader(&memSource{parts: [][]byte{whole[:cut]}}, table, ReaderOptions{})
			_, err := readAll(rd)
			rd.Close()
			if !errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt) {
				t.Errorf("%s, table=%v: err %v, want ErrTruncated", name, table != nil, err)
			}
		}
	}
	// Only the label: nothing at all, still not a clean end.
	rd, _ := NewReader(&memSource{parts: [][]byte{whole[:frames[0].PartOffset]}}, nil, ReaderOptions{})
	if _, err := rd.Next(); !errors.Is(err, ErrTruncated) {
		t.Errorf("label only: %v", err)
	}
	rd.Close()
	// Garbage instead of a frame.
	rd, _ = NewReader(&memSource{parts: [][]byte{[]byte("this is not zstd at all")}}, nil, ReaderOptions{})
	if _, err := rd.Next(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("garbage: %v", err)
	}
	rd.Close()
	_ = io.EOF
}
