package stream

import (
	"bytes"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
)

var update = flag.Bool("update", false, "rewrite testdata seeds")

// TestSeedFiles writes (with -update) and checks the fuzz seeds in
// testdata: a label frame and a small two-level stream.
func TestSeedFiles(t *testing.T) {
	label := LabelFrame(testLabel())
	items := genTree(rand.New(rand.NewPCG(11, 11)), 12, true)
	for i := range items {
		if len(items[i].content) > 3000 {
			items[i].content = items[i].content[:3000]
			items[i].e.Size = 3000
		}
	}
	sink := &memSink{}
	writeStream(t, sink, items, Options{Level: compress.LevelLow})
	seeds := map[string][]byte{"label.bin": label, "stream.kura": sink.parts[0]}
	for name, b := range seeds {
		p := filepath.Join("testdata", name)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, b)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -update once)", err)
		}
		if name == "label.bin" && !bytes.Equal(got, b) {
			t.Errorf("%s: the label encoding changed; labels on media must stay readable", p)
		}
	}
	// Old seeds must still read: the stream, and the label as written
	// before its recipe line gained --xattrs (its text changed, its JSON
	// did not).
	old, err := os.ReadFile(filepath.Join("testdata", "label-2026-12.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := ReadLabelFrame(bytes.NewReader(old)); err != nil || l.SavesetID != testLabel().SavesetID {
		t.Errorf("testdata/label-2026-12.bin: %+v, %v", l, err)
	}
	b, _ := os.ReadFile(filepath.Join("testdata", "stream.kura"))
	rd, _ := NewReader(&memSource{parts: [][]byte{b}}, nil, ReaderOptions{})
	defer rd.Close()
	if got, err := readAll(rd); err != nil || len(got) != len(items) {
		t.Fatalf("testdata/stream.kura: %d entries, %v", len(got), err)
	}
}

func FuzzReadLabelFrame(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "label.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:20])
	if old, err := os.ReadFile(filepath.Join("testdata", "label-2026-12.bin")); err == nil {
		f.Add(old)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		l, err := ReadLabelFrame(bytes.NewReader(in))
		if err != nil {
			return
		}
		// Whatever parses re-encodes and parses to the same label.
		l2, err := ReadLabelFrame(bytes.NewReader(LabelFrame(l)))
		if err != nil {
			t.Fatalf("re-encoded label does not parse: %v", err)
		}
		if l.SavesetID != l2.SavesetID || l.Client != l2.Client || len(l.Paths) < len(l2.Paths) {
			t.Fatalf("re-encoded label differs: %+v vs %+v", l, l2)
		}
	})
}

func FuzzReader(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "stream.kura"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add(sparseSeed())
	f.Fuzz(func(t *testing.T, in []byte) {
		rd, err := NewReader(&memSource{parts: [][]byte{in}}, nil, ReaderOptions{MaxFrameSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		var total int64
		for i := 0; i < 10000; i++ {
			e, err := rd.Next()
			if err != nil {
				return
			}
			if e.Offset < 0 {
				t.Fatalf("negative offset")
			}
			var n int64
			if ext := rd.Extents(); ext != nil {
				// Holes are free: only data counts against the input.
				for _, x := range ext {
					n += x.Length
				}
				if rd.Discard(e.Size) != nil {
					return
				}
			} else {
				n, _ = io.Copy(io.Discard, rd)
			}
			if total += n; total > 64<<20 {
				t.Fatalf("more content than input allows")
			}
		}
	})
}

// sparseSeed is a small stream with sparse files between plain ones.
func sparseSeed() []byte {
	sink := &memSink{}
	w, err := NewWriter(sink, Options{Level: compress.LevelNone})
	if err != nil {
		panic(err)
	}
	plain := index.Entry{Path: "a", Type: index.TypeFile, Size: 5}
	w.WriteEntry(&plain, strings.NewReader("hello"))
	for i, data := range [][]Extent{{{0, 512}, {4096, 7}}, nil, {{1 << 30, 3}}} {
		e := index.Entry{Path: "s" + strconv.Itoa(i), Type: index.TypeFile, Size: 1<<30 + 100, Xattrs: map[string]string{"user.x": "y"}}
		var content []byte
		for _, x := range data {
			content = append(content, bytes.Repeat([]byte{'d'}, int(x.Length))...)
		}
		if err := w.WriteSparseEntry(&e, data, bytes.NewReader(content)); err != nil {
			panic(err)
		}
	}
	if _, err := w.Close(); err != nil {
		panic(err)
	}
	return sink.parts[0]
}
