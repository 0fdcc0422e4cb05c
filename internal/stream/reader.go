package stream

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/klauspost/compress/zstd"
	"github.com/kura-backup/kura/internal/index"
)

// ReaderOptions configure a Reader. The zero value is valid.
type ReaderOptions struct {
	// ReadAhead is how many decoded frames may wait for the consumer
	// (default 4), so decoding overlaps with writing files out.
	ReadAhead int
	// MaxFrameSize bounds a frame, compressed or not (default MaxFrameSize
	// plus raw-frame overhead). Larger frames are reported as corrupt.
	MaxFrameSize int
	// OnFrame, if set, is called from the decoding goroutine after each
	// frame is decoded, with its uncompressed and compressed sizes (the
	// media bytes a restore or verify reads).
	OnFrame func(uncompressed, compressed int)
}

func (o ReaderOptions) withDefaults() ReaderOptions {
	if o.ReadAhead <= 0 {
		o.ReadAhead = 4
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = MaxFrameSize + MaxFrameSize/64 + 64
	}
	return o
}

// Reader reads entries back from a saveset stream. Next returns io.EOF only
// after the tar end-of-archive marker; a stream that stops before it gives
// ErrTruncated; damage gives ErrCorrupt, inside a *FrameError naming the
// frame when known. Errors are sticky until SeekTo.
type Reader struct {
	src    FrameSource
	frames []index.Frame
	o      ReaderOptions
	dec    *zstd.Decoder

	pipe    *framePipe
	tr      *tar.Reader
	cnt     int64 // bytes the tar reader consumed since base
	base    int64 // stream offset where the pipe starts
	nextHdr int64 // stream offset of the next header
	cur     *tar.Header
	err     error
	closed  bool

	// Header bytes are kept while the tar reader reads them (rec, from
	// nextHdr on): a sparse entry's map is among them, and Go's reader,
	// which reads it, does not give it out.
	recording bool
	rec       []byte
	recOver   bool
	// sp serves the content of the current entry when it is sparse; the
	// tar reader is then bypassed and replaced after it.
	sp *sparseRead
}

// maxRecord bounds the header bytes kept for one entry: extended header
// records (xattrs up to index.MaxXattrs, long names) and a sparse map.
const maxRecord = 4 << 20

// NewReader returns a reader over src. frames is the saveset's frame table;
// it may be nil, in which case the reader starts at Location{0, 0} (the
// first part's label) and finds frames by their headers, and SeekTo is not
// available.
func NewReader(src FrameSource, frames []index.Frame, opts ReaderOptions) (*Reader, error) {
	o := opts.withDefaults()
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(o.MaxFrameSize)),
		zstd.WithDecoderMaxWindow(uint64(max(o.MaxFrameSize, zstd.MinWindowSize))))
	if err != nil {
		return nil, fmt.Errorf("stream: zstd decoder: %w", err)
	}
	for i := 1; i < len(frames); i++ {
		if frames[i].Offset != frames[i-1].Offset+int64(frames[i-1].Size) {
			dec.Close()
			return nil, fmt.Errorf("%w: frame table not contiguous at frame %d", ErrCorrupt, i)
		}
	}
	return &Reader{src: src, frames: frames, o: o, dec: dec}, nil
}

// start (re)opens the stream at frame k (or at the beginning without a
// table) and positions the tar reader at stream offset off.
func (r *Reader) start(k int, off int64) error {
	r.stop()
	loc := Location{}
	var base int64
	if r.frames != nil {
		if k >= len(r.frames) {
			return fmt.Errorf("%w: %d", ErrOffset, off)
		}
		f := r.frames[k]
		loc, base = Location{Part: int(f.Part), Offset: f.PartOffset}, f.Offset
	}
	rc, err := r.src.OpenAt(loc)
	if err != nil {
		return fmt.Errorf("stream: open at part %d offset %d: %w", loc.Part, loc.Offset, err)
	}
	r.pipe = newFramePipe(rc, r.dec, r.frames, k, r.o)
	if skip := off - base; skip > 0 {
		if _, err := io.CopyN(io.Discard, r.pipe, skip); err != nil {
			return r.mapErr(err)
		}
	}
	r.tr = tar.NewReader(countReader{r})
	r.cnt, r.base, r.nextHdr, r.cur, r.err, r.sp = 0, off, off, nil, nil, nil
	return nil
}

