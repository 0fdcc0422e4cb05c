package tape

import (
	"fmt"
	"hash/crc32"
	"time"
	"unicode/utf8"
)

// The record formats of doc.go, for devices in other packages (object
// storage, a physical tape's trailers) that keep a tape's label, checksum file and filemark byte for
// byte as a folder tape does, so every kind of media reads the same way.

// Record size limits: a device reads no more than these from its media.
const (
	// MaxLabelBytes bounds a label record.
	MaxLabelBytes = maxLabelSize
	// MaxFilemarkBytes bounds a filemark record.
	MaxFilemarkBytes = markHeaderSize + MaxTagLen + 4
	// ChecksumHeaderBytes is the size of a checksum file's header; the
	// CRC of block i follows at ChecksumHeaderBytes+4i.
	ChecksumHeaderBytes = sumHeaderSize
)

// Filemark is the record that completes a tape file (doc.go).
type Filemark struct {
	Number    int
	BlockSize int
	Bytes     int64
	Blocks    int64 // ceil(Bytes / BlockSize)
	CRCTable  uint32
	Written   time.Time
	Tag       string
}

// Info is the FileInfo of the complete tape file the filemark ends.
func (m Filemark) Info() FileInfo {
	return FileInfo{Number: m.Number, Status: FileComplete, Bytes: m.Bytes, Blocks: m.Blocks,
		BlockSize: m.BlockSize, CRCTable: m.CRCTable, Written: m.Written, Tag: m.Tag}
}

// NewLabel completes a label for a new tape as Format does: Version,
// Generation 1, Created and Labelled at now, a zero EarlyWarning meaning
// Capacity. It checks the fields.
func NewLabel(l Label, now time.Time) (Label, error) {
	l.Version = LabelVersion
	l.Generation = 1
	l.Created, l.Labelled = now.UTC(), now.UTC()
	if l.EarlyWarning == 0 {
		l.EarlyWarning = l.Capacity
	}
	if err := l.validate(); err != nil {
		return Label{}, err
	}
	return l, nil
}

// CheckTag checks the tag of a tape file to append: UTF-8 of at most
// MaxTagLen bytes, as the filemark holds it.
func CheckTag(tag string) error {
	if len(tag) > MaxTagLen || !utf8.ValidString(tag) {
		return fmt.Errorf("append: tag is not UTF-8 of at most %d bytes", MaxTagLen)
	}
	return nil
}

// Relabelled is the label a relabel writes on a tape labelled old when
// asked for l, as every device relabels: the barcode stays (another one is
// an error), each non-zero field of l replaces old's (a capacity below the
// early warning pulls it down), the generation follows gen (the highest
// the tape has seen), labelled at now. It checks the fields.
func Relabelled(old, l Label, gen int, now time.Time) (Label, error) {
	if l.Barcode != "" && l.Barcode != old.Barcode {
		return Label{}, fmt.Errorf("relabel %s: cannot change the barcode to %q", old.Barcode, l.Barcode)
	}
	nl := old
	if l.Library != "" {
		nl.Library = l.Library
	}
	if l.BlockSize != 0 {
		nl.BlockSize = l.BlockSize
	}
	if l.Capacity != 0 {
		nl.Capacity = l.Capacity
		if l.EarlyWarning == 0 && nl.EarlyWarning > nl.Capacity {
			nl.EarlyWarning = nl.Capacity
		}
	}
	if l.EarlyWarning != 0 {
		nl.EarlyWarning = l.EarlyWarning
	}
	nl.Version = LabelVersion
	nl.Generation = gen + 1
	nl.Labelled = now.UTC()
	if err := nl.validate(); err != nil {
		return Label{}, fmt.Errorf("relabel %s: %w", old.Barcode, err)
	}
	return nl, nil
}

// EncodeLabel renders a label record; DecodeLabel parses one (every failure
// wraps ErrBadLabel).
func EncodeLabel(l Label) ([]byte, error) { return encodeLabel(l) }

// DecodeLabel parses a label record; every failure wraps ErrBadLabel.
func DecodeLabel(b []byte) (Label, error) { return decodeLabel(b) }

// EncodeFilemark renders a filemark record.
func EncodeFilemark(m Filemark) ([]byte, error) { return encodeMark(filemark(m)) }

// DecodeFilemark parses a filemark record; every failure wraps ErrCorrupt
// or ErrTruncated.
func DecodeFilemark(b []byte) (Filemark, error) {
	m, err := decodeMark(b)
	return Filemark(m), err
}

// EncodeChecksumHeader renders the header of a checksum table for blocks
// of blockSize bytes; the CRCs follow it.
func EncodeChecksumHeader(blockSize int) []byte { return encodeSumHeader(blockSize) }

// DecodeChecksumHeader returns the block size a checksum table's header
// records; failures wrap ErrCorrupt or ErrTruncated.
func DecodeChecksumHeader(b []byte) (int, error) { return decodeSumHeader(b) }

// EncodeChecksums renders a whole checksum file: the header for blockSize
// and one CRC-32C per block.
func EncodeChecksums(blockSize int, crcs []uint32) []byte {
	return append(encodeSumHeader(blockSize), encodeSumTable(crcs)...)
}

// ChecksumTableCRC is the CRC-32C over the checksum table (the filemark's
// CRCTable) of crcs.
func ChecksumTableCRC(crcs []uint32) uint32 { return crc32c(encodeSumTable(crcs)) }

// DecodeChecksums parses a whole checksum file against the filemark that
// completes it: the header's block size, the length and the table's CRC
// must match. Failures wrap ErrCorrupt or ErrTruncated.
func DecodeChecksums(b []byte, m Filemark) ([]uint32, error) {
	want := sumHeaderSize + 4*m.Blocks
	if m.Blocks < 0 || int64(len(b)) < want {
		return nil, fmt.Errorf("checksum file: %w: %d bytes, want %d", ErrTruncated, len(b), want)
	}
	b = b[:want]
	bs, err := decodeSumHeader(b)
	if err != nil {
		return nil, err
	}
	if bs != m.BlockSize {
		return nil, fmt.Errorf("checksum file: %w: block size %d, filemark says %d", ErrCorrupt, bs, m.BlockSize)
	}
	if got := crc32c(b[sumHeaderSize:]); got != m.CRCTable {
		return nil, fmt.Errorf("checksum table: %w: crc %08x, filemark says %08x", ErrCorrupt, got, m.CRCTable)
	}
	return decodeSumTable(b[sumHeaderSize:], m.Blocks)
}

// CRC32C is the CRC-32C (Castagnoli) every block, label and record carries.
func CRC32C(b []byte) uint32 { return crc32c(b) }

// UpdateCRC32C extends a running CRC-32C with b.
func UpdateCRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }
