package stream

import (
	"archive/tar"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/rules"
)

// DefaultFrameSize is the uncompressed size of a frame: 1 MiB. Measured
// with BenchmarkWriterFrameSize (16 MiB text, level low, 2 workers, shared
// 2-core EPYC, -benchtime 3x): 256 KiB 39 MB/s ratio 0.2566; 1 MiB 45 MB/s
// 0.2561; 4 MiB 50 MB/s 0.2564. Ratio is flat; the speed gain of 4 MiB is
// within this machine's noise, while a seek decodes half a frame on average
// and the writer holds ~2×Workers frames, so 1 MiB keeps both small.
const DefaultFrameSize = 1 << 20

// Frame size limits: frames are at least 64 KiB (smaller ones cost ratio
// and per-frame overhead) and at most 32 MiB (the reader's memory bound).
const (
	MinFrameSize = rules.MinFrameSize
	MaxFrameSize = rules.MaxFrameSize
)

// Options configure a Writer. The zero value is valid: auto level, 1 MiB
// frames, GOMAXPROCS workers.
type Options struct {
	Level     compress.Level // default auto
	FrameSize int            // uncompressed bytes per frame; default DefaultFrameSize
	Workers   int            // parallel encoders; default GOMAXPROCS
	// Auto tunes the adaptive controller used with level auto.
	Auto compress.AutoOptions
	// OnFrame, if set, is called after each frame reached the sink, from
	// the writer's sink goroutine, in stream order. It must be quick.
	OnFrame func(uncompressed, compressed int)
	// OnSeal, if set, is called from the goroutine writing entries (the
	// caller of WriteEntry or Close) each time a frame is full (or is the
	// last one, at Close), in stream order, before that frame can reach
	// the sink. Whatever the caller counted as it wrote the frame's
	// content is then counted; a caller that reports progress as the sink
	// sends frames pairs its figures with frames here. It must be quick.
	OnSeal func()
}

func (o Options) withDefaults() Options {
	if o.FrameSize == 0 {
		o.FrameSize = DefaultFrameSize
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// Validate checks the options after defaults are applied.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case !o.Level.Valid():
		return fmt.Errorf("%w: level %v", ErrBadOptions, o.Level)
	case o.FrameSize < MinFrameSize || o.FrameSize > MaxFrameSize:
		return fmt.Errorf("%w: frame size %d not in [%d, %d]", ErrBadOptions, o.FrameSize, MinFrameSize, MaxFrameSize)
	case o.Workers < 1 || o.Workers > 256:
		return fmt.Errorf("%w: workers %d not in [1, 256]", ErrBadOptions, o.Workers)
	}
	if o.Level == compress.LevelAuto {
		if err := o.Auto.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	return nil
}

// String describes the options (benchmarks record it).
func (o Options) String() string {
	o = o.withDefaults()
	s := fmt.Sprintf("level=%v frame=%d workers=%d", o.Level, o.FrameSize, o.Workers)
	if o.Level == compress.LevelAuto {
		s += " " + o.Auto.String()
	}
	return s
}

// Stats are the writer's counters.
type Stats struct {
	Entries          int64
	Uncompressed     int64         // pax stream bytes in frames handed to the sink
	Media            int64         // frame bytes handed to the sink
	FramesRaw        int           // frames stored as raw blocks
	FramesCompressed int           // frames stored compressed
	EncodeTime       time.Duration // summed over all encoders
	SinkTime         time.Duration // time blocked in FrameSink.WriteFrame
	EncodeWait       time.Duration // time the in-order sink goroutine waited for an encoder
	Level            compress.Level
}

// job is one frame in flight.
type job struct {
	off     int64
	raw     []byte // the frame's content in the raw layout (compress.RawPos)
	n       int    // content bytes in raw
	out     []byte
	inPlace bool // out is raw finished in place, not a buffer of outPool
	codec   compress.Codec
	level   compress.Level // the level it was encoded at
	encDur  time.Duration
	done    chan struct{}
}

// Writer writes a saveset stream (without its label: the sink writes the
// label at the start of each part) as frames to a FrameSink.
//
// Frames are encoded by Workers goroutines and handed to the sink in
// order by one sink goroutine; at most 2×Workers frames are queued, so
// memory stays near (2×Workers+2)×FrameSize×2. A sink error is sticky:
// every later call returns it. Writer methods are not safe for concurrent
// use (Stats excepted).
type Writer struct {
	o    Options
	sink FrameSink
	enc  *compress.Encoder
	auto *compress.Auto
	tw   *tar.Writer

	cur      []byte    // frame being filled, in the raw layout (compress.RawPos)
	curN     int       // content bytes in cur
	curStart int64     // stream offset of the frame's first content byte
	pool     sync.Pool // raw frame buffers (compress.RawLayoutSize(FrameSize))
	outPool  sync.Pool // encoded frame buffers

	order   chan *job
	work    chan *job
	workers sync.WaitGroup
	emitter chan struct{}

	mu      sync.Mutex
	err     error // sticky
	aborted bool
	frames  []index.Frame
	stats   Stats

	closed bool
}

// NewWriter starts a writer. Call Close (to finish) or Abort.
func NewWriter(sink FrameSink, opts Options) (*Writer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	enc, err := compress.NewEncoder(o.Workers)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		o:       o,
		sink:    sink,
		enc:     enc,
		order:   make(chan *job, 2*o.Workers),
		work:    make(chan *job, 2*o.Workers),
		emitter: make(chan struct{}),
	}
	w.stats.Level = o.Level
	if o.Level == compress.LevelAuto {
		if w.auto, err = compress.NewAuto(o.Auto); err != nil {
			return nil, err
		}
		w.stats.Level = w.auto.Level()
	}
	w.pool.New = func() any { return make([]byte, compress.RawLayoutSize(o.FrameSize)) }
	w.cur = w.pool.Get().([]byte)
	w.tw = tar.NewWriter(frameWriter{w})
	for i := 0; i < o.Workers; i++ {
		w.workers.Add(1)
		go w.encodeLoop()
	}
	go w.sinkLoop()
	return w, nil
}

