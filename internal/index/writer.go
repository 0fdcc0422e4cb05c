package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// encoder is shared by all Writers: EncodeAll is safe for concurrent use.
var encoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderCRC(false), // blocks carry a CRC-32C
		zstd.WithSingleSegment(true),
	)
	if err != nil {
		panic(err) // only on invalid options
	}
	return e
})

// Writer writes an index file. Entries are added in index order (see
// [Compare]); the Writer codes them into blocks as they come and writes each
// full block at once, so its memory does not grow with the number of entries.
//
// Add returns ErrInvalid, ErrTooLarge or ErrOrder for an entry it refuses;
// those errors leave the Writer as it was, so the caller may go on with the
// next entry. A write error sticks: every later call returns it. Nothing
// reads the file until Close has written the footer; the caller makes the
// file durable afterwards. A Writer is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	meta    []byte
	final   []byte // meta set by SetMeta, written in the trailer
	started bool
	closed  bool
	err     error

	entries int64
	size    int64
	last    string // previous path, for the order check
	frames  []Frame

	blk    blockEncoder
	raw    []byte
	out    []byte
	blocks []dirRecord
}

type dirRecord struct {
	length int64
	n      int
	first  string
}

// NewWriter returns a Writer that writes an index to w. meta is stored as it
// is in the header (the engine's saveset record); it is at most MaxMeta
// bytes, else the first Add or Close fails with ErrTooLarge. Nothing is
// written before the first Add or Close.
func NewWriter(w io.Writer, meta []byte) *Writer {
	return &Writer{w: w, meta: append([]byte(nil), meta...)}
}

// Len returns the number of entries added.
func (w *Writer) Len() int64 { return w.entries }

// Size returns the number of bytes written to the underlying writer so far;
// after a successful Close, the size of the index file.
func (w *Writer) Size() int64 { return w.size }

// SetFrames sets the saveset's frame table, written by Close. The slice is
// copied. A later call replaces the table.
func (w *Writer) SetFrames(f []Frame) {
	w.frames = append(w.frames[:0], f...)
}

func (w *Writer) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(b)
	w.size += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("index: write: %w", err)
	}
	return w.err
}

func (w *Writer) start() error {
	if w.started {
		return w.err
	}
	w.started = true
	if len(w.meta) > MaxMeta {
		w.err = fmt.Errorf("%w: meta of %d bytes (max %d)", ErrTooLarge, len(w.meta), MaxMeta)
		return w.err
	}
	h := make([]byte, 0, headerFixed+len(w.meta)+4)
	h = append(h, magic...)
	h = append(h, Version)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(w.meta)))
	h = append(h, w.meta...)
	h = binary.LittleEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	w.meta = nil
	return w.write(h)
}

// Add appends e, which must sort strictly after the previous entry.
func (w *Writer) Add(e *Entry) error {
	return w.add(e, checkEntry)
}

// AddUnchecked appends e like Add, without checking its path and link
// against the Entry rules (order, type and lengths up to a block's text
// are still checked). It exists to build hostile indexes for the tests of
// what reads them (readers skip such entries, see InvalidEntry); a
// saveset's index is never written with it.
func (w *Writer) AddUnchecked(e *Entry) error {
	return w.add(e, func(e *Entry) error {
		c := *e
		c.Path, c.Link = "x", ""
		if len(e.Path)+len(e.Link) > blockTextTarget {
			return fmt.Errorf("%w: path and link of %d bytes", ErrTooLarge, len(e.Path)+len(e.Link))
		}
		return checkEntry(&c)
	})
}

func (w *Writer) add(e *Entry, check func(*Entry) error) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := check(e); err != nil {
		return err
	}
	if w.entries > 0 && Compare(w.last, e.Path) >= 0 {
		return fmt.Errorf("%w: %q after %q", ErrOrder, e.Path, w.last)
	}
	if err := w.start(); err != nil {
		return err
	}
	w.blk.add(e)
	w.last = e.Path
	w.entries++
	if w.blk.n >= blockEntries || w.blk.text >= blockTextTarget {
		return w.flush()
	}
	return nil
}

