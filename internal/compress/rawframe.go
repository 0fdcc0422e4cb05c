package compress

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Zstd frame constants (RFC 8878, section 3.1.1).
const (
	// ZstdMagic starts every zstd frame (little-endian on media).
	ZstdMagic uint32 = 0xFD2FB528
	// MaxRawBlock is the largest block zstd allows (Block_Maximum_Size).
	MaxRawBlock = 128 << 10
)

// AppendRawFrame appends to dst one standard zstd frame whose content is src
// stored as Raw_Blocks (no compression), and returns the extended slice.
//
// Layout:
//
//	magic 28 B5 2F FD
//	Frame_Header_Descriptor: FCS_Field_Size (bits 7-6) | Single_Segment (bit 5) | Content_Checksum (bit 2)
//	Frame_Content_Size: 1, 2 (value-256), 4 or 8 bytes, little-endian
//	blocks: 3-byte header (Last_Block bit 0, Block_Type=0 Raw bits 1-2, Block_Size bits 3-23) + bytes, ≤ 128 KiB each
//	Content_Checksum: low 32 bits of XXH64(src, seed 0), little-endian
//
// Single_Segment makes Window_Size equal to the content size, so any
// decoder accepts it without a window limit beyond the frame itself.
// Empty src gives one empty last raw block.
func AppendRawFrame(dst, src []byte) []byte {
	dst = appendRawHeader(dst, len(src))
	rest := src
	for {
		b := rest[:min(len(rest), MaxRawBlock)]
		rest = rest[len(b):]
		h := uint32(len(b)) << 3 // Block_Type 0 = Raw
		if len(rest) == 0 {
			h |= 1 // Last_Block
		}
		dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
		dst = append(dst, b...)
		if len(rest) == 0 {
			break
		}
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(xxhash.Sum64(src)))
}

// appendRawHeader appends the frame header of a raw frame of n content
// bytes: magic, descriptor (single segment, content checksum) and size.
func appendRawHeader(dst []byte, n int) []byte {
	un := uint64(n)
	dst = binary.LittleEndian.AppendUint32(dst, ZstdMagic)
	const single, checksum = 1 << 5, 1 << 2
	switch {
	case un < 256:
		dst = append(dst, 0<<6|single|checksum, byte(un))
	case un < 65536+256:
		dst = append(dst, 1<<6|single|checksum)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(un-256))
	case un <= 0xFFFFFFFF:
		dst = append(dst, 2<<6|single|checksum)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(un))
	default:
		dst = append(dst, 3<<6|single|checksum)
		dst = binary.LittleEndian.AppendUint64(dst, un)
	}
	return dst
}

// RawFrameSize is the exact length AppendRawFrame produces for n content
// bytes. The encoder stores a frame raw whenever compression would not beat it.
func RawFrameSize(n int) int {
	fcs := 1
	switch {
	case n < 256:
	case n < 65536+256:
		fcs = 2
	case uint64(n) <= 0xFFFFFFFF:
		fcs = 4
	default:
		fcs = 8
	}
	blocks := (n + MaxRawBlock - 1) / MaxRawBlock
	if blocks == 0 {
		blocks = 1
	}
	return 4 + 1 + fcs + 3*blocks + n + 4
}
