package sttape

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/tape"
)

func seedTrailer(t testing.TB, blocks int) []byte {
	table := make([]byte, 4*blocks)
	for i := range blocks {
		binary.LittleEndian.PutUint32(table[4*i:], uint32(i*7919))
	}
	fi := tape.FileInfo{Number: 3, BlockSize: 4096, Bytes: int64(blocks)*4096 - 5, Blocks: int64(blocks),
		CRCTable: tape.CRC32C(table), Written: time.Unix(0, 1764650000123456789).UTC(), Tag: "saveset 12 data part 1"}
	if blocks == 0 {
		fi.Bytes = 0
	}
	b, err := encodeTrailer(fi, table)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeTrailer: no input panics or allocates by a length it holds,
// and whatever decodes encodes back to the same bytes (padding aside).
func FuzzDecodeTrailer(f *testing.F) {
	for _, n := range []int{0, 1, 3, 100} {
		b := seedTrailer(f, n)
		f.Add(b)
		f.Add(append(b, make([]byte, MetaBlockSize-len(b)%MetaBlockSize)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := decodeTrailer(b)
		if err != nil {
			return
		}
		table := make([]byte, 4*len(tr.sums))
		for i, s := range tr.sums {
			binary.LittleEndian.PutUint32(table[4*i:], s)
		}
		again, err := encodeTrailer(tr.FileInfo, table)
		if err != nil {
			t.Fatalf("a decoded trailer does not encode: %v", err)
		}
		if !bytes.Equal(again, b[:len(again)]) || bytes.ContainsFunc(b[len(again):], func(r rune) bool { return r != 0 }) {
			t.Fatalf("re-encoded trailer differs")
		}
	})
}

// TestTrailerDamage: every single-bit flip in a trailer is caught.
func TestTrailerDamage(t *testing.T) {
	b := seedTrailer(t, 5)
	if _, err := decodeTrailer(b); err != nil {
		t.Fatal(err)
	}
	for bit := range 8 * len(b) {
		c := bytes.Clone(b)
		c[bit/8] ^= 1 << (bit % 8)
		if _, err := decodeTrailer(c); err == nil {
			t.Fatalf("bit %d flipped: the trailer still decodes", bit)
		}
	}
	for n := range len(b) {
		if _, err := decodeTrailer(b[:n]); err == nil {
			t.Fatalf("cut to %d bytes: the trailer still decodes", n)
		}
	}
}
