package sttape

// Writing: Append, the tape file's blocks, Finish (data, filemark, trailer,
// filemark) and Abort (doc.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/kura-backup/kura/internal/tape"
)

// Append starts tape file len(Files())+1 after the last complete one,
// writing over an incomplete one.
func (t *Device) Append(tag string) (tape.FileWriter, error) {
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
	if t.readers > 0 {
		return nil, fmt.Errorf("append to %s: %w: %d tape files open for reading, and the drive has one head", t.label.Barcode, tape.ErrBusy, t.readers)
	}
	st, err := t.d.Status()
	if err != nil {
		return nil, fmt.Errorf("append to %s: status: %w", t.label.Barcode, err)
	}
	if st.WriteProtected() {
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, ErrWriteProtected)
	}
	n := len(t.files) + 1
	bs := t.opts.BlockSize
	if bs == 0 {
		bs = t.label.BlockSize
	}
	if err := t.locate(dataFile(n)); err != nil {
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, err)
	}
	if err := t.d.Op(mtSETBLK, int32(bs)); err != nil {
		return nil, fmt.Errorf("append to %s: set block size %d: %w", t.label.Barcode, bs, err)
	}
	t.partial = nil
	t.w = &fileWriter{t: t, number: n, bs: bs, tag: tag, base: t.used(), cur: make([]byte, 0, bs)}
	return t.w, nil
}

// fileWriter writes one tape file: data blocks, then at Finish a filemark,
// the trailer and a filemark. It is not for concurrent use; Written and
// EarlyWarning are.
type fileWriter struct {
	t      *Device
	number int
	bs     int
	tag    string
	base   int64 // data bytes of the earlier tape files
	cur    []byte

	// Under t.mu.
	written int64
	blocks  int64
	table   []byte
	ew      bool  // the drive signalled early warning
	err     error // first error, sticky
	closed  bool
}

var _ tape.FileWriter = (*fileWriter)(nil)

func (w *fileWriter) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("tape %s: tape file %d: %w", w.t.label.Barcode, w.number, err)
	}
	return w.err
}

// flush writes the block in cur, padded with zeros when it is the last.
func (w *fileWriter) flush() error {
	b := w.cur
	sum := crc32.Checksum(b, castagnoli)
	if len(b) < w.bs {
		b = append(b, make([]byte, w.bs-len(b))...)
	}
	ew, err := w.t.writeBlock(b)
	w.ew = w.ew || ew
	if err != nil {
		return w.fail(fmt.Errorf("block %d: %w", w.blocks, err))
	}
	w.table = binary.LittleEndian.AppendUint32(w.table, sum)
	w.blocks++
	w.cur = w.cur[:0]
	return nil
}

