package tape

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open opens complete tape file n (1-based) for reading. A tape file past
// the end of data is ErrNoSuchFile; one without a filemark ErrIncomplete; a
// damaged filemark or checksum table a *CorruptError.
func (t *Tape) Open(n int) (FileReader, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	l := t.label
	t.mu.Unlock()
	if n < 1 {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", l.Barcode, n, ErrNoSuchFile)
	}
	info, m, err := t.info(l, n)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", l.Barcode, n, ErrIncomplete)
	}
	corrupt := func(block int64, err error) error {
		return &CorruptError{Library: l.Library, Barcode: l.Barcode, File: n, Block: block, Err: err}
	}
	table, err := t.readTable(*m)
	if err != nil {
		return nil, corrupt(-1, err)
	}
	data, err := t.fs.OpenFile(t.path(n, extData), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	r := &fileReader{
		info:    info,
		data:    data,
		table:   table,
		barcode: l.Barcode,
		corrupt: corrupt,
	}
	r.cur = NewBlockCursor(info, r.load)
	return r, nil
}

// readTable reads and checks the checksum file of the tape file m completes.
func (t *Tape) readTable(m filemark) ([]uint32, error) {
	f, err := t.fs.OpenFile(t.path(m.Number, extSums), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checksum file missing: %w", ErrTruncated)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Distrust the block count: the file must hold it before we allocate.
	want := sumHeaderSize + 4*m.Blocks
	if st.Size() < want {
		return nil, fmt.Errorf("checksum file: %w: %d bytes, want %d", ErrTruncated, st.Size(), want)
	}
	b := make([]byte, want)
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = ErrTruncated
		}
		return nil, fmt.Errorf("checksum file: %w", err)
	}
	bs, err := decodeSumHeader(b)
	if err != nil {
		return nil, err
	}
	if bs != m.BlockSize {
		return nil, fmt.Errorf("checksum file: %w: block size %d, filemark says %d", ErrCorrupt, bs, m.BlockSize)
	}
	if got := crc32c(b[sumHeaderSize:]); got != m.CRCTable {
		return nil, fmt.Errorf("checksum table: %w: crc %08x, filemark says %08x", ErrCorrupt, got, m.CRCTable)
	}
	return decodeSumTable(b[sumHeaderSize:], m.Blocks)
}

// fileReader reads a complete tape file, one block at a time, checking each
// block's CRC-32C as it enters. Not for concurrent use.
type fileReader struct {
	info    FileInfo
	data    File
	table   []uint32
	cur     BlockCursor
	closed  bool
	barcode string
	corrupt func(block int64, err error) error
}

var _ FileReader = (*fileReader)(nil)

func (r *fileReader) Info() FileInfo { return r.info }

// load reads block k into dst (len ≥ blockLen(k)) and checks it.
func (r *fileReader) load(dst []byte, k int64) ([]byte, error) {
	n := r.cur.BlockLen(k)
	dst = dst[:n]
	got, err := r.data.ReadAt(dst, k*int64(r.info.BlockSize))
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, r.corrupt(k, ErrTruncated)
		}
		return nil, fmt.Errorf("%s: tape file %d: block %d: %w", r.barcode, r.info.Number, k, err)
	}
	if crc32c(dst) != r.table[k] {
		return nil, r.corrupt(k, ErrCorrupt)
	}
	return dst, nil
}

// Read reads from the current position, checking each block as it enters.
func (r *fileReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	return r.cur.Read(p)
}

// Seek sets the position in O(1): no data is read until the next Read.
func (r *fileReader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, ErrClosed
	}
	return r.cur.Seek(offset, whence)
}

func (r *fileReader) Close() error {
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	return r.data.Close()
}
