package tape

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Format limits. They bound every length read from media.
const (
	// LabelVersion is the only label version this package writes and reads.
	LabelVersion = 1
	// ChecksumVersion is the version of the block checksum header, and
	// FilemarkVersion that of a filemark; `kura version` reports them.
	ChecksumVersion = sumVersion
	FilemarkVersion = markVersion
	// MinBlockSize and MaxBlockSize bound the block size of a tape file.
	MinBlockSize = 512
	MaxBlockSize = 64 << 20
	// MaxTagLen is the longest tag a filemark carries, in bytes.
	MaxTagLen = 1024
	// maxLabelSize bounds the label file; a longer one is damaged.
	maxLabelSize = 16 << 10
	// maxBarcodeLen bounds a barcode (LTO barcodes are 8 characters).
	maxBarcodeLen = 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ---- label ----

const labelMagic = "KURA-TAPE-LABEL 1\n"

// validate checks a label's fields; it does not look at Version.
func (l Label) validate() error {
	switch {
	case l.Barcode == "" || len(l.Barcode) > maxBarcodeLen:
		return fmt.Errorf("barcode %q: want 1 to %d characters", l.Barcode, maxBarcodeLen)
	case strings.ContainsAny(l.Barcode, "/\\\x00") || l.Barcode == "." || l.Barcode == "..":
		return fmt.Errorf("barcode %q: must not contain path separators", l.Barcode)
	case !utf8.ValidString(l.Barcode) || !utf8.ValidString(l.Library):
		return fmt.Errorf("barcode or library is not UTF-8")
	case len(l.Library) > 256:
		return fmt.Errorf("library name too long")
	case l.BlockSize < MinBlockSize || l.BlockSize > MaxBlockSize:
		return fmt.Errorf("block size %d: want %d to %d", l.BlockSize, MinBlockSize, MaxBlockSize)
	case l.Capacity <= 0:
		return fmt.Errorf("capacity %d: must be positive", l.Capacity)
	case l.EarlyWarning <= 0 || l.EarlyWarning > l.Capacity:
		return fmt.Errorf("early warning %d: want 1 to capacity %d", l.EarlyWarning, l.Capacity)
	case l.Generation < 1:
		return fmt.Errorf("generation %d: must be at least 1", l.Generation)
	}
	return nil
}

// encodeLabel renders the label file:
//
//	KURA-TAPE-LABEL 1\n
//	{JSON of Label}\n
//	crc32c XXXXXXXX\n      (CRC-32C of the JSON line without its newline, hex)
func encodeLabel(l Label) ([]byte, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	l.Created = l.Created.UTC()
	l.Labelled = l.Labelled.UTC()
	js, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(labelMagic)
	b.Write(js)
	fmt.Fprintf(&b, "\ncrc32c %08x\n", crc32c(js))
	return b.Bytes(), nil
}

// decodeLabel parses a label file. Every failure wraps ErrBadLabel.
func decodeLabel(b []byte) (Label, error) {
	bad := func(format string, a ...any) (Label, error) {
		return Label{}, fmt.Errorf("%w: %s", ErrBadLabel, fmt.Sprintf(format, a...))
	}
	if len(b) > maxLabelSize {
		return bad("label file is %d bytes, more than %d", len(b), maxLabelSize)
	}
	rest, ok := bytes.CutPrefix(b, []byte(labelMagic))
	if !ok {
		return bad("missing magic line")
	}
	js, trailer, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return bad("missing checksum line")
	}
	hexsum, ok := bytes.CutPrefix(trailer, []byte("crc32c "))
	if !ok || len(hexsum) != 9 || hexsum[8] != '\n' {
		return bad("malformed checksum line")
	}
	want, err := strconv.ParseUint(string(hexsum[:8]), 16, 32)
	if err != nil || string(hexsum[:8]) != fmt.Sprintf("%08x", want) {
		return bad("malformed checksum line")
	}
	if got := crc32c(js); uint32(want) != got {
		return bad("checksum mismatch: stored %08x, computed %08x", want, got)
	}
	var l Label
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return bad("%v", err)
	}
	if dec.More() {
		return bad("trailing data after label")
	}
	if l.Version != LabelVersion {
		return bad("unknown label version %d", l.Version)
	}
	if err := l.validate(); err != nil {
		return bad("%v", err)
	}
	l.Created = l.Created.UTC()
	l.Labelled = l.Labelled.UTC()
	return l, nil
}

// ---- checksum file ----

// sumHeaderSize is the size of the checksum file header.
//
//	off size field
//	0   4    magic "KCRC"
//	4   2    version (1), little endian
//	6   2    reserved, zero
//	8   4    block size, little endian
//	12  4    CRC-32C of bytes 0..11
//	16  4·n  CRC-32C of data block i at 16+4i, little endian
const sumHeaderSize = 16

const (
	sumMagic   = "KCRC"
	sumVersion = 1
)

func encodeSumHeader(blockSize int) []byte {
	b := make([]byte, sumHeaderSize)
	copy(b, sumMagic)
	binary.LittleEndian.PutUint16(b[4:], sumVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(blockSize))
	binary.LittleEndian.PutUint32(b[12:], crc32c(b[:12]))
	return b
}

// decodeSumHeader returns the block size recorded in a checksum file header.
func decodeSumHeader(b []byte) (int, error) {
	if len(b) < sumHeaderSize {
		return 0, fmt.Errorf("checksum header: %w: %d bytes", ErrTruncated, len(b))
	}
	if string(b[:4]) != sumMagic {
		return 0, fmt.Errorf("checksum header: %w: bad magic", ErrCorrupt)
	}
	if got, want := binary.LittleEndian.Uint32(b[12:]), crc32c(b[:12]); got != want {
		return 0, fmt.Errorf("checksum header: %w: crc %08x, want %08x", ErrCorrupt, got, want)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != sumVersion {
		return 0, fmt.Errorf("checksum header: %w: unknown version %d", ErrCorrupt, v)
	}
	if binary.LittleEndian.Uint16(b[6:]) != 0 {
		return 0, fmt.Errorf("checksum header: %w: reserved bytes set", ErrCorrupt)
	}
	bs := binary.LittleEndian.Uint32(b[8:])
	if bs < MinBlockSize || bs > MaxBlockSize {
		return 0, fmt.Errorf("checksum header: %w: block size %d", ErrCorrupt, bs)
	}
	return int(bs), nil
}

// decodeSumTable parses the block CRCs after the header. It expects exactly
// blocks entries (the count comes from the filemark, which is checked first).
func decodeSumTable(b []byte, blocks int64) ([]uint32, error) {
	if blocks < 0 || int64(len(b)) < blocks*4 {
		return nil, fmt.Errorf("checksum table: %w: %d bytes for %d blocks", ErrTruncated, len(b), blocks)
	}
	t := make([]uint32, blocks)
	for i := range t {
		t[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return t, nil
}

func encodeSumTable(t []uint32) []byte {
	b := make([]byte, 4*len(t))
	for i, c := range t {
		binary.LittleEndian.PutUint32(b[4*i:], c)
	}
	return b
}

// ---- filemark ----

// markHeaderSize is the fixed part of a filemark record.
//
//	off  size field
//	0    4    magic "KFMK"
//	4    2    version (1)
//	6    2    tag length n (≤ MaxTagLen)
//	8    4    tape file number (1-based)
//	12   4    block size
//	16   8    data bytes
//	24   8    block count = ceil(bytes / block size)
//	32   4    CRC-32C over the checksum table (the 4·blocks bytes after its header)
//	36   4    reserved, zero
//	40   8    written, Unix nanoseconds UTC (signed)
//	48   n    tag, UTF-8
//	48+n 4    CRC-32C of bytes 0 .. 48+n-1
//
// All integers little endian.
const markHeaderSize = 48

const (
	markMagic   = "KFMK"
	markVersion = 1
)

// filemark is the record that completes a tape file.
type filemark struct {
	Number    int
	BlockSize int
	Bytes     int64
	Blocks    int64
	CRCTable  uint32
	Written   time.Time
	Tag       string
}

func blocksFor(bytes int64, blockSize int) int64 {
	return (bytes + int64(blockSize) - 1) / int64(blockSize)
}

func (m filemark) validate() error {
	switch {
	case m.Number < 1 || int64(m.Number) > 1<<31-1:
		return fmt.Errorf("tape file number %d", m.Number)
	case m.BlockSize < MinBlockSize || m.BlockSize > MaxBlockSize:
		return fmt.Errorf("block size %d", m.BlockSize)
	case m.Bytes < 0 || m.Bytes > 1<<62:
		return fmt.Errorf("byte count %d", m.Bytes)
	case m.Blocks != blocksFor(m.Bytes, m.BlockSize):
		return fmt.Errorf("block count %d for %d bytes of block size %d", m.Blocks, m.Bytes, m.BlockSize)
	case len(m.Tag) > MaxTagLen || !utf8.ValidString(m.Tag):
		return fmt.Errorf("tag is not UTF-8 of at most %d bytes", MaxTagLen)
	}
	return nil
}

func encodeMark(m filemark) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("filemark: %w", err)
	}
	b := make([]byte, markHeaderSize+len(m.Tag)+4)
	copy(b, markMagic)
	le := binary.LittleEndian
	le.PutUint16(b[4:], markVersion)
	le.PutUint16(b[6:], uint16(len(m.Tag)))
	le.PutUint32(b[8:], uint32(m.Number))
	le.PutUint32(b[12:], uint32(m.BlockSize))
	le.PutUint64(b[16:], uint64(m.Bytes))
	le.PutUint64(b[24:], uint64(m.Blocks))
	le.PutUint32(b[32:], m.CRCTable)
	le.PutUint64(b[40:], uint64(m.Written.UnixNano()))
	copy(b[markHeaderSize:], m.Tag)
	n := markHeaderSize + len(m.Tag)
	le.PutUint32(b[n:], crc32c(b[:n]))
	return b, nil
}

// decodeMark parses a filemark record. Every failure wraps ErrCorrupt or
// ErrTruncated.
func decodeMark(b []byte) (filemark, error) {
	le := binary.LittleEndian
	if len(b) < markHeaderSize+4 {
		return filemark{}, fmt.Errorf("filemark: %w: %d bytes", ErrTruncated, len(b))
	}
	if string(b[:4]) != markMagic {
		return filemark{}, fmt.Errorf("filemark: %w: bad magic", ErrCorrupt)
	}
	tagLen := int(le.Uint16(b[6:]))
	if tagLen > MaxTagLen {
		return filemark{}, fmt.Errorf("filemark: %w: tag length %d", ErrCorrupt, tagLen)
	}
	n := markHeaderSize + tagLen
	if len(b) < n+4 {
		return filemark{}, fmt.Errorf("filemark: %w: %d bytes, want %d", ErrTruncated, len(b), n+4)
	}
	if len(b) > n+4 {
		return filemark{}, fmt.Errorf("filemark: %w: %d trailing bytes", ErrCorrupt, len(b)-n-4)
	}
	if got, want := le.Uint32(b[n:]), crc32c(b[:n]); got != want {
		return filemark{}, fmt.Errorf("filemark: %w: crc %08x, want %08x", ErrCorrupt, got, want)
	}
	if v := le.Uint16(b[4:]); v != markVersion {
		return filemark{}, fmt.Errorf("filemark: %w: unknown version %d", ErrCorrupt, v)
	}
	if le.Uint32(b[36:]) != 0 {
		return filemark{}, fmt.Errorf("filemark: %w: reserved bytes set", ErrCorrupt)
	}
	m := filemark{
		Number:    int(le.Uint32(b[8:])),
		BlockSize: int(le.Uint32(b[12:])),
		Bytes:     int64(le.Uint64(b[16:])),
		Blocks:    int64(le.Uint64(b[24:])),
		CRCTable:  le.Uint32(b[32:]),
		Written:   time.Unix(0, int64(le.Uint64(b[40:]))).UTC(),
		Tag:       string(b[markHeaderSize:n]),
	}
	if err := m.validate(); err != nil {
		return filemark{}, fmt.Errorf("filemark: %w: %v", ErrCorrupt, err)
	}
	return m, nil
}
