package tape_test

import (
	"flag"
	"fmt"
	"io"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

var benchSize = flag.Int64("tape.benchsize", 256<<20, "bytes per tape file in benchmarks")

var (
	benchBlocks  = []int{32 << 10, 256 << 10, 1 << 20}
	benchBuffers = []int{257 << 10, 8193 << 10, 32769 << 10}
)

func benchName(block, buffer int) string {
	return fmt.Sprintf("block=%dKiB/buffer=%dKiB", block>>10, buffer>>10)
}

// BenchmarkWrite measures one tape file of -tape.benchsize bytes written in
// 1 MiB Writes and finished (fsync included). The tape lives in TMPDIR.
func BenchmarkWrite(b *testing.B) {
	src := tapetest.Payload(1, 1<<20)
	for _, block := range benchBlocks {
		for _, buffer := range benchBuffers {
			b.Run(benchName(block, buffer), func(b *testing.B) {
				opts := tape.Options{BufferSize: buffer}
				tp, _ := newTape(b, block, int64(b.N+1)**benchSize, opts)
				b.SetBytes(*benchSize)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					w, err := tp.Append("bench")
					if err != nil {
						b.Fatal(err)
					}
					for n := int64(0); n < *benchSize; n += int64(len(src)) {
						if _, err := w.Write(src[:min(int64(len(src)), *benchSize-n)]); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := w.Finish(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRead measures reading one tape file back with 1 MiB Reads, every
// block's CRC checked. The file was just written, so it is likely in the
// page cache: this measures the drive, not the disk.
func BenchmarkRead(b *testing.B) {
	src := tapetest.Payload(1, 1<<20)
	for _, block := range benchBlocks {
		b.Run(fmt.Sprintf("block=%dKiB", block>>10), func(b *testing.B) {
			tp, _ := newTape(b, block, 2**benchSize, tape.Options{})
			w, err := tp.Append("bench")
			if err != nil {
				b.Fatal(err)
			}
			for n := int64(0); n < *benchSize; n += int64(len(src)) {
				w.Write(src[:min(int64(len(src)), *benchSize-n)])
			}
			if _, err := w.Finish(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 1<<20)
			b.SetBytes(*benchSize)
			b.ResetTimer()
			for range b.N {
				r, err := tp.Open(1)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
				if err != nil || n != *benchSize {
					b.Fatalf("read %d bytes: %v", n, err)
				}
				r.Close()
			}
		})
	}
}