// outBuf returns an empty buffer for an encoded frame of n raw bytes; the
// sink loop gives it back once the sink is done with it. Reusing them saves
// the allocation and clearing of a frame-sized buffer per frame.
func (w *Writer) outBuf(n int) []byte {
	need := compress.RawFrameSize(n)
	if b, ok := w.outPool.Get().([]byte); ok && cap(b) >= need {
		return b[:0]
	}
	return make([]byte, 0, compress.RawFrameSize(max(n, w.o.FrameSize)))
}

// encodeLoop encodes frames. A frame stored raw is finished where its
// content lies (its content was filled in the raw layout); only a frame
// to compress is gathered into one piece first.
func (w *Writer) encodeLoop() {
	defer w.workers.Done()
	var flat []byte
	for j := range w.work {
		t0 := time.Now()
		lvl := w.o.Level
		if lvl == compress.LevelAuto {
			lvl = compress.LevelNone
			if w.enc.ProbeRaw(j.raw, j.n) < compress.ProbeThreshold {
				lvl = w.auto.Level()
			}
		}
		if lvl == compress.LevelNone {
			j.out, j.codec, j.inPlace = compress.FinishRawFrame(j.raw, j.n), compress.CodecRaw, true
		} else {
			flat = compress.GatherRaw(flat[:0], j.raw, j.n)
			j.out, j.codec = w.enc.Encode(w.outBuf(j.n), flat, lvl)
		}
		j.level = lvl
		j.encDur = time.Since(t0)
		close(j.done)
	}
}

func (w *Writer) sinkLoop() {
	defer close(w.emitter)
	for j := range w.order {
		t0 := time.Now()
		<-j.done
		wait := time.Since(t0)
		w.mu.Lock()
		skip := w.err != nil || w.aborted
		w.mu.Unlock()
		if skip {
			w.release(j)
			continue
		}
		t1 := time.Now()
		loc, err := w.sink.WriteFrame(j.out)
		sinkDur := time.Since(t1)
		n, c := j.n, len(j.out)
		w.release(j)
		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("stream: writing frame %d: %w", len(w.frames), err)
			w.mu.Unlock()
			continue
		}
		w.frames = append(w.frames, index.Frame{Offset: j.off, Size: uint32(n), CSize: uint32(c), Part: int32(loc.Part), PartOffset: loc.Offset})
		st := &w.stats
		st.Uncompressed += int64(n)
		st.Media += int64(c)
		if j.codec == compress.CodecRaw {
			st.FramesRaw++
		} else {
			st.FramesCompressed++
		}
		st.EncodeTime += j.encDur
		st.SinkTime += sinkDur
		st.EncodeWait += wait
		if w.auto != nil && j.codec == compress.CodecZstd {
			st.Level = w.auto.Observe(compress.Obs{Level: j.level, Compress: j.encDur / time.Duration(w.o.Workers), Sink: sinkDur, Raw: n, Out: c})
		}
		w.mu.Unlock()
		if w.o.OnFrame != nil {
			w.o.OnFrame(n, c)
		}
	}
}

// release gives a frame's buffers back once the sink is done with them.
func (w *Writer) release(j *job) {
	if j.out != nil && !j.inPlace {
		w.outPool.Put(j.out[:0])
	}
	w.pool.Put(j.raw)
	j.raw, j.out = nil, nil
}

