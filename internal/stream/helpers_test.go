package stream

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
	"github.com/zeebo/xxh3"
)

// memSink keeps parts in memory; each part starts with its label frame. A
// part is full once it holds partLimit bytes (0: never), between frames.
type memSink struct {
	parts     [][]byte
	partLimit int
	label     Label
}

var _ FrameSink = (*memSink)(nil)

func (s *memSink) WriteFrame(f []byte) (Location, error) {
	if len(s.parts) == 0 || (s.partLimit > 0 && len(s.parts[len(s.parts)-1]) >= s.partLimit) {
		l := s.label
		l.Part = len(s.parts)
		s.parts = append(s.parts, LabelFrame(l))
	}
	i := len(s.parts) - 1
	loc := Location{Part: i, Offset: int64(len(s.parts[i]))}
	s.parts[i] = append(s.parts[i], f...)
	return loc, nil
}

// source returns a FrameSource over the parts (reading on across parts).
func (s *memSink) source() *memSource { return &memSource{parts: s.parts} }

type memSource struct {
	parts [][]byte
	opens int
}

var _ FrameSource = (*memSource)(nil)

func (m *memSource) OpenAt(loc Location) (io.ReadCloser, error) {
	m.opens++
	if loc.Part < 0 || loc.Part >= len(m.parts) || loc.Offset < 0 || loc.Offset > int64(len(m.parts[loc.Part])) {
		return nil, fmt.Errorf("no location %+v", loc)
	}
	rs := []io.Reader{bytes.NewReader(m.parts[loc.Part][loc.Offset:])}
	for _, p := range m.parts[loc.Part+1:] {
		rs = append(rs, bytes.NewReader(p))
	}
	return io.NopCloser(io.MultiReader(rs...)), nil
}

// item is an entry with its content, as a test writes it.
type item struct {
	e       index.Entry
	content []byte
}

// genTree returns n entries of every type (no devices unless devices is
// set), with content for files, in a directory tree.
func genTree(r *rand.Rand, n int, devices bool) []item {
	var items []item
	dirs := []string{""}
	var files []string
	name := func() string {
		switch r.IntN(10) {
		case 0:
			return strings.Repeat("long", 20+r.IntN(40)) // 80..240 bytes
		case 1:
			return "caf\xe9-latin1" // not UTF-8
		case 2:
			return "ユニコード"
		}
		return fmt.Sprintf("n%d", r.IntN(1_000_000))
	}
	seen := map[string]bool{}
	for len(items) < n {
		parent := dirs[r.IntN(len(dirs))]
		p := name()
		if parent != "" {
			p = parent + "/" + p
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		e := index.Entry{
			Path:  p,
			Mode:  uint32(0o644 | r.IntN(0o100)),
			UID:   uint32(r.IntN(70000)),
			GID:   uint32(r.IntN(70000)),
			MTime: r.Int64N(4e18),
		}
		var content []byte
		k := r.IntN(12)
		switch {
		case k < 5:
			e.Type = index.TypeFile
			switch r.IntN(4) {
			case 0:
				content = nil
			case 1:
				content = genText(r, r.IntN(MinFrameSize))
			case 2:
				content = genRand(r, r.IntN(2000))
			default:
				content = genText(r, r.IntN(700))
			}
			e.Size = int64(len(content))
			files = append(files, p)
		case k < 7:
			e.Type = index.TypeDir
			e.Mode = 0o755 | uint32(r.IntN(2))*0o1000
			dirs = append(dirs, p)
		case k < 9:
			e.Type = index.TypeSymlink
			e.Mode = 0o777
			e.Link = "../target/" + name()
		case k < 10 && len(files) > 0:
			e.Type = index.TypeHardlink
			e.Link = files[r.IntN(len(files))]
		case k < 11:
			e.Type = index.TypeFifo
		default:
			if !devices {
				continue
			}
			e.Type = index.TypeChar + index.Type(r.IntN(2))
			e.Rdev = uint64(r.IntN(300))<<8 | uint64(r.IntN(256))
		}
		if r.IntN(5) == 0 {
			e.Xattrs = map[string]string{"user.kura": "v\x00\xffbinary", "security.selinux": "system_u:object_r:x:s0"}
		}
		items = append(items, item{e, content})
	}
	return items
}

func genText(r *rand.Rand, n int) []byte {
	words := []string{"the", "backup", "tape", "of", "kura", "frame", "restore", "and", "a", "library", "drive", "saveset"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(9) == 0 {
			fmt.Fprintf(&b, " %d\n", r.IntN(100000))
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

func genRand(r *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// writeStream writes items and returns the frame table; items get their
// Offset and Digest set.
func writeStream(t testing.TB, sink FrameSink, items []item, opts Options) []index.Frame {
	t.Helper()
	w, err := NewWriter(sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if err := w.WriteEntry(&items[i].e, bytes.NewReader(items[i].content)); err != nil {
			t.Fatalf("WriteEntry(%q): %v", items[i].e.Path, err)
		}
	}
	frames, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return frames
}

// readAll reads every entry with its content; Digest is computed here.
func readAll(r *Reader) ([]item, error) {
	var out []item
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		c, err := io.ReadAll(r)
		if err != nil {
			return out, err
		}
		if e.Type == index.TypeFile {
			e.Digest = xxh3.Hash128(c).Bytes()
		}
		out = append(out, item{*e, c})
	}
}

// wantEntry is what the reader gives back for a written entry.
func wantEntry(e index.Entry) index.Entry {
	e.Mode = uint32(unixMode(e.Mode))
	if e.Type == index.TypeHardlink {
		e.Size = 0
	}
	if e.Type != index.TypeChar && e.Type != index.TypeBlock {
		e.Rdev = 0
	}
	e.Flags, e.CTime, e.Inode, e.Dev, e.Source = 0, 0, 0, 0, 0
	e.MTime = floorDiv(e.MTime, 1e9) * 1e9 // the stream keeps whole seconds; the index keeps the rest
	if len(e.Xattrs) == 0 {
		e.Xattrs = nil
	}
	return e
}

func writeFile(t testing.TB, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

var allLevels = []compress.Level{compress.LevelNone, compress.LevelLow, compress.LevelMedium, compress.LevelHigh, compress.LevelAuto}
