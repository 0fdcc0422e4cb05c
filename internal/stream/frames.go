package stream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kura-backup/kura/internal/compress"
)

// frameScanner splits a byte stream into zstd frames by walking frame and
// block headers (RFC 8878), without decoding. Skippable frames (labels of
// later parts) are skipped. Every length read is checked before use.
type frameScanner struct {
	br  *bufio.Reader
	max int // largest frame accepted, in bytes on media
	buf []byte
}

var (
	errScanTruncated = errors.New("ends inside a frame")
)

func newFrameScanner(r io.Reader, max int) *frameScanner {
	return &frameScanner{br: bufio.NewReaderSize(r, 256<<10), max: max}
}

// take appends n bytes from the input to s.buf.
func (s *frameScanner) take(n int) error {
	if len(s.buf)+n > s.max {
		return fmt.Errorf("%w: frame larger than %d bytes", ErrCorrupt, s.max)
	}
	l := len(s.buf)
	s.buf = append(s.buf, make([]byte, n)...)
	if _, err := io.ReadFull(s.br, s.buf[l:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w: %w", ErrTruncated, errScanTruncated)
		}
		return err
	}
	return nil
}

// next returns the next zstd data frame (valid until the next call), or
// io.EOF at a clean end between frames.
func (s *frameScanner) next() ([]byte, error) {
	for {
		s.buf = s.buf[:0]
		if _, err := s.br.Peek(1); err == io.EOF {
			return nil, io.EOF
		}
		if err := s.take(4); err != nil {
			return nil, err
		}
		magic := binary.LittleEndian.Uint32(s.buf)
		if magic&0xFFFFFFF0 == 0x184D2A50 {
			if err := s.take(4); err != nil {
				return nil, err
			}
			n := int(binary.LittleEndian.Uint32(s.buf[4:]))
			if k, err := s.br.Discard(n); k < n {
				if err == io.EOF {
					return nil, fmt.Errorf("%w: %w", ErrTruncated, errScanTruncated)
				}
				return nil, err
			}
			continue
		}
		if magic != compress.ZstdMagic {
			return nil, fmt.Errorf("%w: bad frame magic %#08x", ErrCorrupt, magic)
		}
		if err := s.take(1); err != nil {
			return nil, err
		}
		d := s.buf[4]
		if d&(1<<3) != 0 {
			return nil, fmt.Errorf("%w: reserved bit set in frame header", ErrCorrupt)
		}
		single := d&(1<<5) != 0
		hdr := [4]int{0, 1, 2, 4}[d&3] // dictionary ID
		hdr += [4]int{0, 2, 4, 8}[d>>6]
		if single && d>>6 == 0 {
			hdr++
		}
		if !single {
			hdr++ // window descriptor
		}
		if err := s.take(hdr); err != nil {
			return nil, err
		}
		for {
			l := len(s.buf)
			if err := s.take(3); err != nil {
				return nil, err
			}
			bh := uint32(s.buf[l]) | uint32(s.buf[l+1])<<8 | uint32(s.buf[l+2])<<16
			last, typ, size := bh&1 != 0, (bh>>1)&3, int(bh>>3)
			if size > compress.MaxRawBlock {
				return nil, fmt.Errorf("%w: block of %d bytes", ErrCorrupt, size)
			}
			switch typ {
			case 1: // RLE
				size = 1
			case 3:
				return nil, fmt.Errorf("%w: reserved block type", ErrCorrupt)
			}
			if err := s.take(size); err != nil {
				return nil, err
			}
			if last {
				break
			}
		}
		if d&(1<<2) != 0 {
			if err := s.take(4); err != nil {
				return nil, err
			}
		}
		return s.buf, nil
	}
}