// frameWriter is the io.Writer under the tar writer: it fills frames, in
// the raw layout.
type frameWriter struct{ w *Writer }

func (f frameWriter) Write(p []byte) (int, error) {
	w := f.w
	if free := w.free(); len(p) > 0 && len(p) <= len(free) && &free[0] == &p[0] {
		// p was read into the frame's free space (WriteEntry): it is in place.
		return len(p), w.fill(len(p))
	}
	n := 0
	for len(p) > 0 {
		k := copy(w.free(), p)
		p, n = p[k:], n+k
		if err := w.fill(k); err != nil {
			return n, err
		}
	}
	return n, nil
}

// free is where the frame's next content bytes go: up to the end of the
// current raw block.
func (w *Writer) free() []byte {
	at := compress.RawPos(w.curN)
	return w.cur[at : at+compress.RawRun(w.curN, w.o.FrameSize)]
}

// fill counts k bytes put into free() and submits the frame when it is full.
func (w *Writer) fill(k int) error {
	w.curN += k
	if w.curN == w.o.FrameSize {
		return w.submit()
	}
	return nil
}

// submit queues the current frame; it blocks while 2×Workers are queued.
func (w *Writer) submit() error {
	if err := w.stickyErr(); err != nil {
		return err
	}
	j := &job{off: w.curStart, raw: w.cur, n: w.curN, done: make(chan struct{})}
	if w.o.OnSeal != nil {
		w.o.OnSeal()
	}
	w.order <- j
	w.work <- j
	w.curStart += int64(w.curN)
	w.cur, w.curN = w.pool.Get().([]byte), 0
	return nil
}

func (w *Writer) stickyErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) setErr(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	return w.err
}

var zeros [32 << 10]byte

// WriteEntry writes e's pax header and, for regular files, exactly e.Size
// bytes read from content (extra bytes are not read). It sets e.Offset to
// the stream offset of the entry's first header block and, for files,
// e.Digest to the XXH3-128 of the content as stored.
//
// If content ends early the rest is padded with zeros, index.FlagChanged is
// set and the error wraps ErrShrank; if reading fails the same happens and
// the error wraps ErrContentRead. In both cases the stream stays valid and
// the writer usable. An entry that cannot be represented gives ErrEntry and
// writes nothing. Any other error is sticky.
func (w *Writer) WriteEntry(e *index.Entry, content io.Reader) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.stickyErr(); err != nil {
		return err
	}
	h, err := tarHeader(e)
	if err != nil {
		return err
	}
	if err := w.tw.Flush(); err != nil { // pads the previous entry
		return w.setErr(fmt.Errorf("stream: %w", err))
	}
	off := w.curStart + int64(w.curN)
	if err := w.tw.WriteHeader(h); err != nil {
		return w.setErr(fmt.Errorf("stream: %s: %w", e.Path, err))
	}
	e.Offset = off
	w.mu.Lock()
	w.stats.Entries++
	w.mu.Unlock()
	if h.Typeflag != tar.TypeReg {
		return nil
	}
	hs := NewDigest()
	got, readErr, err := w.copyContent(w.tw, e.Size, content, hs)
	if err != nil {
		return w.setErr(fmt.Errorf("stream: %s: %w", e.Path, err))
	}
	e.Digest = SumDigest(hs)
	return contentErr(e, got, e.Size, readErr)
}

// copyContent writes n content bytes read from content to out (the tar
// writer, or the frames themselves for a sparse entry) and to hs. If
// content ends early or fails, the rest is zeros; got says how much was
// read and readErr why it stopped. err is an error of the stream.
func (w *Writer) copyContent(out io.Writer, n int64, content io.Reader, hs *Digest) (got int64, readErr, err error) {
	for got < n && readErr == nil {
		if content == nil {
			readErr = io.EOF
			break
		}
		// Read straight into the frame being filled: the tar writer passes
		// the bytes on to frameWriter.Write, which sees they are already in
		// place and does not copy them.
		buf := w.free() // never empty: a full frame is submitted at once
		var k int
		k, readErr = content.Read(buf[:min(int64(len(buf)), n-got)])
		if k > 0 {
			hs.Write(buf[:k])
			if _, err := out.Write(buf[:k]); err != nil {
				return got, readErr, err
			}
			got += int64(k)
		}
	}
	for pad := n - got; pad > 0; {
		z := zeros[:min(pad, int64(len(zeros)))]
		hs.Write(z)
		if _, err := out.Write(z); err != nil {
			return got, readErr, err
		}
		pad -= int64(len(z))
	}
	return got, readErr, nil
}

