package tape

// The records of doc.go, exported for devices outside this package that keep
// the same format on other media (sttape writes them into a tape file's
// trailer). Each encoder validates what it writes and each decoder checks
// every length and checksum, as the folder tape's own readers do.

// ChecksumHeaderSize is the size of a checksum table's header ("KCRC").
const ChecksumHeaderSize = sumHeaderSize

// MaxFilemarkSize is the size of the longest filemark record.
const MaxFilemarkSize = markHeaderSize + MaxTagLen + 4

// MaxLabelSize is the size of the longest label record.
const MaxLabelSize = maxLabelSize

// CRC32C is the CRC-32C (Castagnoli) every block and record carries.
func CRC32C(b []byte) uint32 { return crc32c(b) }

// EncodeLabel renders a label record (doc.go); the label is validated.
func EncodeLabel(l Label) ([]byte, error) { return encodeLabel(l) }

// DecodeLabel parses a label record; every failure wraps ErrBadLabel.
func DecodeLabel(b []byte) (Label, error) { return decodeLabel(b) }

// EncodeChecksumHeader renders the header of a block checksum table.
func EncodeChecksumHeader(blockSize int) []byte { return encodeSumHeader(blockSize) }

// DecodeChecksumHeader returns the block size a checksum table header
// records; failures wrap ErrCorrupt or ErrTruncated.
func DecodeChecksumHeader(b []byte) (int, error) { return decodeSumHeader(b) }

// EncodeFilemark renders the filemark record of a complete tape file from
// its Number, BlockSize, Bytes, Blocks, CRCTable, Written and Tag.
func EncodeFilemark(fi FileInfo) ([]byte, error) {
	return encodeMark(filemark{Number: fi.Number, BlockSize: fi.BlockSize, Bytes: fi.Bytes, Blocks: fi.Blocks,
		CRCTable: fi.CRCTable, Written: fi.Written, Tag: fi.Tag})
}

// DecodeFilemark parses a filemark record into the FileInfo of a complete
// tape file; failures wrap ErrCorrupt or ErrTruncated.
func DecodeFilemark(b []byte) (FileInfo, error) {
	m, err := decodeMark(b)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Number: m.Number, Status: FileComplete, Bytes: m.Bytes, Blocks: m.Blocks, BlockSize: m.BlockSize,
		CRCTable: m.CRCTable, Written: m.Written, Tag: m.Tag}, nil
}
