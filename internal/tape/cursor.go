package tape

import (
	"fmt"
	"io"
)

// BlockCursor is the read position in a complete tape file stored in blocks
// of its BlockSize (the last may be short), for any device: Read and Seek
// over blocks that the device's load fetches and checks. A whole aligned
// block is loaded straight into the caller's buffer; anything else goes
// through one held block. Seek fetches nothing. Not for concurrent use.
type BlockCursor struct {
	info FileInfo
	// load reads block k into dst (len ≥ BlockLen(k)), checks it and
	// returns it.
	load func(dst []byte, k int64) ([]byte, error)
	pos  int64
	blk  int64  // block held in buf, or -1
	buf  []byte // the checked block blk
}

// NewBlockCursor returns a cursor at the start of the tape file info.
func NewBlockCursor(info FileInfo, load func(dst []byte, k int64) ([]byte, error)) BlockCursor {
	return BlockCursor{info: info, load: load, blk: -1, buf: make([]byte, 0, info.BlockSize)}
}

// BlockLen is the length of block k.
func (c *BlockCursor) BlockLen(k int64) int {
	bs := int64(c.info.BlockSize)
	return int(min(bs, c.info.Bytes-k*bs))
}

// Read reads from the current position; io.EOF at the end of the file.
func (c *BlockCursor) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 && c.pos < c.info.Bytes {
		bs := int64(c.info.BlockSize)
		k := c.pos / bs
		off := int(c.pos - k*bs)
		if off == 0 && c.blk != k && len(p) >= c.BlockLen(k) {
			b, err := c.load(p, k)
			if err != nil {
				return total, err
			}
			n := len(b)
			p, total, c.pos = p[n:], total+n, c.pos+int64(n)
			continue
		}
		if c.blk != k {
			c.blk = -1
			b, err := c.load(c.buf[:cap(c.buf)], k)
			if err != nil {
				return total, err
			}
			c.buf, c.blk = b, k
		}
		n := copy(p, c.buf[off:])
		p, total, c.pos = p[n:], total+n, c.pos+int64(n)
	}
	if total == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return total, nil
}

// Seek sets the position in O(1): nothing is read until the next Read.
// Seeking past the end is allowed; Read then returns io.EOF.
func (c *BlockCursor) Seek(offset int64, whence int) (int64, error) {
	abs, err := SeekPosition(c.pos, c.info.Bytes, offset, whence)
	if err == nil {
		c.pos = abs
	}
	return abs, err
}

// SeekPosition is the position an io.Seeker at cur in size bytes moves to.
// Past the end is allowed; before the start is an error.
func SeekPosition(cur, size, offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = cur + offset
	case io.SeekEnd:
		abs = size + offset
	default:
		return 0, fmt.Errorf("seek: invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("seek: negative position %d", abs)
	}
	return abs, nil
}
