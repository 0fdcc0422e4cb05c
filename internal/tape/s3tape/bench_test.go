package s3tape

import (
	"fmt"
	"io"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// BenchmarkWrite and BenchmarkRead move 64 MiB tape files through the
// package's versitygw on 127.0.0.1 (a loopback store: the figures are the
// device's own cost, not a network's). On the shared 2-core VM, client and
// server on the same cores, -benchtime=4x: write 55-103 MB/s with one part
// uploading while the next fills and 54-85 MB/s without (within the noise:
// the overlap pays when the bytes come from a producer and a network, not
// from memory over loopback); read 738-1144 MB/s.
func BenchmarkWrite(b *testing.B) {
	for _, cs := range []int64{16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("chunk=%dMiB", cs>>20), func(b *testing.B) {
			cfg := testConfig(srv)
			cfg.ChunkSize = cs
			d, err := Format(cfg, tape.Label{Barcode: newBarcode(), BlockSize: 256 << 10, Capacity: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			data := tapetest.Payload(1, 64<<20)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				tapetest.WriteFile(b, d, "bench", data, 256<<10)
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	cfg := testConfig(srv)
	cfg.ChunkSize = 16 << 20
	d, err := Format(cfg, tape.Label{Barcode: newBarcode(), BlockSize: 256 << 10, Capacity: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	data := tapetest.Payload(2, 64<<20)
	tapetest.WriteFile(b, d, "bench", data, 0)
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		r, err := d.Open(1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, r, buf); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
