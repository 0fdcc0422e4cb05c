package catalogbackup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/klauspost/compress/zstd"
)

// windowSize is the zstd window the Writer uses, and maxWindow the largest a
// Reader accepts from a frame header before allocating it. A catalog
// compresses well at the default level; a larger window gains little on a
// file of pages with mostly local redundancy.
const (
	windowSize = 8 << 20
	maxWindow  = 64 << 20
)

// Digest returns the size and SHA-256 (lower-case hex) of a database, as a
// Label wants them: the label comes first on tape, so the database is read
// once for its digest and once more to be written.
func Digest(r io.Reader) (size int64, sum string, err error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Writer writes one catalog backup: NewWriter writes the label, Write
// compresses the database, Close ends the zstd frame once the bytes are
// known to match the label's size and SHA-256 (ErrInvalid otherwise, and
// the frame is left unfinished, so the file never reads back as good). The
// first error sticks; calls after Close fail with ErrClosed.
type Writer struct {
	label  Label
	enc    *zstd.Encoder
	h      hash.Hash
	n      int64
	err    error
	closed bool
}

// NewWriter writes l's label frame to w and returns a Writer for the
// database. l.Size and l.SHA256 must describe the bytes that follow
// (Digest); Format and Version are filled in when empty.
func NewWriter(w io.Writer, l Label) (*Writer, error) {
	if l.Format == "" {
		l.Format = Format
	}
	if l.Version == 0 {
		l.Version = Version
	}
	frame, err := LabelFrame(l)
	if err != nil {
		return nil, err
	}
	enc, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(windowSize))
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(frame); err != nil {
		return nil, fmt.Errorf("catalogbackup: writing the label: %w", err)
	}
	return &Writer{label: l, enc: enc, h: sha256.New()}, nil
}

// Write compresses p.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.n+int64(len(p)) > w.label.Size {
		w.err = fmt.Errorf("%w: more than the %d bytes the label says", ErrInvalid, w.label.Size)
		return 0, w.err
	}
	n, err := w.enc.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("catalogbackup: %w", err)
	}
	return n, w.err
}

// Close checks the bytes against the label and ends the zstd frame.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if w.err == nil && w.n != w.label.Size {
		w.err = fmt.Errorf("%w: %d bytes written, the label says %d", ErrInvalid, w.n, w.label.Size)
	}
	if w.err == nil {
		if got := hex.EncodeToString(w.h.Sum(nil)); got != w.label.SHA256 {
			w.err = fmt.Errorf("%w: sha256 %s, the label says %s", ErrInvalid, got, w.label.SHA256)
		}
	}
	if w.err != nil {
		return w.err
	}
	if err := w.enc.Close(); err != nil {
		w.err = fmt.Errorf("catalogbackup: %w", err)
	}
	return w.err
}

// Reader reads one catalog backup: NewReader reads and checks the label,
// Read returns the database, checking every zstd frame's checksum, and at
// the end its size and SHA-256 against the label (ErrCorrupt, ErrTruncated).
// io.EOF is returned only after every check passed. The first error
// sticks; calls after Close fail with ErrClosed.
type Reader struct {
	label  Label
	src    *srcReader
	dec    *zstd.Decoder
	h      hash.Hash
	n      int64
	err    error
	closed bool
}

// srcReader remembers the first error of the underlying reader, so that a
// damaged tape block is reported as such rather than as a zstd error.
type srcReader struct {
	r   io.Reader
	err error
}

func (s *srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// NewReader reads the label at the start of r (errors as ReadLabel) and
// returns a Reader of the database that follows.
func NewReader(r io.Reader) (*Reader, error) {
	l, err := ReadLabel(r)
	if err != nil {
		return nil, err
	}
	src := &srcReader{r: r}
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		return nil, err
	}
	return &Reader{label: l, src: src, dec: dec, h: sha256.New()}, nil
}

// Label returns the backup's label.
func (r *Reader) Label() Label { return r.label }

// Read reads the database.
func (r *Reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.dec.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	switch {
	case r.n > r.label.Size:
		r.err = fmt.Errorf("%w: more than the %d bytes the label says", ErrCorrupt, r.label.Size)
		return 0, r.err
	case err == nil:
		return n, nil
	case r.src.err != nil:
		r.err = fmt.Errorf("catalogbackup: reading: %w", r.src.err)
	case errors.Is(err, io.EOF):
		r.err = r.check()
		if r.err == nil {
			r.err = io.EOF
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		r.err = fmt.Errorf("%w: the zstd frame ends early, after %d of %d bytes", ErrTruncated, r.n, r.label.Size)
	default:
		r.err = fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
	}
	return n, r.err
}

func (r *Reader) check() error {
	if r.n < r.label.Size {
		return fmt.Errorf("%w: %d of %d bytes", ErrTruncated, r.n, r.label.Size)
	}
	if got := hex.EncodeToString(r.h.Sum(nil)); got != r.label.SHA256 {
		return fmt.Errorf("%w: sha256 %s, the label says %s", ErrCorrupt, got, r.label.SHA256)
	}
	return nil
}

// Close releases the decoder. It does not close the underlying reader.
func (r *Reader) Close() error {
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	r.dec.Close()
	return nil
}
