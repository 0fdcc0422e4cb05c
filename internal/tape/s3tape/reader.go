package s3tape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/tape"
)

// Open opens complete tape file n for reading: its filemark, its checksum
// object and the list of its chunks (three requests); data is fetched by
// ranged GETs from the chunk that holds the position on, so a reader that
// seeks reads only the chunks it needs. A tape file past the end of data
// is tape.ErrNoSuchFile; one without a filemark tape.ErrIncomplete; a
// damaged filemark or checksum object, or chunks that do not add up to the
// filemark's length, a *tape.CorruptError.
func (t *Tape) Open(n int) (tape.FileReader, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, tape.ErrClosed
	}
	l := t.label
	writing := t.w != nil && t.w.n == n
	t.mu.Unlock()
	if n < 1 {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", l.Barcode, n, tape.ErrNoSuchFile)
	}
	if writing {
		return nil, fmt.Errorf("tape %s: tape file %d: %w (being written)", l.Barcode, n, tape.ErrIncomplete)
	}
	ctx := context.Background()
	objs, err := t.s.list(ctx, t.base+fmt.Sprintf("%06d.", n))
	if err != nil {
		return nil, t.s.wrap(fmt.Sprintf("tape %s: list tape file %d", l.Barcode, n), err)
	}
	files := t.parse(objs)
	if len(files) < n {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", l.Barcode, n, tape.ErrNoSuchFile)
	}
	f := files[n-1]
	if !f.mark {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", l.Barcode, n, tape.ErrIncomplete)
	}
	info, m, err := t.info(ctx, l, f)
	if err != nil {
		return nil, err
	}
	corrupt := func(block int64, err error) error {
		return &tape.CorruptError{Library: l.Library, Barcode: l.Barcode, File: n, Block: block, Err: err}
	}
	// Distrust the block count: read no more than it needs.
	b, err := t.s.get(ctx, t.base+fileKey(n, "crc"), tape.ChecksumHeaderBytes+4*m.Blocks)
	if isNotFound(err) {
		return nil, corrupt(-1, fmt.Errorf("checksum object missing: %w", tape.ErrTruncated))
	}
	if err != nil && !errors.Is(err, errTooBig) {
		return nil, t.s.wrap(fmt.Sprintf("tape %s: checksums of tape file %d", l.Barcode, n), err)
	}
	if err != nil {
		return nil, corrupt(-1, fmt.Errorf("checksum object: %w: %v", tape.ErrCorrupt, err))
	}
	table, err := tape.DecodeChecksums(b, *m)
	if err != nil {
		return nil, corrupt(-1, err)
	}
	starts := make([]int64, len(f.chunks)+1)
	for i, c := range f.chunks {
		num, _ := strconv.Atoi(c.key[strings.LastIndexByte(c.key, '.')+1:])
		if num != i+1 || c.size <= 0 {
			return nil, corrupt(-1, fmt.Errorf("chunk %d of %d: %w: missing or empty", i+1, len(f.chunks), tape.ErrTruncated))
		}
		starts[i+1] = starts[i] + c.size
	}
	if total := starts[len(f.chunks)]; total != m.Bytes {
		return nil, corrupt(-1, fmt.Errorf("%w: chunks hold %d bytes, filemark says %d", tape.ErrTruncated, total, m.Bytes))
	}
	r := &reader{t: t, info: info, table: table, chunks: f.chunks, starts: starts, corrupt: corrupt}
	r.cur = tape.NewBlockCursor(info, r.load)
	return r, nil
}

// reader reads a complete tape file block by block, checking each block's
// CRC-32C as it enters. It keeps one GET open and reads on from it while
// reading goes on in order; a seek elsewhere closes it, and the next block
// opens a ranged GET at that block. Not for concurrent use.
type reader struct {
	t       *Tape
	info    tape.FileInfo
	table   []uint32
	chunks  []object
	starts  []int64 // starts[i] is the file offset of chunk i (0-based); the last is the length
	cur     tape.BlockCursor
	closed  bool
	corrupt func(block int64, err error) error

	body    io.ReadCloser // open GET, delivering bytes from bodyOff to the end of chunk bodyC
	bodyOff int64
	bodyC   int
}

var _ tape.FileReader = (*reader)(nil)

func (r *reader) Info() tape.FileInfo { return r.info }

func (r *reader) closeBody() {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
}

// chunkAt is the chunk holding file offset off (< length).
func (r *reader) chunkAt(off int64) int {
	lo, hi := 0, len(r.chunks)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if r.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// open starts a ranged GET from file offset off to the end of its chunk.
func (r *reader) open(off int64) error {
	r.closeBody()
	c := r.chunkAt(off)
	var opts minio.GetObjectOptions
	if start := off - r.starts[c]; start > 0 {
		if err := opts.SetRange(start, r.chunks[c].size-1); err != nil {
			return err
		}
	}
	body, _, _, err := r.t.s.core.GetObject(context.Background(), r.t.s.cfg.Bucket, r.chunks[c].key, opts)
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("chunk %d: %w", c+1, tape.ErrTruncated)
		}
		return r.t.s.wrap(fmt.Sprintf("tape %s: read tape file %d", r.t.Barcode(), r.info.Number), err)
	}
	r.body, r.bodyOff, r.bodyC = body, off, c
	return nil
}

// load reads block k into dst (len ≥ blockLen(k)) and checks it.
func (r *reader) load(dst []byte, k int64) ([]byte, error) {
	n := r.cur.BlockLen(k)
	dst = dst[:n]
	off := k * int64(r.info.BlockSize)
	for got := 0; got < n; {
		if r.body == nil || r.bodyOff != off+int64(got) || r.bodyOff == r.starts[r.bodyC+1] {
			if err := r.open(off + int64(got)); err != nil {
				if errors.Is(err, tape.ErrTruncated) {
					return nil, r.corrupt(k, err)
				}
				return nil, err
			}
		}
		want := int(min(int64(n-got), r.starts[r.bodyC+1]-r.bodyOff))
		m, err := io.ReadFull(r.body, dst[got:got+want])
		got += m
		r.bodyOff += int64(m)
		if err != nil {
			r.closeBody()
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return nil, r.corrupt(k, tape.ErrTruncated)
			}
			return nil, fmt.Errorf("tape %s: tape file %d: block %d: %w", r.t.Barcode(), r.info.Number, k, r.t.s.wrap("read", err))
		}
	}
	if tape.CRC32C(dst) != r.table[k] {
		return nil, r.corrupt(k, tape.ErrCorrupt)
	}
	return dst, nil
}

// Read reads from the current position, checking each block as it enters.
func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	return r.cur.Read(p)
}

// Seek sets the position; nothing is fetched until the next Read.
func (r *reader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	return r.cur.Seek(offset, whence)
}

// Close ends the open GET, if any.
func (r *reader) Close() error {
	if r.closed {
		return tape.ErrClosed
	}
	r.closed = true
	r.closeBody()
	return nil
}
