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
	return &fileReader{
		info:    info,
		data:    data,
		table:   table,
		blk:     -1,
		barcode: l.Barcode,
		buf:     make([]byte, 0, m.BlockSize),
		corrupt: corrupt,
	}, nil
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
	pos     int64
	blk     int64  // block held in buf, or -1
	buf     []byte // the checked block blk
	closed  bool
	barcode string
	corrupt func(block int64, err error) error
}

var _ FileReader = (*fileReader)(nil)

func (r *fileReader) Info() FileInfo { return r.info }

// blockLen is the length of block k.
func (r *fileReader) blockLen(k int64) int {
	bs := int64(r.info.BlockSize)
	return int(min(bs, r.info.Bytes-k*bs))
}

// load reads block k into dst (len ≥ blockLen(k)) and checks it.
func (r *fileReader) load(dst []byte, k int64) ([]byte, error) {
	n := r.blockLen(k)
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

// Read reads from the current position. A whole aligned block is read
// straight into p; anything else goes through the block buffer.
func (r *fileReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	total := 0
	for len(p) > 0 && r.pos < r.info.Bytes {
		bs := int64(r.info.BlockSize)
		k := r.pos / bs
		off := int(r.pos - k*bs)
		if off == 0 && r.blk != k && len(p) >= r.blockLen(k) {
			b, err := r.load(p, k)
			if err != nil {
				return total, err
			}
			n := len(b)
			p, total, r.pos = p[n:], total+n, r.pos+int64(n)
			continue
		}
		if r.blk != k {
			r.blk = -1
			b, err := r.load(r.buf[:cap(r.buf)], k)
			if err != nil {
				return total, err
			}
			r.buf, r.blk = b, k
		}
		n := copy(p, r.buf[off:])
		p, total, r.pos = p[n:], total+n, r.pos+int64(n)
	}
	if total == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return total, nil
}

// Seek sets the position in O(1): no data is read until the next Read.
// Seeking past the end is allowed; Read then returns io.EOF.
func (r *fileReader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, ErrClosed
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.pos + offset
	case io.SeekEnd:
		abs = r.info.Bytes + offset
	default:
		return 0, fmt.Errorf("seek: invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("seek: negative position %d", abs)
	}
	r.pos = abs
	return abs, nil
}

func (r *fileReader) Close() error {
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	return r.data.Close()
}
