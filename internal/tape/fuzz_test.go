package tape

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// addSeeds adds every file matching testdata/seeds/pattern to the corpus.
func addSeeds(f *testing.F, pattern string) {
	names, err := filepath.Glob(filepath.Join("testdata", "seeds", pattern))
	if err != nil || len(names) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzLabel(f *testing.F) {
	addSeeds(f, "label*")
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeLabel(b)
		if err != nil {
			return
		}
		enc, err := encodeLabel(l)
		if err != nil {
			t.Fatalf("decoded label does not encode: %v", err)
		}
		l2, err := decodeLabel(enc)
		if err != nil {
			t.Fatalf("re-encoded label does not decode: %v", err)
		}
		if l2 != l {
			t.Fatalf("round trip changed the label:\n%+v\n%+v", l, l2)
		}
	})
}

func FuzzSums(f *testing.F) {
	addSeeds(f, "*.crc")
	f.Fuzz(func(t *testing.T, b []byte) {
		bs, err := decodeSumHeader(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeSumHeader(bs), b[:sumHeaderSize]) {
			t.Fatal("header does not re-encode to the same bytes")
		}
		rest := b[sumHeaderSize:]
		n := int64(len(rest) / 4)
		table, err := decodeSumTable(rest, n)
		if err != nil {
			t.Fatalf("table of %d entries: %v", n, err)
		}
		if !bytes.Equal(encodeSumTable(table), rest[:4*n]) {
			t.Fatal("table does not re-encode to the same bytes")
		}
		if _, err := decodeSumTable(rest, n+1); err == nil {
			t.Fatal("table decoded with more entries than bytes")
		}
	})
}

func FuzzMark(f *testing.F) {
	addSeeds(f, "*.mark")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMark(b)
		if err != nil {
			return
		}
		enc, err := encodeMark(m)
		if err != nil {
			t.Fatalf("decoded filemark does not encode: %v", err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatal("filemark does not re-encode to the same bytes")
		}
	})
}

func TestCodecRoundTrip(t *testing.T) {
	when := time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)
	m := filemark{Number: 3, BlockSize: 4096, Bytes: 10000, Blocks: 3, CRCTable: 0xdeadbeef, Written: when, Tag: "tag ü"}
	b, err := encodeMark(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeMark(b); err != nil || got != m {
		t.Fatalf("decodeMark = %+v, %v", got, err)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := decodeMark(c); err == nil {
			t.Fatalf("filemark with byte %d flipped decodes", i)
		}
	}
	for i := range len(b) {
		if _, err := decodeMark(b[:i]); err == nil {
			t.Fatalf("filemark cut to %d bytes decodes", i)
		}
	}
	if _, err := encodeMark(filemark{Number: 1, BlockSize: 4096, Bytes: 1, Blocks: 2}); err == nil {
		t.Error("filemark with a wrong block count encodes")
	}
	h := encodeSumHeader(65536)
	if bs, err := decodeSumHeader(h); err != nil || bs != 65536 {
		t.Fatalf("decodeSumHeader = %d, %v", bs, err)
	}
	for i := range h {
		c := bytes.Clone(h)
		c[i] ^= 1
		if _, err := decodeSumHeader(c); err == nil {
			t.Fatalf("checksum header with byte %d flipped decodes", i)
		}
	}
}

// FuzzLabelCopies: whatever the two copies of the label hold, readLabel
// returns a label decoded from one of them, prefers a good label file, and
// reports damage unless both agree (or the copy is absent).
func FuzzLabelCopies(f *testing.F) {
	good, err := os.ReadFile(filepath.Join("testdata", "seeds", "label"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, good, true)
	f.Add(good, []byte{}, true)
	f.Add(good[:10], good, true)
	f.Add(good, good, false)
	f.Fuzz(func(t *testing.T, label, copyb []byte, withCopy bool) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, labelName), label, 0o644); err != nil {
			t.Fatal(err)
		}
		if withCopy {
			if err := os.WriteFile(filepath.Join(dir, copyName), copyb, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l, damage, err := readLabel(OSFS(), dir)
		l1, err1 := decodeLabel(label)
		l2, err2 := decodeLabel(copyb)
		if !withCopy {
			err2 = ErrBlank
		}
		switch {
		case err1 == nil:
			if err != nil || l != l1 {
				t.Fatalf("good label file: got %+v, %v", l, err)
			}
			if (damage == nil) != (!withCopy || (err2 == nil && l2 == l1)) {
				t.Fatalf("damage %v with copy %v (%v)", damage, withCopy, err2)
			}
		case err2 == nil:
			if err != nil || l != l2 || !errors.Is(damage, ErrBadLabel) {
				t.Fatalf("good copy only: got %+v, %v, %v", l, damage, err)
			}
		default:
			if !errors.Is(err, ErrBadLabel) {
				t.Fatalf("no good copy: err %v", err)
			}
		}
	})
}
