package stream

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
)

type discardSink struct{ off int64 }

func (d *discardSink) WriteFrame(f []byte) (Location, error) {
	loc := Location{Offset: d.off}
	d.off += int64(len(f))
	return loc, nil
}

func benchWrite(b *testing.B, content []byte, opts Options) {
	b.SetBytes(int64(len(content)))
	var st Stats
	for i := 0; i < b.N; i++ {
		w, err := NewWriter(&discardSink{}, opts)
		if err != nil {
			b.Fatal(err)
		}
		e := index.Entry{Path: "f", Type: index.TypeFile, Size: int64(len(content))}
		if err := w.WriteEntry(&e, bytes.NewReader(content)); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
		st = w.Stats()
	}
	b.ReportMetric(float64(st.Media)/float64(st.Uncompressed), "ratio")
}

// BenchmarkWriter: writer throughput per level on text and random data
// (16 MiB, default frame size and workers).
func BenchmarkWriter(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	data := map[string][]byte{"text": genText(r, 16<<20), "random": genRand(r, 16<<20)}
	for _, kind := range []string{"text", "random"} {
		for _, lvl := range allLevels {
			b.Run(fmt.Sprintf("%s/%v", kind, lvl), func(b *testing.B) {
				benchWrite(b, data[kind], Options{Level: lvl})
			})
		}
	}
}

// BenchmarkWriterFrameSize compares frame sizes (level low, text).
func BenchmarkWriterFrameSize(b *testing.B) {
	content := genText(rand.New(rand.NewPCG(2, 2)), 16<<20)
	for _, fs := range []int{256 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", fs>>10), func(b *testing.B) {
			benchWrite(b, content, Options{Level: compress.LevelLow, FrameSize: fs})
		})
	}
}
