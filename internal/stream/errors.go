package stream

import (
	"errors"
	"fmt"
)

var (
	// ErrNotLabel: the bytes are not a Kura label frame (another skippable
	// frame, a zstd data frame, or something else entirely).
	ErrNotLabel = errors.New("stream: not a kura label")
	// ErrLabelDamaged: a Kura label whose text, checksum or JSON is broken,
	// or that ends early.
	ErrLabelDamaged = errors.New("stream: label damaged")
	// ErrLabelTooLarge: a label frame declares more than MaxLabelSize bytes.
	ErrLabelTooLarge = errors.New("stream: label too large")

	// ErrCorrupt: a frame or the pax stream inside it is damaged (bad
	// magic, checksum mismatch, size not as the frame table says, a broken
	// tar header). Returned inside a *FrameError when the frame is known.
	ErrCorrupt = errors.New("stream: corrupt")
	// ErrTruncated: the stream ends before the tar end-of-archive marker or
	// in the middle of a frame.
	ErrTruncated = errors.New("stream: truncated")
	// ErrNoFrameTable: SeekTo needs the frame table.
	ErrNoFrameTable = errors.New("stream: no frame table")
	// ErrOffset: SeekTo to an offset outside the stream.
	ErrOffset = errors.New("stream: offset outside the stream")

	// ErrShrank: a file's content ended before Entry.Size bytes; the rest
	// was padded with zeros and FlagChanged set. The writer is still usable.
	ErrShrank = errors.New("stream: file shrank while being read")
	// ErrContentRead: reading a file's content failed; the rest was padded
	// with zeros and FlagChanged set. The writer is still usable.
	ErrContentRead = errors.New("stream: reading file content")
	// ErrEntry: the entry cannot be written (bad type, path, xattr name or
	// FlagUnchanged); nothing was written for it. From Reader.Next: the
	// entry read breaks the rules (a path with "..", absolute, with a NUL
	// byte or longer than index.MaxPath, or a header the tar reader
	// refuses) though its frames are sound; after a bad path Next goes on
	// with the next entry, after a bad header SeekTo does.
	ErrEntry = errors.New("stream: invalid entry")
	// ErrClosed: the writer or reader was closed or aborted.
	ErrClosed = errors.New("stream: closed")
	// ErrBadOptions wraps option validation errors.
	ErrBadOptions = errors.New("stream: bad options")
)

// FrameError names the frame (0-based index in the frame table, counting
// data frames only) where a read failed. Err wraps ErrCorrupt or
// ErrTruncated.
type FrameError struct {
	Frame int
	Err   error
}

func (e *FrameError) Error() string { return fmt.Sprintf("stream: frame %d: %v", e.Frame, e.Err) }
func (e *FrameError) Unwrap() error { return e.Err }
