package tape

import (
	"errors"
	"testing"
	"time"
)

// TestExportedCodecs: the record codecs other devices use give the same
// bytes as a folder tape's and reject what a folder tape's reader rejects.
func TestExportedCodecs(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	l, err := NewLabel(Label{Barcode: "S3T001", Library: "cloud", BlockSize: 4096, Capacity: 1 << 20}, now)
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != LabelVersion || l.Generation != 1 || l.EarlyWarning != l.Capacity || !l.Created.Equal(now) {
		t.Fatalf("NewLabel = %+v", l)
	}
	if _, err := NewLabel(Label{Barcode: "a/b", BlockSize: 4096, Capacity: 1}, now); err == nil {
		t.Error("NewLabel accepted a barcode with a slash")
	}
	b, err := EncodeLabel(l)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeLabel(b); err != nil || got != l {
		t.Fatalf("DecodeLabel(EncodeLabel) = %+v, %v", got, err)
	}
	b[len(b)/2] ^= 1
	if _, err := DecodeLabel(b); !errors.Is(err, ErrBadLabel) {
		t.Errorf("damaged label: %v, want ErrBadLabel", err)
	}

	crcs := []uint32{CRC32C([]byte("block 0")), UpdateCRC32C(CRC32C([]byte("blo")), []byte("ck 1"))}
	if crcs[1] != CRC32C([]byte("block 1")) {
		t.Fatal("UpdateCRC32C does not continue CRC32C")
	}
	m := Filemark{Number: 3, BlockSize: 4096, Bytes: 5000, Blocks: 2, CRCTable: ChecksumTableCRC(crcs), Written: now, Tag: "saveset 1"}
	mb, err := EncodeFilemark(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(mb) > MaxFilemarkBytes {
		t.Errorf("filemark of %d bytes, more than MaxFilemarkBytes", len(mb))
	}
	got, err := DecodeFilemark(mb)
	if err != nil || got != m {
		t.Fatalf("DecodeFilemark(EncodeFilemark) = %+v, %v", got, err)
	}
	if info := got.Info(); info.Status != FileComplete || info.Bytes != 5000 || info.Tag != "saveset 1" {
		t.Errorf("Info() = %+v", info)
	}
	sums := EncodeChecksums(4096, crcs)
	if len(sums) != ChecksumHeaderBytes+8 {
		t.Fatalf("checksum file of %d bytes", len(sums))
	}
	if table, err := DecodeChecksums(sums, m); err != nil || len(table) != 2 || table[1] != crcs[1] {
		t.Fatalf("DecodeChecksums = %v, %v", table, err)
	}
	if _, err := DecodeChecksums(sums[:len(sums)-1], m); !errors.Is(err, ErrTruncated) {
		t.Errorf("short checksum file: %v, want ErrTruncated", err)
	}
	bad := append([]byte(nil), sums...)
	bad[ChecksumHeaderBytes] ^= 1
	if _, err := DecodeChecksums(bad, m); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged checksum table: %v, want ErrCorrupt", err)
	}
	other := m
	other.BlockSize = 8192
	if _, err := DecodeChecksums(sums, other); !errors.Is(err, ErrCorrupt) {
		t.Errorf("block size differing from the filemark's: %v, want ErrCorrupt", err)
	}
}
