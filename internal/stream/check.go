package stream

import (
	"bytes"
	"errors"
	"fmt"

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

// Close releases the decoder.
func (c *FrameChecker) Close() { c.dec.Close() }