// Write copies p into blocks and writes each full one. A write that would
// take the tape past its label's capacity accepts nothing and fails with
// ErrEndOfMedia, as does one the drive cannot fit before its physical end.
func (w *fileWriter) Write(p []byte) (int, error) {
	t := w.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.closed {
		return 0, tape.ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.base+w.written+int64(len(p)) > t.label.Capacity {
		return 0, w.fail(fmt.Errorf("%w: %d bytes used of %d, %d more refused", tape.ErrEndOfMedia, w.base+w.written, t.label.Capacity, len(p)))
	}
	total := 0
	for len(p) > 0 {
		n := copy(w.cur[len(w.cur):w.bs], p)
		w.cur = w.cur[:len(w.cur)+n]
		p = p[n:]
		total += n
		w.written += int64(n)
		if len(w.cur) == w.bs {
			if err := w.flush(); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// Written is the number of bytes accepted so far.
func (w *fileWriter) Written() int64 {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	return w.written
}

// EarlyWarning reports whether the drive signalled early warning, the
// label's early warning point is reached, or the end of the tape. All
// stick.
func (w *fileWriter) EarlyWarning() bool {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	return w.ew || w.base+w.written >= w.t.label.EarlyWarning || errors.Is(w.err, tape.ErrEndOfMedia)
}

// Finish writes the last block, a filemark, the trailer and a filemark.
// The tape file is durable once the drive has written the last filemark
// (writing a filemark flushes the drive's buffer). On any error the tape
// file is cut off as Abort does.
func (w *fileWriter) Finish() (tape.FileInfo, error) {
	t := w.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.closed {
		return tape.FileInfo{}, tape.ErrClosed
	}
	w.closed = true
	fi, err := w.finish()
	if err != nil {
		if aerr := w.cut(); aerr != nil {
			err = fmt.Errorf("%w (and cutting it off: %v)", err, aerr)
		}
		t.w = nil
		return tape.FileInfo{}, err
	}
	t.files = append(t.files, fi)
	t.w = nil
	return fi, nil
}

func (w *fileWriter) finish() (tape.FileInfo, error) {
	t := w.t
	if w.err != nil {
		return tape.FileInfo{}, w.err
	}
	if len(w.cur) > 0 {
		if err := w.flush(); err != nil {
			return tape.FileInfo{}, err
		}
	}
	if err := t.d.Op(mtWEOF, 1); err != nil {
		return tape.FileInfo{}, w.fail(fmt.Errorf("filemark after the data: %w", err))
	}
	fi := tape.FileInfo{Number: w.number, Status: tape.FileComplete, Bytes: w.written, Blocks: w.blocks, BlockSize: w.bs,
		CRCTable: crc32.Checksum(w.table, castagnoli), Written: time.Unix(0, t.opts.clock().UnixNano()).UTC(), Tag: w.tag}
	b, err := encodeTrailer(fi, w.table)
	if err != nil {
		return tape.FileInfo{}, w.fail(err)
	}
	if err := t.d.Op(mtSETBLK, MetaBlockSize); err != nil {
		return tape.FileInfo{}, w.fail(fmt.Errorf("set block size %d: %w", MetaBlockSize, err))
	}
	for p := b; len(p) > 0; {
		blk := make([]byte, MetaBlockSize)
		p = p[copy(blk, p):]
		ew, err := t.writeBlock(blk)
		w.ew = w.ew || ew
		if err != nil {
			return tape.FileInfo{}, w.fail(fmt.Errorf("trailer: %w", err))
		}
	}
	if err := t.d.Op(mtWEOF, 1); err != nil {
		return tape.FileInfo{}, w.fail(fmt.Errorf("filemark after the trailer: %w", err))
	}
	return fi, nil
}

// Abort stops writing and cuts the tape off before the tape file: its
// space is free at once.
func (w *fileWriter) Abort() error {
	t := w.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.closed {
		return tape.ErrClosed
	}
	w.closed = true
	err := w.cut()
	t.w = nil
	return err
}

// cut ends the tape before the tape file being written: a filemark ends
// what was written (so the head can move), the head goes back to where the
// tape file began, and a filemark written there discards everything after
// it. Scanning reads that as the end of the tape files.
func (w *fileWriter) cut() error {
	t := w.t
	if err := t.d.Op(mtWEOF, 1); err != nil {
		t.partial = &tape.FileInfo{Number: w.number, Status: tape.FileIncomplete, BlockSize: w.bs, Blocks: w.blocks, Bytes: w.written}
		return fmt.Errorf("tape %s: cut off tape file %d: %w", t.label.Barcode, w.number, err)
	}
	if err := t.locate(dataFile(w.number)); err != nil {
		t.partial = &tape.FileInfo{Number: w.number, Status: tape.FileIncomplete, BlockSize: w.bs, Blocks: w.blocks, Bytes: w.written}
		return fmt.Errorf("tape %s: cut off tape file %d: %w", t.label.Barcode, w.number, err)
	}
	if err := t.d.Op(mtWEOF, 1); err != nil {
		t.partial = &tape.FileInfo{Number: w.number, Status: tape.FileIncomplete, BlockSize: w.bs, Blocks: w.blocks, Bytes: w.written}
		return fmt.Errorf("tape %s: cut off tape file %d: %w", t.label.Barcode, w.number, err)
	}
	// Back to the beginning of the (now empty) tape file, where Append
	// writes next.
	return t.locate(dataFile(w.number))
}
