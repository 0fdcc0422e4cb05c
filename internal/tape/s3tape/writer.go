package s3tape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/tape"
)

// cleanupTimeout bounds the requests that tidy up after a failed write
// (abort the upload, remove the chunks): the store may be gone, and the
// next Append tidies up again.
const cleanupTimeout = 30 * time.Second

// Append starts tape file len(Files())+1. It takes the writer lock (the
// lock object: a second writer in any process gets tape.ErrBusy), removes
// an incomplete last tape file and aborts any multipart upload a dead
// writer left under the tape, and rewrites a damaged copy of the label.
func (t *Tape) Append(tag string) (tape.FileWriter, error) {
	if err := tape.CheckTag(tag); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, tape.ErrClosed
	}
	if t.w != nil {
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, tape.ErrBusy)
	}
	ctx := context.Background()
	lk, err := t.lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, err)
	}
	w, err := t.startWriter(ctx, tag, lk)
	if err != nil {
		lk.release(ctx)
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, err)
	}
	t.w = w
	return w, nil
}

// startWriter runs under t.mu and the writer lock.
func (t *Tape) startWriter(ctx context.Context, tag string, lk *heldLock) (*writer, error) {
	// Another process may have relabelled or appended: trust only the store.
	l, damage, err := t.readLabel(ctx)
	if err != nil {
		return nil, err
	}
	t.label, t.damage = l, damage
	if damage != nil {
		if err := t.writeLabel(ctx, l); err != nil {
			return nil, t.s.wrap("rewrite the damaged label", err)
		}
	}
	if err := t.s.abortUploads(ctx, t.base); err != nil {
		return nil, t.s.wrap("abort unfinished uploads", err)
	}
	files, err := t.scan(ctx)
	if err != nil {
		return nil, err
	}
	if k := len(files); k > 0 && !files[k-1].mark {
		if err := t.erase(ctx, files[k-1]); err != nil {
			return nil, t.s.wrap(fmt.Sprintf("truncate incomplete tape file %d", k), err)
		}
		files = files[:k-1]
	}
	t.used = 0
	for _, f := range files {
		t.used += f.bytes()
	}
	bs := l.BlockSize
	chunk := max(int64(bs), t.s.cfg.chunkSize()/int64(bs)*int64(bs))
	w := &writer{
		t: t, lk: lk, n: len(files) + 1, tag: tag, bs: bs, chunk: chunk,
		part: t.s.cfg.partSize(), base: t.used, capacity: l.Capacity, early: l.EarlyWarning,
		label: l,
		jobs:  make(chan job, 1), free: make(chan []byte, 2), done: make(chan struct{}),
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.free <- make([]byte, 0, w.part)
	w.buf = make([]byte, 0, w.part)
	go w.uploader()
	return w, nil
}

// writer writes one tape file as chunk objects. Bytes collect in a part
// buffer; a full one goes to the uploader goroutine while the next fills
// (two buffers: the writer's memory is two parts). A chunk that fits in one
// part is one PUT, a bigger one a multipart upload of part-size parts,
// completed when the chunk is full. The block CRCs are computed as bytes
// arrive and stored at Finish. The first error, of either side, sticks.
// Not for concurrent use, but Written may be called from any goroutine.
type writer struct {
	t     *Tape
	lk    *heldLock
	n     int
	tag   string
	bs    int
	chunk int64 // bytes per chunk, a multiple of bs
	part  int
	label tape.Label

	base, capacity, early int64

	// The caller's side.
	written  atomic.Int64
	crcs     []uint32
	cur      uint32 // CRC of the block being filled
	inBlk    int    // bytes of it so far
	buf      []byte // bytes of the current part, not yet handed over
	chunkLen int64  // bytes of the current chunk handed over or in buf
	closed   bool

	// Between the two.
	jobs   chan job      // parts to upload, in order
	free   chan []byte   // part buffers back from the uploader
	done   chan struct{} // closed when the uploader has stopped
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	err    error // sticky
	ended  atomic.Bool

	// The uploader's side (the caller's once done is closed).
	k         int    // chunks completed
	storedLen int64  // bytes of the completed chunks
	upload    string // multipart upload id of the current chunk, or ""
	parts     []minio.CompletePart
	lost      bool // the lock was taken over: the tape file is no longer ours
	discarded bool
}

// job is a part for the uploader; end: the last of its chunk, which is
// then stored (chunkLen bytes).
type job struct {
	buf      []byte
	end      bool
	chunkLen int64
}

var (
	_ tape.FileWriter = (*writer)(nil)
	_ tape.Remainer   = (*writer)(nil)
)

func (w *writer) fail(op string, err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if errors.Is(err, tape.ErrEndOfMedia) || errors.Is(err, tape.ErrBusy) {
			w.err = fmt.Errorf("tape %s: tape file %d: %s: %w", w.label.Barcode, w.n, op, err)
		} else {
			w.err = fmt.Errorf("tape %s: tape file %d: %w", w.label.Barcode, w.n, w.t.s.wrap(op, err))
		}
		if errors.Is(err, tape.ErrEndOfMedia) {
			w.ended.Store(true)
		}
	}
	return w.err
}