type countReader struct{ r *Reader }

func (c countReader) Read(p []byte) (int, error) {
	r := c.r
	n, err := r.pipe.Read(p)
	if r.recording && n > 0 {
		pos := r.base + r.cnt
		if from := max(r.nextHdr-pos, 0); from < int64(n) {
			if len(r.rec)+n-int(from) > maxRecord {
				r.recOver = true
			} else {
				r.rec = append(r.rec, p[from:n]...)
			}
		}
	}
	r.cnt += int64(n)
	return n, err
}

func (r *Reader) stop() {
	if r.pipe != nil {
		r.pipe.close()
		r.pipe = nil
	}
}

// seekSkipLimit is how far ahead SeekTo reads through the running stream
// instead of reopening it at the frame that holds the target.
const seekSkipLimit = 2 * DefaultFrameSize

// SeekTo positions the reader so that Next returns the entry whose header
// starts at stream offset off (an Entry.Offset). It opens only the frame
// containing off and those after it. It clears a previous error.
func (r *Reader) SeekTo(off int64) error {
	if r.closed {
		return ErrClosed
	}
	if r.frames == nil {
		return ErrNoFrameTable
	}
	// Forward and near: skip entries in the running stream rather than
	// reopening it, so restoring many small files in stream order decodes
	// every frame once.
	if r.tr != nil && r.err == nil && off >= r.nextHdr && off-r.nextHdr <= seekSkipLimit {
		for r.nextHdr < off {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		if r.err == nil && r.nextHdr == off {
			return nil
		}
		r.err = nil
	}
	k := sort.Search(len(r.frames), func(i int) bool {
		return r.frames[i].Offset+int64(r.frames[i].Size) > off
	})
	if off < 0 || k == len(r.frames) {
		return fmt.Errorf("%w: %d", ErrOffset, off)
	}
	if err := r.start(k, off); err != nil {
		r.err = err
		return err
	}
	return nil
}

// Next returns the next entry, with Offset set (Digest is not in the
// stream). Its content, for files, is read with Read.
func (r *Reader) Next() (*index.Entry, error) {
	if r.closed {
		return nil, ErrClosed
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.tr == nil {
		if err := r.start(0, 0); err != nil {
			r.err = err
			return nil, err
		}
	}
	if err := r.endSparse(); err != nil {
		r.err = err
		return nil, err
	}
	off := r.nextHdr
	r.rec, r.recOver, r.recording = r.rec[:0], false, true
	h, err := r.tr.Next()
	r.recording = false
	if err == io.EOF {
		if r.pipe.sawEOF {
			r.err = fmt.Errorf("%w: no end-of-archive marker", ErrTruncated)
			return nil, r.err
		}
		r.err = io.EOF
		return nil, io.EOF
	}
	if err != nil {
		r.err = r.mapErr(err)
		if errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrFieldTooLong) || errors.Is(err, tar.ErrInsecurePath) {
			// The frames holding it are sound (their checksums passed):
			// this header was written so. It is one bad entry; SeekTo
			// reaches the next.
			r.err = fmt.Errorf("%w: header at stream offset %d: %w", ErrEntry, off, r.err)
		}
		return nil, r.err
	}
	e, err := entryFromHeader(h)
	if err != nil {
		r.err = err
		return nil, err
	}
	e.Offset = off
	r.cur = h
	n := dataSize(h)
	r.nextHdr = r.base + r.cnt + (n+511)&^511
	switch is10, other := isSparse10(h); {
	case other:
		r.cur = nil
		r.err = fmt.Errorf("%w: %s at stream offset %d: a sparse format other than pax GNU 1.0", ErrEntry, index.ShortPath(e.Path), off)
		return nil, r.err
	case is10:
		if err := r.beginSparse(h); err != nil {
			r.cur = nil
			r.err = fmt.Errorf("%w: %s at stream offset %d: %w", ErrEntry, index.ShortPath(e.Path), off, err)
			return nil, r.err
		}
		e.Flags |= index.FlagSparse
	}
	if e.Path != "" && !index.ValidPath(e.Path) {
		// A name no index entry can have ("..", absolute, NUL, too
		// long): this entry is skipped, the next one reads.
		r.cur = nil
		return nil, fmt.Errorf("%w: %s at stream offset %d", ErrEntry, index.ShortPath(e.Path), off)
	}
	return e, nil
}

// Read reads the current entry's content; io.EOF at its end.
func (r *Reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	if r.err != nil {
		return 0, r.err
	}
	if r.cur == nil {
		return 0, io.EOF
	}
	if r.sp != nil {
		n, err := r.sp.read(countReader{r}, p)
		if err != nil && err != io.EOF {
			r.err = r.mapErr(err)
			return n, r.err
		}
		return n, err
	}
	n, err := r.tr.Read(p)
	if err != nil && err != io.EOF {
		r.err = r.mapErr(err)
		return n, r.err
	}
	return n, err
}

// beginSparse takes over the content of a sparse entry that the tar reader
// has just returned: its layout comes from the header bytes kept, and its
// data is read from the stream here.
func (r *Reader) beginSparse(h *tar.Header) error {
	if r.recOver {
		return fmt.Errorf("sparse entry: headers and map larger than %d bytes", maxRecord)
	}
	data, stored, err := sparseLayout(r.rec, h)
	if err != nil {
		return err
	}
	if data == nil {
		data = []Extent{} // only a hole: still sparse
	}
	r.sp = &sparseRead{data: data, size: h.Size, left: stored, pad: blockPad(stored)}
	r.nextHdr = r.base + r.cnt + stored + blockPad(stored)
	return nil
}

// endSparse reads past what is left of a sparse entry and starts a new tar
// reader at the next header.
func (r *Reader) endSparse() error {
	if r.sp == nil {
		return nil
	}
	skip := r.sp.left + r.sp.pad
	r.sp = nil
	if _, err := io.CopyN(io.Discard, countReader{r}, skip); err != nil {
		return r.mapErr(err)
	}
	if r.base+r.cnt != r.nextHdr {
		return fmt.Errorf("%w: sparse entry ends at %d, the next header is at %d", ErrCorrupt, r.base+r.cnt, r.nextHdr)
	}
	r.tr = tar.NewReader(countReader{r})
	return nil
}

// Extents returns the data extents of the current entry when it is stored
// sparse (nil otherwise; empty, not nil, for a file that is only a
// hole): what lies between them, and after the last, is a
// hole, read as zeros. The slice must not be changed.
func (r *Reader) Extents() []Extent {
	if r.sp == nil || r.cur == nil {
		return nil
	}
	return r.sp.data
}

// Discard skips n bytes of the current entry's content. Holes of a sparse
// entry cost nothing.
func (r *Reader) Discard(n int64) error {
	for n > 0 && r.sp != nil && r.err == nil {
		if h := r.sp.hole(); h > 0 {
			k := min(h, n)
			r.sp.pos += k
			n -= k
			continue
		}
		if r.sp.pos >= r.sp.size {
			return io.EOF
		}
		k := min(n, r.sp.data[r.sp.i].End()-r.sp.pos)
		if _, err := io.CopyN(io.Discard, struct{ io.Reader }{r}, k); err != nil {
			return err
		}
		n -= k
	}
	if n > 0 {
		if _, err := io.CopyN(io.Discard, struct{ io.Reader }{r}, n); err != nil {
			return err
		}
	}
	return nil
}

// mapErr turns what the tar reader or the pipe reported into the package's
// errors.
func (r *Reader) mapErr(err error) error {
	var fe *FrameError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %w", ErrTruncated, err)
	case errors.Is(err, tar.ErrHeader), errors.Is(err, tar.ErrFieldTooLong), errors.Is(err, tar.ErrInsecurePath):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// Close stops decoding and closes the source.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.stop()
	r.dec.Close()
	return nil
}

// framePipe decodes frames in a goroutine, at most ReadAhead ahead of the
// consumer, and serves their bytes in order.
type framePipe struct {
	ch     chan decoded
	stopc  chan struct{}
	done   chan struct{}
	rc     io.ReadCloser
	cur    []byte
	curBuf []byte      // the whole frame cur is a tail of
	free   chan []byte // frame buffers the consumer is done with
	err    error
	sawEOF bool // the source ended cleanly and that was passed on as io.EOF
}

type decoded struct {
	data []byte
	err  error
}

func newFramePipe(rc io.ReadCloser, dec *zstd.Decoder, table []index.Frame, k int, o ReaderOptions) *framePipe {
	p := &framePipe{
		ch:    make(chan decoded, o.ReadAhead),
		free:  make(chan []byte, o.ReadAhead+2),
		stopc: make(chan struct{}),
		done:  make(chan struct{}),
		rc:    rc,
	}
	go p.run(dec, table, k, o.MaxFrameSize, o.OnFrame)
	return p
}

func (p *framePipe) run(dec *zstd.Decoder, table []index.Frame, k int, maxFrame int, onFrame func(int, int)) {
	defer close(p.done)
	defer close(p.ch)
	send := func(d decoded) bool {
		select {
		case p.ch <- d:
			return true
		case <-p.stopc:
			return false
		}
	}
	fail := func(k int, err error) { send(decoded{err: &FrameError{Frame: k, Err: err}}) }
	sc := newFrameScanner(p.rc, maxFrame)
	for ; ; k++ {
		f, err := sc.next()
		if err == io.EOF {
			if table != nil && k < len(table) {
				fail(k, fmt.Errorf("%w: stream ends before frame %d of %d", ErrTruncated, k, len(table)))
			}
			return
		}
		if err != nil {
			// A source that ends early is a truncated stream; any other
			// failure of the source (a bad block on tape names itself)
			// passes through as it is.
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) &&
				(errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
				err = fmt.Errorf("%w: reading: %w", ErrTruncated, err)
			}
			fail(k, err)
			return
		}
		if table != nil {
			if k >= len(table) {
				fail(k, fmt.Errorf("%w: data after the last frame of the table", ErrCorrupt))
				return
			}
			if len(f) != int(table[k].CSize) {
				fail(k, fmt.Errorf("%w: frame is %d bytes, table says %d", ErrCorrupt, len(f), table[k].CSize))
				return
			}
		}
		var dst []byte
		if table != nil {
			dst = p.buffer(int(table[k].Size))
		}
		data, err := dec.DecodeAll(f, dst)
		if err != nil {
			fail(k, fmt.Errorf("%w: %w", ErrCorrupt, err))
			return
		}
		if table != nil && len(data) != int(table[k].Size) {
			fail(k, fmt.Errorf("%w: frame holds %d bytes, table says %d", ErrCorrupt, len(data), table[k].Size))
			return
		}
		if onFrame != nil {
			onFrame(len(data), len(f))
		}
		if !send(decoded{data: data}) {
			return
		}
	}
}

// buffer returns an empty buffer for a decoded frame of n bytes, reusing
// one the consumer is done with: allocating (and zeroing) a fresh 1 MiB
// for every frame cost as much as decoding raw frames.
func (p *framePipe) buffer(n int) []byte {
	select {
	case b := <-p.free:
		if cap(b) >= n {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, n)
}

func (p *framePipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		if p.curBuf != nil {
			// Every byte of it was copied out: the decoder may reuse it.
			select {
			case p.free <- p.curBuf[:0]:
			default:
			}
			p.curBuf = nil
		}
		d, ok := <-p.ch
		switch {
		case !ok:
			p.err, p.sawEOF = io.EOF, true
		case d.err != nil:
			p.err = d.err
		default:
			p.cur, p.curBuf = d.data, d.data
		}
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// close stops the decoder goroutine (it finishes at most the read in
// progress) and then closes the source.
func (p *framePipe) close() {
	close(p.stopc)
	<-p.done
	p.rc.Close()
}
