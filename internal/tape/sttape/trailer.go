package sttape

// The trailer that completes a tape file (doc.go): the filemark record and
// the checksum table of package tape, behind a header of their lengths.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/kura-backup/kura/internal/tape"
)

// trailer is a tape file's trailer: its filemark and checksum table.
type trailer struct {
	tape.FileInfo
	sums []uint32
}

// Trailer layout (doc.go).
const (
	trailerMagic   = "KSTT"
	trailerVersion = 1
	trailerHeader  = 28
)

func encodeTrailer(fi tape.FileInfo, table []byte) ([]byte, error) {
	mark, err := tape.EncodeFilemark(tape.Filemark{Number: fi.Number, BlockSize: fi.BlockSize, Bytes: fi.Bytes,
		Blocks: fi.Blocks, CRCTable: fi.CRCTable, Written: fi.Written, Tag: fi.Tag})
	if err != nil {
		return nil, err
	}
	sums := append(tape.EncodeChecksumHeader(fi.BlockSize), table...)
	b := make([]byte, trailerHeader, trailerHeader+len(mark)+len(sums))
	le := binary.LittleEndian
	copy(b, trailerMagic)
	le.PutUint16(b[4:], trailerVersion)
	le.PutUint32(b[8:], uint32(len(mark)))
	le.PutUint64(b[16:], uint64(len(sums)))
	le.PutUint32(b[24:], tape.CRC32C(b[:24]))
	b = append(b, mark...)
	return append(b, sums...), nil
}

// decodeTrailer parses a trailer (zero padding after it allowed). Every
// length is checked against the bytes there are before it is used.
func decodeTrailer(b []byte) (trailer, error) {
	le := binary.LittleEndian
	if len(b) < trailerHeader {
		return trailer{}, fmt.Errorf("trailer: %w: %d bytes", tape.ErrTruncated, len(b))
	}
	if string(b[:4]) != trailerMagic {
		return trailer{}, fmt.Errorf("trailer: %w: bad magic", tape.ErrCorrupt)
	}
	if got, want := le.Uint32(b[24:]), tape.CRC32C(b[:24]); got != want {
		return trailer{}, fmt.Errorf("trailer: %w: header crc %08x, want %08x", tape.ErrCorrupt, got, want)
	}
	if v := le.Uint16(b[4:]); v != trailerVersion {
		return trailer{}, fmt.Errorf("trailer: %w: unknown version %d", tape.ErrCorrupt, v)
	}
	if le.Uint16(b[6:]) != 0 || le.Uint32(b[12:]) != 0 {
		return trailer{}, fmt.Errorf("trailer: %w: reserved bytes set", tape.ErrCorrupt)
	}
	m, c := uint64(le.Uint32(b[8:])), le.Uint64(b[16:])
	rest := uint64(len(b) - trailerHeader)
	if m > tape.MaxFilemarkBytes || m > rest || c > rest-m {
		return trailer{}, fmt.Errorf("trailer: %w: %d filemark and %d checksum bytes in %d", tape.ErrTruncated, m, c, rest)
	}
	mark, err := tape.DecodeFilemark(b[trailerHeader : trailerHeader+m])
	if err != nil {
		return trailer{}, err
	}
	fi := mark.Info()
	sums := b[trailerHeader+m : trailerHeader+m+c]
	bs, err := tape.DecodeChecksumHeader(sums)
	if err != nil {
		return trailer{}, err
	}
	table := sums[tape.ChecksumHeaderBytes:]
	if bs != fi.BlockSize || uint64(len(table)) != 4*uint64(fi.Blocks) {
		return trailer{}, fmt.Errorf("trailer: %w: checksum table of %d bytes, block size %d, for %d blocks of %d",
			tape.ErrCorrupt, len(table), bs, fi.Blocks, fi.BlockSize)
	}
	if got := crc32.Checksum(table, castagnoli); got != fi.CRCTable {
		return trailer{}, fmt.Errorf("trailer: %w: checksum table crc %08x, the filemark says %08x", tape.ErrCorrupt, got, fi.CRCTable)
	}
	if bytes.ContainsFunc(b[trailerHeader+m+c:], func(r rune) bool { return r != 0 }) {
		return trailer{}, fmt.Errorf("trailer: %w: data after the checksum table", tape.ErrCorrupt)
	}
	tr := trailer{FileInfo: fi, sums: make([]uint32, fi.Blocks)}
	for i := range tr.sums {
		tr.sums[i] = le.Uint32(table[4*i:])
	}
	return tr, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