// contentErr sets FlagChanged and says why when a file gave fewer than
// want bytes.
func contentErr(e *index.Entry, got, want int64, readErr error) error {
	if got >= want {
		return nil
	}
	e.Flags |= index.FlagChanged
	if readErr == io.EOF {
		return fmt.Errorf("stream: %s: %w: read %d of %d bytes, padded with zeros", e.Path, ErrShrank, got, want)
	}
	return fmt.Errorf("stream: %s: %w: %w (read %d of %d bytes, padded with zeros)", e.Path, ErrContentRead, readErr, got, want)
}

// HashZeros feeds n zero bytes to hs: the holes of a sparse file, which
// its digest counts as the zeros they read as.
func HashZeros(hs *Digest, n int64) {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		hs.Write(zeros[:k])
		n -= k
	}
}

// WriteSparseEntry writes a regular file that has holes. e.Size is its
// logical size, data its data extents (in order, apart, non-empty, inside
// the file: what lies between them is a hole) and content yields the bytes
// of the extents one after the other, not the holes. The entry is stored
// in the pax GNU sparse format 1.0, which GNU tar restores with its holes,
// and gets index.FlagSparse. e.Digest is of the logical content (holes
// read as zeros), as for WriteEntry; content that ends early or fails is
// handled as there (ErrShrank, ErrContentRead).
func (w *Writer) WriteSparseEntry(e *index.Entry, data []Extent, content io.Reader) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.stickyErr(); err != nil {
		return err
	}
	if e.Type != index.TypeFile {
		return fmt.Errorf("%w: %q: only regular files are stored sparse", ErrEntry, e.Path)
	}
	if err := checkExtents(data, e.Size); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrEntry, e.Path, err)
	}
	h, err := tarHeader(e)
	if err != nil {
		return err
	}
	spMap := appendSparseMap(nil, data, e.Size)
	var stored int64
	for _, x := range data {
		stored += x.Length
	}
	hdr, err := sparseHeader(h, e.Size, int64(len(spMap))+stored)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrEntry, e.Path, err)
	}
	if err := w.tw.Flush(); err != nil { // pads the previous entry
		return w.setErr(fmt.Errorf("stream: %w", err))
	}
	// The entry bypasses the tar writer (which cannot write sparse files):
	// its headers, map, data and padding go to the frames as they are.
	out := frameWriter{w}
	off := w.curStart + int64(w.curN)
	if _, err := out.Write(append(hdr, spMap...)); err != nil {
		return w.setErr(fmt.Errorf("stream: %s: %w", e.Path, err))
	}
	e.Offset = off
	e.Flags |= index.FlagSparse
	w.mu.Lock()
	w.stats.Entries++
	w.mu.Unlock()
	hs := NewDigest()
	var pos, got int64
	var readErr error
	for _, x := range data {
		HashZeros(hs, x.Offset-pos)
		var k int64
		if readErr == nil {
			k, readErr, err = w.copyContent(out, x.Length, content, hs)
		} else {
			_, _, err = w.copyContent(out, x.Length, nil, hs)
		}
		if err != nil {
			return w.setErr(fmt.Errorf("stream: %s: %w", e.Path, err))
		}
		got += k
		pos = x.End()
	}
	HashZeros(hs, e.Size-pos)
	if _, err := out.Write(zeros[:blockPad(stored)]); err != nil {
		return w.setErr(fmt.Errorf("stream: %s: %w", e.Path, err))
	}
	e.Digest = SumDigest(hs)
	return contentErr(e, got, stored, readErr)
}

// Close writes the tar end-of-archive marker, flushes the last frame,
// waits until every frame is in the sink, and returns the frame table.
func (w *Writer) Close() ([]index.Frame, error) {
	if w.closed {
		return nil, ErrClosed
	}
	w.closed = true
	err := w.stickyErr()
	if err == nil {
		if e := w.tw.Close(); e != nil {
			err = w.setErr(fmt.Errorf("stream: %w", e))
		}
	}
	if err == nil && w.curN > 0 {
		err = w.submit()
	}
	w.shutdown()
	if err == nil {
		err = w.stickyErr()
	}
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.frames, nil
}

// Abort stops the workers and discards frames not yet in the sink. What
// the sink already holds is a torn stream (a reader sees ErrTruncated).
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.mu.Lock()
	w.aborted = true
	if w.err == nil {
		w.err = ErrClosed
	}
	w.mu.Unlock()
	w.shutdown()
}

func (w *Writer) shutdown() {
	close(w.work)
	close(w.order)
	w.workers.Wait()
	<-w.emitter
	w.enc.Close()
}

// Stats returns the counters so far. Safe to call from any goroutine.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}
