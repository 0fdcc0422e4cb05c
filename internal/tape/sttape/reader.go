package sttape

// Reading: Open finds a tape file's trailer, then reads its blocks,
// each checked against its CRC-32C as it enters.

import (
	"fmt"
	"hash/crc32"
	"io"

	"github.com/kura-backup/kura/internal/tape"
)

// Open reads the trailer of tape file n and returns a reader of its data,
// every block's CRC-32C checked as it enters.
func (t *Device) Open(n int) (tape.FileReader, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, tape.ErrClosed
	}
	if t.w != nil {
		if n == t.w.number {
			return nil, fmt.Errorf("tape %s: tape file %d: %w", t.label.Barcode, n, tape.ErrIncomplete)
		}
		return nil, fmt.Errorf("tape %s: open tape file %d: %w: tape file %d is being written, and the drive has one head", t.label.Barcode, n, tape.ErrBusy, t.w.number)
	}
	if t.partial != nil && n == t.partial.Number {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", t.label.Barcode, n, tape.ErrIncomplete)
	}
	if n < 1 || n > len(t.files) {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", t.label.Barcode, n, tape.ErrNoSuchFile)
	}
	if err := t.bad[n]; err != nil {
		return nil, err
	}
	corrupt := func(err error) error {
		return &tape.CorruptError{Library: t.label.Library, Barcode: t.label.Barcode, File: n, Block: -1, Err: err}
	}
	if err := t.locate(trailerFile(n)); err != nil {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", t.label.Barcode, n, err)
	}
	tr, empty, done, err := t.readTrailer()
	if empty || !done {
		err = fmt.Errorf("%w: the trailer is gone", tape.ErrTruncated)
	}
	if err != nil {
		return nil, corrupt(err)
	}
	if tr.FileInfo != t.files[n-1] {
		return nil, corrupt(fmt.Errorf("%w: the trailer of tape file %d changed since the tape was opened", tape.ErrCorrupt, n))
	}
	t.readers++
	return &fileReader{t: t, info: tr.FileInfo, sums: tr.sums, blk: make([]byte, tr.BlockSize), blkNo: -1}, nil
}

// fileReader reads one tape file's data blocks.
type fileReader struct {
	t      *Device
	info   tape.FileInfo
	sums   []uint32
	off    int64
	blk    []byte // the block last read, checked
	blkNo  int64  // its number, or -1
	head   int64  // the block at the head when t.owner is this reader
	closed bool
}

var _ tape.FileReader = (*fileReader)(nil)

func (r *fileReader) Info() tape.FileInfo { return r.info }

func (r *fileReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	if r.off >= r.info.Bytes {
		return 0, io.EOF
	}
	bs := int64(r.info.BlockSize)
	k := r.off / bs
	if k != r.blkNo {
		t := r.t
		t.mu.Lock()
		err := r.load(k)
		t.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	in := r.blk[r.off-k*bs : min(bs, r.info.Bytes-k*bs)]
	n := copy(p, in)
	r.off += int64(n)
	return n, nil
}

// load reads block k into r.blk and checks it, moving the head there
// first unless it is there already: space to the data, then over records.
func (r *fileReader) load(k int64) error {
	t := r.t
	if t.closed {
		return tape.ErrClosed
	}
	corrupt := func(err error) error {
		return &tape.CorruptError{Library: t.label.Library, Barcode: t.label.Barcode, File: r.info.Number, Block: k, Err: err}
	}
	if t.owner != r {
		if err := t.locate(dataFile(r.info.Number)); err != nil {
			return fmt.Errorf("tape %s: tape file %d: %w", t.label.Barcode, r.info.Number, err)
		}
		if err := t.d.Op(mtSETBLK, int32(r.info.BlockSize)); err != nil {
			return fmt.Errorf("tape %s: set block size %d: %w", t.label.Barcode, r.info.BlockSize, err)
		}
		t.owner, r.head = r, 0
	}
	var err error
	switch d := k - r.head; {
	case d > 0:
		err = t.d.Op(mtFSR, int32(d))
	case d < 0:
		err = t.d.Op(mtBSR, int32(-d))
	}
	if err != nil {
		t.owner = nil
		return fmt.Errorf("tape %s: tape file %d: space to block %d: %w", t.label.Barcode, r.info.Number, k, err)
	}
	r.head = k
	n, err := t.d.Read(r.blk)
	if err != nil || n != len(r.blk) {
		t.owner, r.blkNo = nil, -1
		if err == nil {
			err = fmt.Errorf("%w: the data ends at block %d", tape.ErrTruncated, k)
		} else {
			err = fmt.Errorf("%w: %v", tape.ErrCorrupt, err)
		}
		return corrupt(err)
	}
	r.head = k + 1
	bs := int64(r.info.BlockSize)
	if got := crc32.Checksum(r.blk[:min(bs, r.info.Bytes-k*bs)], castagnoli); got != r.sums[k] {
		r.blkNo = -1
		return corrupt(tape.ErrCorrupt)
	}
	r.blkNo = k
	return nil
}

// Seek positions in O(1): the block is found by spacing over records when
// it is read.
func (r *fileReader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	abs, err := tape.SeekPosition(r.off, r.info.Bytes, offset, whence)
	if err != nil {
		return 0, err
	}
	r.off = abs
	return abs, nil
}

func (r *fileReader) Close() error {
	if r.closed {
		return tape.ErrClosed
	}
	r.closed = true
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.readers--
	if t.owner == r {
		t.owner = nil
	}
	return nil
}