func (w *writer) stickyErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Write takes p into the part buffer, handing full parts to the uploader.
// A write that would take the tape past its capacity accepts nothing and
// fails with tape.ErrEndOfMedia. An upload's failure shows at a later
// Write or at Finish.
func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, tape.ErrClosed
	}
	if err := w.stickyErr(); err != nil {
		return 0, err
	}
	if used := w.base + w.written.Load(); used+int64(len(p)) > w.capacity {
		return 0, w.fail("write", fmt.Errorf("%w: %d bytes used of %d, %d more refused", tape.ErrEndOfMedia, used, w.capacity, len(p)))
	}
	total := 0
	for len(p) > 0 {
		room := min(int64(w.part-len(w.buf)), w.chunk-w.chunkLen)
		n := int(min(int64(len(p)), room))
		w.sum(p[:n])
		w.buf = append(w.buf, p[:n]...)
		w.chunkLen += int64(n)
		p = p[n:]
		total += n
		w.written.Add(int64(n))
		if w.chunkLen == w.chunk || len(w.buf) == w.part {
			if err := w.send(w.chunkLen == w.chunk); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// send hands the part buffer to the uploader (end: the last part of its
// chunk) and takes the other buffer, once the uploader is done with it.
func (w *writer) send(end bool) error {
	j := job{buf: w.buf, end: end, chunkLen: w.chunkLen}
	if end {
		w.chunkLen = 0
	}
	w.jobs <- j
	w.buf = (<-w.free)[:0]
	return w.stickyErr()
}

// uploader uploads the parts handed to it, in order, until jobs closes.
// After an error it only hands the buffers back.
func (w *writer) uploader() {
	defer close(w.done)
	for j := range w.jobs {
		if w.stickyErr() == nil {
			if j.end {
				w.endChunk(j.buf, j.chunkLen)
			} else {
				w.putPart(j.buf)
			}
		}
		w.free <- j.buf
	}
}

// stop ends the uploader after the parts handed over (Finish) or at once,
// cancelling a request in flight (Abort).
func (w *writer) stop(now bool) {
	if now {
		w.cancel()
	}
	close(w.jobs)
	<-w.done
	w.cancel()
}

// sum feeds b to the block CRCs.
func (w *writer) sum(b []byte) {
	for len(b) > 0 {
		n := min(len(b), w.bs-w.inBlk)
		w.cur = tape.UpdateCRC32C(w.cur, b[:n])
		w.inBlk += n
		b = b[n:]
		if w.inBlk == w.bs {
			w.crcs = append(w.crcs, w.cur)
			w.cur, w.inBlk = 0, 0
		}
	}
}

// putPart uploads b as the next part of the current chunk, starting its
// multipart upload first if need be.
func (w *writer) putPart(b []byte) error {
	ctx := w.ctx
	s := w.t.s
	key := w.t.base + chunkKey(w.n, w.k+1)
	if w.upload == "" {
		id, err := s.core.NewMultipartUpload(ctx, s.cfg.Bucket, key, minio.PutObjectOptions{ContentType: "application/octet-stream"})
		if err != nil {
			return w.fail("start upload of "+chunkKey(w.n, w.k+1), err)
		}
		w.upload = id
	}
	num := len(w.parts) + 1
	p, err := s.core.PutObjectPart(ctx, s.cfg.Bucket, key, w.upload, num, bytes.NewReader(b), int64(len(b)), minio.PutObjectPartOptions{})
	if err != nil {
		return w.fail(fmt.Sprintf("upload part %d of %s", num, chunkKey(w.n, w.k+1)), err)
	}
	w.parts = append(w.parts, minio.CompletePart{PartNumber: num, ETag: p.ETag})
	return nil
}

// endChunk stores the current chunk, whose last part is b and length
// chunkLen: one PUT when it never needed a part upload, else its last part
// and the completion of its upload. The lock is renewed first: a chunk
// becomes visible only by that PUT or completion, so a writer that lost its
// lock never overwrites the chunk of the writer that took over.
func (w *writer) endChunk(b []byte, chunkLen int64) error {
	ctx := w.ctx
	s := w.t.s
	name := chunkKey(w.n, w.k+1)
	key := w.t.base + name
	if err := w.renew(ctx); err != nil {
		return err
	}
	if w.upload == "" {
		if _, err := s.put(ctx, key, b, minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
			return w.fail("upload "+name, err)
		}
	} else {
		if len(b) > 0 {
			if err := w.putPart(b); err != nil {
				return err
			}
		}
		if _, err := s.core.CompleteMultipartUpload(ctx, s.cfg.Bucket, key, w.upload, w.parts, minio.PutObjectOptions{}); err != nil {
			// A completion whose answer was lost and was retried finds
			// no upload: it is done if the chunk is there, whole.
			if !isNoUpload(err) || !w.chunkStored(ctx, key, chunkLen) {
				return w.fail("complete upload of "+name, err)
			}
		}
	}
	w.k++
	w.storedLen += chunkLen
	w.upload, w.parts = "", nil
	return nil
}

// chunkStored reports whether the current chunk's object is in the store
// with the chunk's length.
func (w *writer) chunkStored(ctx context.Context, key string, chunkLen int64) bool {
	oi, err := w.t.s.core.StatObject(ctx, w.t.s.cfg.Bucket, key, minio.StatObjectOptions{})
	return err == nil && oi.Size == chunkLen
}

// renew renews the writer lock; a lock lost to another writer stops this
// one, which then leaves the tape alone.
func (w *writer) renew(ctx context.Context) error {
	if err := w.lk.renew(ctx); err != nil {
		w.lost = errors.Is(err, tape.ErrBusy)
		return w.fail("renew the writer lock", err)
	}
	return nil
}

// Written is the number of bytes accepted so far.
func (w *writer) Written() int64 { return w.written.Load() }

// Remaining is the number of bytes that still fit before early warning;
// negative past it.
func (w *writer) Remaining() int64 { return w.early - w.base - w.written.Load() }

// EarlyWarning reports whether early warning (or the end of the tape,
// which lies past it) is reached. Both stick.
func (w *writer) EarlyWarning() bool { return w.Remaining() <= 0 || w.ended.Load() }

// Finish stores the last chunk, then the checksum object, then the
// filemark object: the tape file is complete exactly when its filemark
// exists. On any error the upload is aborted and the tape file removed.
func (w *writer) Finish() (tape.FileInfo, error) {
	if w.closed {
		return tape.FileInfo{}, tape.ErrClosed
	}
	w.closed = true
	if w.chunkLen > 0 && w.stickyErr() == nil {
		w.send(true) // the last chunk
	}
	w.stop(false)
	err := w.stickyErr()
	var info tape.FileInfo
	if err == nil {
		if w.inBlk > 0 {
			w.crcs = append(w.crcs, w.cur)
		}
		m := tape.Filemark{
			Number: w.n, BlockSize: w.bs, Bytes: w.written.Load(), Blocks: int64(len(w.crcs)),
			CRCTable: tape.ChecksumTableCRC(w.crcs), Written: w.t.s.clock().UTC(), Tag: w.tag,
		}
		ctx := context.Background()
		mark, e := tape.EncodeFilemark(m)
		if e != nil {
			err = fmt.Errorf("tape %s: tape file %d: %w", w.label.Barcode, w.n, e)
		} else if e := w.renew(ctx); e != nil { // as for a chunk: the lock first
			err = e
		} else if _, e := w.t.s.put(ctx, w.t.base+fileKey(w.n, "crc"), tape.EncodeChecksums(w.bs, w.crcs), minio.PutObjectOptions{}); e != nil {
			err = w.fail("store checksums", e)
		} else if _, e := w.t.s.put(ctx, w.t.base+fileKey(w.n, "mark"), mark, minio.PutObjectOptions{}); e != nil {
			err = w.fail("store filemark", e)
		} else {
			info = m.Info()
		}
	}
	if err != nil {
		w.discard()
	}
	w.release()
	if err != nil {
		return tape.FileInfo{}, err
	}
	return info, nil
}

// Abort stops writing, aborts the chunk being uploaded and removes the
// tape file's objects. What it cannot remove (the store is gone) stays an
// incomplete tape file, which readers ignore and the next Append removes.
func (w *writer) Abort() error {
	if w.closed {
		return tape.ErrClosed
	}
	w.closed = true
	w.mu.Lock()
	if w.err == nil {
		w.err = tape.ErrClosed // the uploader stops
	}
	w.mu.Unlock()
	w.stop(true)
	w.discard()
	w.release()
	return nil
}

// discard aborts the upload in progress and removes the tape file's
// objects, under the writer lock.
func (w *writer) discard() {
	if w.lost {
		return // another writer holds the tape; the objects may be its own
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	s := w.t.s
	if w.upload != "" {
		if err := s.core.AbortMultipartUpload(ctx, s.cfg.Bucket, w.t.base+chunkKey(w.n, w.k+1), w.upload); err != nil && !isNoUpload(err) {
			return
		}
		w.upload = ""
	}
	objs, err := s.list(ctx, w.t.base+fmt.Sprintf("%06d.", w.n))
	if err != nil {
		return
	}
	f := fileObjs{n: w.n}
	for _, o := range objs {
		if strings.HasPrefix(strings.TrimPrefix(o.key, w.t.base), fmt.Sprintf("%06d.data.", w.n)) {
			f.chunks = append(f.chunks, o)
		}
	}
	if err := w.t.erase(ctx, f); err != nil {
		return
	}
	w.discarded = true
}

// release hands the tape back: it records the bytes now on the tape and
// removes the lock object.
func (w *writer) release() {
	t := w.t
	t.mu.Lock()
	if t.w == w {
		t.w = nil
	}
	t.used = w.base + w.storedLen
	if w.discarded {
		t.used = w.base
	}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if !w.lost {
		w.lk.release(ctx)
	}
}