func checkEntry(e *Entry) error {
	switch {
	case !ValidPath(e.Path):
		if len(e.Path) > MaxPath {
			return fmt.Errorf("%w: path of %d bytes (max %d)", ErrTooLarge, len(e.Path), MaxPath)
		}
		return fmt.Errorf("%w: path %q", ErrInvalid, e.Path)
	case e.Type < TypeFile || e.Type > TypeBlock:
		return fmt.Errorf("%w: %q: type %d", ErrInvalid, e.Path, e.Type)
	case e.Size < 0 || e.Size > 1<<62:
		return fmt.Errorf("%w: %q: size %d", ErrInvalid, e.Path, e.Size)
	case len(e.Link) > MaxPath:
		return fmt.Errorf("%w: %q: link of %d bytes (max %d)", ErrTooLarge, e.Path, len(e.Link), MaxPath)
	}
	sum := 0
	for k, v := range e.Xattrs {
		sum += len(k) + len(v)
	}
	if sum > MaxXattrs {
		return fmt.Errorf("%w: %q: xattrs of %d bytes (max %d)", ErrTooLarge, e.Path, sum, MaxXattrs)
	}
	return nil
}

// flush writes the current block, if any.
func (w *Writer) flush() error {
	b := &w.blk
	if b.n == 0 {
		return w.err
	}
	w.raw = b.appendRaw(w.raw[:0])
	if len(w.raw) > maxBlockRaw {
		// Cannot happen within the limits on entries; guard the format.
		w.err = fmt.Errorf("%w: block of %d raw bytes", ErrTooLarge, len(w.raw))
		return w.err
	}
	out := append(w.out[:0], make([]byte, blockHeader)...)
	out = encoder().EncodeAll(w.raw, out)
	binary.LittleEndian.PutUint32(out[0:], uint32(len(out)-blockHeader))
	binary.LittleEndian.PutUint32(out[4:], uint32(len(w.raw)))
	binary.LittleEndian.PutUint32(out[8:], uint32(b.n))
	crc := crc32.Update(crc32.Checksum(out[:12], castagnoli), castagnoli, out[blockHeader:])
	binary.LittleEndian.PutUint32(out[12:], crc)
	w.out = out
	w.blocks = append(w.blocks, dirRecord{length: int64(len(out)), n: b.n, first: b.first})
	b.reset()
	return w.write(out)
}

// SetMeta sets a final Meta blob, stored in the trailer; readers return it
// instead of the one given to NewWriter. It exists for what is only known
// once every entry is written (the saveset's parts on tape).
func (w *Writer) SetMeta(meta []byte) error {
	if len(meta) > MaxMeta {
		return fmt.Errorf("%w: meta of %d bytes (max %d)", ErrTooLarge, len(meta), MaxMeta)
	}
	w.final = append([]byte{}, meta...)
	return nil
}

// Close writes the last block, the block directory, the frame table and the
// footer. It does not close the underlying writer. Calls after Close return
// ErrClosed.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if err := w.start(); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	trailerOff := w.size
	t := w.raw[:0]
	prev := ""
	for _, d := range w.blocks {
		t = binary.AppendUvarint(t, uint64(d.length))
		t = binary.AppendUvarint(t, uint64(d.n))
		s := commonPrefix(prev, d.first)
		t = binary.AppendUvarint(t, uint64(s))
		t = appendString(t, d.first[s:])
		prev = d.first
	}
	var pf Frame
	for _, f := range w.frames {
		t = binary.AppendVarint(t, f.Offset-(pf.Offset+int64(pf.Size)))
		t = binary.AppendUvarint(t, uint64(f.Size))
		t = binary.AppendUvarint(t, uint64(f.CSize))
		t = binary.AppendVarint(t, int64(f.Part)-int64(pf.Part))
		t = binary.AppendVarint(t, f.PartOffset-(pf.PartOffset+int64(pf.CSize)))
		pf = f
	}
	if w.final != nil {
		t = binary.AppendUvarint(t, uint64(len(w.final)))
		t = append(t, w.final...)
	}
	if len(t) > maxTrailer || len(w.frames) > 1<<32-1 {
		w.err = fmt.Errorf("%w: trailer of %d bytes", ErrTooLarge, len(t))
		return w.err
	}
	tcrc := crc32.Checksum(t, castagnoli)
	var f [footerSize]byte
	binary.LittleEndian.PutUint64(f[0:], uint64(trailerOff))
	binary.LittleEndian.PutUint64(f[8:], uint64(len(t)))
	binary.LittleEndian.PutUint64(f[16:], uint64(w.entries))
	binary.LittleEndian.PutUint32(f[24:], uint32(len(w.blocks)))
	binary.LittleEndian.PutUint32(f[28:], uint32(len(w.frames)))
	binary.LittleEndian.PutUint32(f[32:], tcrc)
	binary.LittleEndian.PutUint32(f[36:], crc32.Checksum(f[:36], castagnoli))
	copy(f[40:], magic)
	f[47] = Version
	t = append(t, f[:]...)
	w.raw = t
	err := w.write(t)
	w.blocks, w.frames = nil, nil
	return err
}
