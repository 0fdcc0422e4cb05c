package index

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// build1M writes the 1,000,102-entry test2 tree (100 directories of 10,000
// files) to a file in dir and opens it.
func build1M(b *testing.B, dir string) *Reader {
	b.Helper()
	p := filepath.Join(dir, "test2.idx")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := NewWriter(bw, []byte(`{"saveset":1}`))
	test2Each(100, 10_000, false, func(e *Entry) {
		if err := w.Add(e); err != nil {
			b.Fatal(err)
		}
	})
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	r, err := OpenFile(p)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("test2: %d entries, %d bytes, %.2f bytes/entry", w.Len(), w.Size(), float64(w.Size())/float64(w.Len()))
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkList1M lists directories of a 1M-entry index file: a directory of
// 10,000 files (5 blocks) and one of 100 subdirectories.
func BenchmarkList1M(b *testing.B) {
	r := build1M(b, b.TempDir())
	rng := rand.New(rand.NewPCG(1, 1))
	b.Run("dir=10000", func(b *testing.B) {
		for b.Loop() {
			d := fmt.Sprintf("data/test2/d%03d", rng.IntN(100))
			l, err := r.List(d)
			if err != nil || len(l) != 10_000 {
				b.Fatalf("List(%q): %d, %v", d, len(l), err)
			}
		}
	})
	b.Run("dir=100", func(b *testing.B) {
		for b.Loop() {
			l, err := r.List("data/test2")
			if err != nil || len(l) != 100 {
				b.Fatalf("List: %d, %v", len(l), err)
			}
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			d := rng.IntN(100)
			p := fmt.Sprintf("data/test2/d%03d/f%06d.txt", d, d*10_000+rng.IntN(10_000))
			if _, ok, err := r.Lookup(p); !ok || err != nil {
				b.Fatalf("Lookup(%q): %v, %v", p, ok, err)
			}
		}
	})
}

// BenchmarkWrite writes the test2 tree of 100,102 entries to io.Discard and
// reports entries/s and bytes/entry.
func BenchmarkWrite(b *testing.B) {
	for _, jitter := range []bool{false, true} {
		b.Run(fmt.Sprintf("jitter=%v", jitter), func(b *testing.B) {
			es := test2(10, 10_000, jitter)
			var size int64
			var d time.Duration
			for b.Loop() {
				start := time.Now()
				w := NewWriter(io.Discard, nil)
				for i := range es {
					if err := w.Add(&es[i]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				d += time.Since(start)
				size = w.Size()
			}
			b.ReportMetric(float64(size)/float64(len(es)), "bytes/entry")
			b.ReportMetric(float64(len(es))*float64(b.N)/d.Seconds(), "entries/s")
		})
	}
}

// BenchmarkIter reads every entry of the test2 tree of 100,102 entries.
func BenchmarkIter(b *testing.B) {
	es := test2(10, 10_000, false)
	data := build(b, nil, nil, es)
	r := open(b, data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		it := r.Iter()
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != len(es) {
			b.Fatalf("%d entries, %v", n, it.Err())
		}
	}
	b.ReportMetric(float64(len(es))*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
