package s3tape

import (
	"bytes"
	"context"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// suiteTape adds what the conformance suite's durability and label checks
// need: reopening from the bucket, and damaging one copy of the label.
type suiteTape struct {
	*Tape
	cfg Config
}

func (d *suiteTape) Reopen(t *testing.T) tape.Device {
	t.Helper()
	d2, err := Open(d.cfg, d.Barcode())
	if err != nil {
		t.Fatalf("reopen %s: %v", d.Barcode(), err)
	}
	t.Cleanup(func() { d2.Close() })
	return &suiteTape{Tape: d2, cfg: d.cfg}
}

// DamageLabel flips one bit of the label object (not its copy).
func (d *suiteTape) DamageLabel(t *testing.T) {
	t.Helper()
	key := d.base + labelName
	b, err := d.s.get(context.Background(), key, tape.MaxLabelBytes)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if _, err := d.s.put(context.Background(), key, b, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

func formatTape(t *testing.T, cfg Config, capacity int64, blockSize int) *Tape {
	t.Helper()
	d, err := Format(cfg, tape.Label{Barcode: newBarcode(), Library: "s3test", BlockSize: blockSize, Capacity: capacity})
	if err != nil {
		t.Fatalf("format: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestConformance runs the device suite on tapes in a real bucket, with
// chunks of 16 KiB (4 blocks) so that most tape files span several chunks.
func TestConformance(t *testing.T) {
	cfg := testConfig(srv)
	cfg.ChunkSize = 16 << 10
	tapetest.Run(t, func(t *testing.T) tape.Device {
		return &suiteTape{Tape: formatTape(t, cfg, 2<<20, 4096), cfg: cfg}
	})
}

// TestChunkSizeNotABlockMultiple: a chunk size that is no multiple of the
// block size is rounded down, and the file reads back.
func TestChunkSizeNotABlockMultiple(t *testing.T) {
	cfg := testConfig(srv)
	cfg.ChunkSize = 10000
	d := formatTape(t, cfg, 1<<20, 4096)
	data := tapetest.Payload(9, 50000)
	tapetest.WriteFile(t, d, "odd", data, 777)
	keys, err := d.Keys(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 7 { // 8192-byte chunks
		t.Errorf("%d chunks, want 7 of 8192 bytes: %v", len(keys), keys)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d, 1), data) {
		t.Fatal("read back differs")
	}
}
