package compress

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// A frame that stays raw is its content cut into blocks of MaxRawBlock
// bytes, each behind a 3-byte block header, between a frame header and a
// checksum (AppendRawFrame). Filling a frame's content straight into those
// places — the raw layout — lets FinishRawFrame turn it into the frame
// without copying it, where AppendRawFrame copies every byte once more.
// Only frames that get compressed are gathered into one piece (GatherRaw).
//
// In a buffer of RawLayoutSize(n) bytes, content byte i is at RawPos(i):
//
//	[RawHeaderRoom: frame header, right-aligned][3: block header][≤128 KiB content][3][…]…[4: checksum]

// RawHeaderRoom is the room left for the frame header before the first
// block header: magic 4, descriptor 1, content size up to 8.
const RawHeaderRoom = 13

// RawPos is where content byte i of a frame sits in the raw layout.
func RawPos(i int) int {
	return RawHeaderRoom + i/MaxRawBlock*(MaxRawBlock+3) + 3 + i%MaxRawBlock
}

// RawLayoutSize is the buffer a frame of up to n content bytes needs in
// the raw layout.
func RawLayoutSize(n int) int {
	blocks := max((n+MaxRawBlock-1)/MaxRawBlock, 1)
	return RawHeaderRoom + 3*blocks + n + 4
}

// RawRun is how many content bytes from position i on are contiguous in
// the layout (up to the end of i's block), for a frame of n bytes.
func RawRun(i, n int) int {
	return min(MaxRawBlock-i%MaxRawBlock, n-i)
}

// FinishRawFrame writes the frame header, the block headers and the
// checksum around the n content bytes laid out in buf (len(buf) ≥
// RawLayoutSize(n)) and returns the frame: a slice of buf, byte for byte
// what AppendRawFrame makes of the same content.
func FinishRawFrame(buf []byte, n int) []byte {
	var hdr [RawHeaderRoom]byte
	h := appendRawHeader(hdr[:0], n)
	start := RawHeaderRoom - len(h)
	copy(buf[start:], h)
	var d xxhash.Digest
	d.Reset()
	end := RawHeaderRoom
	for i := 0; ; {
		k := min(MaxRawBlock, n-i)
		bh := uint32(k) << 3 // Block_Type 0 = Raw
		if i+k == n {
			bh |= 1 // Last_Block
		}
		p := RawPos(i) - 3
		buf[p], buf[p+1], buf[p+2] = byte(bh), byte(bh>>8), byte(bh>>16)
		d.Write(buf[p+3 : p+3+k])
		end = p + 3 + k
		i += k
		if i == n {
			break
		}
	}
	binary.LittleEndian.PutUint32(buf[end:], uint32(d.Sum64()))
	return buf[start : end+4]
}

// GatherRaw appends the n content bytes laid out in buf to dst.
func GatherRaw(dst, buf []byte, n int) []byte {
	for i := 0; i < n; {
		k := RawRun(i, n)
		p := RawPos(i)
		dst = append(dst, buf[p:p+k]...)
		i += k
	}
	return dst
}

// ProbeRaw is Probe of the n content bytes laid out in buf: the same
// sample, taken from where the bytes lie.
func (e *Encoder) ProbeRaw(buf []byte, n int) float64 {
	return e.probe(n, func(dst []byte, i, end int) []byte {
		for i < end {
			k := min(RawRun(i, n), end-i)
			p := RawPos(i)
			dst = append(dst, buf[p:p+k]...)
			i += k
		}
		return dst
	})
}
