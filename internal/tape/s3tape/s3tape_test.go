package s3tape

import (
	"bytes"
	"context"
	"errors"
	"strings"
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

// TestRelabel: a recycled tape loses its tape files (chunks, checksums,
// filemarks) and gets the next generation; a tape being written is not
// relabelled.
func TestRelabel(t *testing.T) {
	cfg := testConfig(srv)
	cfg.ChunkSize = 16 << 10
	d := formatTape(t, cfg, 1<<20, 4096)
	for i := range 3 {
		tapetest.WriteFile(t, d, "old", tapetest.Payload(uint64(40+i), 50000), 0)
	}
	other, err := Open(cfg, d.Barcode())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	w, err := other.Append("busy")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Relabel(tape.Label{}); !errors.Is(err, tape.ErrBusy) {
		t.Fatalf("Relabel while another device writes: %v, want ErrBusy", err)
	}
	w.Abort()
	if err := d.Relabel(tape.Label{Library: "recycled"}); err != nil {
		t.Fatal(err)
	}
	l := d.Label()
	if l.Generation != 2 || l.Library != "recycled" || d.Used() != 0 {
		t.Fatalf("after Relabel: label %+v, Used() %d", l, d.Used())
	}
	objs, err := d.s.list(context.Background(), d.base)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, strings.TrimPrefix(o.key, d.base))
	}
	if strings.Join(names, " ") != "label label.copy" {
		t.Fatalf("objects after Relabel: %v, want the two labels only", names)
	}
	data := tapetest.Payload(43, 9000)
	if info := tapetest.WriteFile(t, d, "new", data, 0); info.Number != 1 {
		t.Errorf("first tape file after Relabel is number %d", info.Number)
	}
	d2, err := Open(cfg, d.Barcode())
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.Label() != l || !bytes.Equal(tapetest.ReadFile(t, d2, 1), data) {
		t.Fatalf("reopened after Relabel: %+v", d2.Label())
	}
}
