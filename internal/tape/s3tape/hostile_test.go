package s3tape

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// TestDamagedObjects: every object of a tape file damaged or missing in
// the bucket is told apart, names the tape file (and the block where
// there is one), and leaves the other tape files readable.
func TestDamagedObjects(t *testing.T) {
	const bs = 4096
	cfg := testConfig(srv)
	cfg.ChunkSize = 4 * bs
	ctx := context.Background()
	setup := func(t *testing.T) (*Tape, []byte) {
		d := formatTape(t, cfg, 1<<20, bs)
		data := tapetest.Payload(30, 10*bs+100) // chunks of 4, 4 and 2+ blocks
		tapetest.WriteFile(t, d, "one", data, 0)
		tapetest.WriteFile(t, d, "two", data, 0)
		return d, data
	}
	put := func(t *testing.T, d *Tape, name string, b []byte) {
		if _, err := d.s.put(ctx, d.base+name, b, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(t *testing.T, d *Tape, name string) []byte {
		b, err := d.s.get(ctx, d.base+name, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	readErr := func(d *Tape, n int) error {
		r, err := d.Open(n)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.ReadAll(r)
		return err
	}
	intact := func(t *testing.T, d *Tape, data []byte) {
		if !bytes.Equal(tapetest.ReadFile(t, d, 2), data) {
			t.Fatal("tape file 2 differs")
		}
	}

	t.Run("BitFlipInChunk", func(t *testing.T) {
		d, data := setup(t)
		b := get(t, d, "000001.data.000002")
		b[bs+7] ^= 1 // block 5 of the tape file
		put(t, d, "000001.data.000002", b)
		var ce *tape.CorruptError
		err := readErr(d, 1)
		if !errors.As(err, &ce) || !errors.Is(err, tape.ErrCorrupt) || ce.File != 1 || ce.Block != 5 {
			t.Fatalf("read: %v; want ErrCorrupt at tape file 1, block 5", err)
		}
		intact(t, d, data)
	})
	t.Run("ChunkMissing", func(t *testing.T) {
		d, data := setup(t)
		if err := d.s.remove(ctx, d.base+"000001.data.000002"); err != nil {
			t.Fatal(err)
		}
		if err := readErr(d, 1); !errors.Is(err, tape.ErrTruncated) {
			t.Fatalf("Open with chunk 2 missing: %v; want ErrTruncated", err)
		}
		intact(t, d, data)
	})
	t.Run("ChunkShort", func(t *testing.T) {
		d, data := setup(t)
		put(t, d, "000001.data.000003", get(t, d, "000001.data.000003")[:10])
		if err := readErr(d, 1); !errors.Is(err, tape.ErrTruncated) {
			t.Fatalf("Open with chunk 3 short: %v; want ErrTruncated", err)
		}
		intact(t, d, data)
	})
	t.Run("ChecksumsMissing", func(t *testing.T) {
		d, data := setup(t)
		if err := d.s.remove(ctx, d.base+"000001.crc"); err != nil {
			t.Fatal(err)
		}
		var ce *tape.CorruptError
		if err := readErr(d, 1); !errors.As(err, &ce) || !errors.Is(err, tape.ErrTruncated) {
			t.Fatalf("Open without checksums: %v; want a CorruptError wrapping ErrTruncated", err)
		}
		intact(t, d, data)
	})
	t.Run("ChecksumsDamaged", func(t *testing.T) {
		d, data := setup(t)
		b := get(t, d, "000001.crc")
		b[20] ^= 1
		put(t, d, "000001.crc", b)
		if err := readErr(d, 1); !errors.Is(err, tape.ErrCorrupt) {
			t.Fatalf("Open with a damaged checksum table: %v; want ErrCorrupt", err)
		}
		intact(t, d, data)
	})
	t.Run("ChecksumsHuge", func(t *testing.T) {
		d, data := setup(t)
		put(t, d, "000001.crc", make([]byte, 1<<20)) // longer than the filemark allows: not read whole
		if err := readErr(d, 1); !errors.Is(err, tape.ErrCorrupt) {
			t.Fatalf("Open with an oversized checksum object: %v; want ErrCorrupt", err)
		}
		intact(t, d, data)
	})
	t.Run("FilemarkDamaged", func(t *testing.T) {
		d, data := setup(t)
		b := get(t, d, "000001.mark")
		b[17] ^= 1
		put(t, d, "000001.mark", b)
		var ce *tape.CorruptError
		if _, err := d.Files(); !errors.As(err, &ce) || ce.File != 1 {
			t.Fatalf("Files() with a damaged filemark: %v; want a CorruptError naming tape file 1", err)
		}
		if err := readErr(d, 1); !errors.Is(err, tape.ErrCorrupt) {
			t.Fatalf("Open: %v; want ErrCorrupt", err)
		}
		intact(t, d, data)
	})
	t.Run("FilemarkOfAnotherFile", func(t *testing.T) {
		d, data := setup(t)
		put(t, d, "000001.mark", get(t, d, "000002.mark"))
		if err := readErr(d, 1); !errors.Is(err, tape.ErrCorrupt) {
			t.Fatalf("Open with tape file 2's filemark: %v; want ErrCorrupt", err)
		}
		intact(t, d, data)
	})
	t.Run("ForeignObjects", func(t *testing.T) {
		d, data := setup(t)
		for _, name := range []string{"README", "000001.data.x", "00000x.mark", "000001.data.0000001", "lock.old"} {
			put(t, d, name, []byte("not kura's"))
		}
		files, err := d.Files()
		if err != nil || len(files) != 2 {
			t.Fatalf("Files() with foreign objects = %+v, %v", files, err)
		}
		if !bytes.Equal(tapetest.ReadFile(t, d, 1), data) {
			t.Fatal("tape file 1 differs")
		}
	})
	t.Run("BothLabelsDamaged", func(t *testing.T) {
		d, _ := setup(t)
		for _, name := range []string{labelName, copyName} {
			b := get(t, d, name)
			b[30] ^= 1
			put(t, d, name, b)
		}
		if _, err := Open(cfg, d.Barcode()); !errors.Is(err, tape.ErrBadLabel) {
			t.Fatalf("Open with both labels damaged: %v; want ErrBadLabel", err)
		}
	})
	t.Run("Blank", func(t *testing.T) {
		if _, err := Open(cfg, "NOTAPE"); !errors.Is(err, tape.ErrBlank) {
			t.Fatalf("Open of a barcode with no objects: %v; want ErrBlank", err)
		}
	})
}
