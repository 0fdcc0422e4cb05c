package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/compress"
)

// FrameChecker checks frames from a producer the writer does not trust (an
// agent across the network) before they go to tape, so a damaged frame
// fails the backup instead of being found by a later verify. A good frame
// is exactly one zstd data frame with the Content_Checksum flag (as every
// frame this package writes), whose content decodes to at most
// MaxFrameSize bytes and matches its checksum. Not safe for concurrent use.
type FrameChecker struct {
	dec *zstd.Decoder
	rd  bytes.Reader
	sc  *frameScanner
	out []byte
}

// NewFrameChecker returns a checker; Close releases it.
func NewFrameChecker() (*FrameChecker, error) {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(MaxFrameSize),
		zstd.WithDecoderMaxWindow(MaxFrameSize))
	if err != nil {
		return nil, fmt.Errorf("stream: zstd decoder: %w", err)
	}
	c := &FrameChecker{dec: dec}
	c.sc = newFrameScanner(&c.rd, 0)
	return c, nil
}

// Check returns nil for a good frame and an error wrapping ErrCorrupt
// saying what is wrong otherwise.
func (c *FrameChecker) Check(frame []byte) error {
	if len(frame) < 5 || compress.ZstdMagic != uint32(frame[0])|uint32(frame[1])<<8|uint32(frame[2])<<16|uint32(frame[3])<<24 {
		return fmt.Errorf("%w: not a zstd data frame", ErrCorrupt)
	}
	if frame[4]&(1<<2) == 0 {
		return fmt.Errorf("%w: frame without a content checksum", ErrCorrupt)
	}
	// A frame stored raw (what --compress none and incompressible data
	// give) is checked where it lies: its blocks walked, its content hashed
	// and compared with its checksum, without a decoder or a copy.
	if raw, err := checkRaw(frame); raw {
		return err
	}
	return c.checkDecoded(frame)
}

// checkDecoded checks a frame by decoding it.
func (c *FrameChecker) checkDecoded(frame []byte) error {
	// Its headers must walk to exactly its end: one frame, whole.
	c.rd.Reset(frame)
	c.sc.br.Reset(&c.rd)
	c.sc.max = len(frame)
	f, err := c.sc.next()
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if len(f) != len(frame) {
		return fmt.Errorf("%w: %d bytes after the frame", ErrCorrupt, len(frame)-len(f))
	}
	out, err := c.dec.DecodeAll(frame, c.out[:0])
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	c.out = out[:0]
	return nil
}

// checkRaw checks a single-segment frame whose blocks are all raw, in
// place (the form compress.AppendRawFrame writes): its header,
// each block within the frame and at most compress.MaxRawBlock long, the
// content size its header states, its checksum (the low 32 bits of
// XXH64 of the content), and nothing after it. raw is false, and the frame
// left to the decoder, when it is not single-segment, has a dictionary, or
// has a block that is not raw.
func checkRaw(frame []byte) (raw bool, err error) {
	d := frame[4]
	if d&3 != 0 || d&(1<<3) != 0 || d&(1<<5) == 0 {
		// A dictionary, the reserved bit, or a window smaller than the
		// frame (whose limit on block sizes the decoder knows): the
		// decoder says.
		return false, nil
	}
	pos := 5
	fcsLen := [4]int{1, 2, 4, 8}[d>>6] // single segment: always a content size
	if len(frame) < pos+fcsLen {
		return true, fmt.Errorf("%w: frame header cut", ErrCorrupt)
	}
	var fcs uint64
	for i := fcsLen - 1; i >= 0; i-- {
		fcs = fcs<<8 | uint64(frame[pos+i])
	}
	if fcsLen == 2 {
		fcs += 256
	}
	pos += fcsLen
	// Walk the block headers first: a frame with any block that is not raw
	// goes to the decoder before anything is hashed.
	for p := pos; ; {
		if len(frame) < p+3 {
			return true, fmt.Errorf("%w: block header cut", ErrCorrupt)
		}
		h := uint32(frame[p]) | uint32(frame[p+1])<<8 | uint32(frame[p+2])<<16
		if (h>>1)&3 != 0 {
			return false, nil
		}
		size := int(h >> 3)
		if size > compress.MaxRawBlock {
			return true, fmt.Errorf("%w: raw block of %d bytes", ErrCorrupt, size)
		}
		p += 3 + size
		if p > len(frame) {
			return true, fmt.Errorf("%w: block past the end of the frame", ErrCorrupt)
		}
		if h&1 != 0 {
			if len(frame)-p != 4 {
				return true, fmt.Errorf("%w: %d bytes after the last block", ErrCorrupt, len(frame)-p-4)
			}
			break
		}
	}
	var x xxhash.Digest
	x.Reset()
	var total uint64
	for {
		h := uint32(frame[pos]) | uint32(frame[pos+1])<<8 | uint32(frame[pos+2])<<16
		size := int(h >> 3)
		_, _ = x.Write(frame[pos+3 : pos+3+size])
		total += uint64(size)
		pos += 3 + size
		if h&1 != 0 {
			break
		}
	}
	if total != fcs {
		return true, fmt.Errorf("%w: frame content %d bytes, its header says %d", ErrCorrupt, total, fcs)
	}
	if got, want := uint32(x.Sum64()), binary.LittleEndian.Uint32(frame[pos:]); got != want {
		return true, fmt.Errorf("%w: frame checksum %08x, content gives %08x", ErrCorrupt, want, got)
	}
	return true, nil
}

// Close releases the decoder.
func (c *FrameChecker) Close() { c.dec.Close() }
