package seal

import (
	"fmt"
	"io"
	"sync"
)

// skipAhead is how far forward a Parts read discards bytes of its open
// stream rather than opening a new one at the offset.
const skipAhead = 1 << 20

// Parts is the ReaderAt of a saveset's data: its parts (tape files) in
// order, one after another, as one age file (Open reads it). Reads that go
// forward, as a restore's do, share one open stream; a read elsewhere opens
// the part it falls in at its offset.
type Parts struct {
	open  func(part int, off int64) (io.ReadCloser, error)
	sizes []int64

	mu  sync.Mutex
	cur io.ReadCloser
	pos int64 // offset of cur's next byte in the whole
	// Opens counts the streams opened (for tests: a single-file restore
	// reads a few chunks, not the saveset).
	Opens int
}

// NewParts reads the parts of sizes bytes each through open, which returns
// a stream from a part's offset to the end of the data (on to the next
// parts: a tape file follows the one before it).
func NewParts(sizes []int64, open func(part int, off int64) (io.ReadCloser, error)) *Parts {
	return &Parts{open: open, sizes: sizes}
}

// Size is the total of the parts.
func (p *Parts) Size() int64 {
	var n int64
	for _, s := range p.sizes {
		n += s
	}
	return n
}

// locate is the part holding offset off of the whole and the offset in it.
func (p *Parts) locate(off int64) (int, int64, error) {
	for i, s := range p.sizes {
		if off < s {
			return i, off, nil
		}
		off -= s
	}
	return 0, 0, fmt.Errorf("seal: offset past the end of the data")
}

func (p *Parts) ReadAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := p.Size()
	if off >= size {
		return 0, io.EOF
	}
	want := len(b)
	if rest := size - off; int64(want) > rest {
		want = int(rest)
	}
	if p.cur != nil && (off < p.pos || off-p.pos > skipAhead) {
		p.cur.Close()
		p.cur = nil
	}
	if p.cur == nil {
		part, in, err := p.locate(off)
		if err != nil {
			return 0, err
		}
		rc, err := p.open(part, in)
		if err != nil {
			return 0, err
		}
		p.cur, p.pos = rc, off
		p.Opens++
	}
	if off > p.pos {
		n, err := io.CopyN(io.Discard, p.cur, off-p.pos)
		p.pos += n
		if err != nil {
			p.cur.Close()
			p.cur = nil
			return 0, fmt.Errorf("seal: reading on to offset %d: %w", off, err)
		}
	}
	n, err := io.ReadFull(p.cur, b[:want])
	p.pos += int64(n)
	if err != nil {
		p.cur.Close()
		p.cur = nil
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = fmt.Errorf("seal: the data ends at %d, before the %d bytes its parts hold: %w", off+int64(n), size, io.ErrUnexpectedEOF)
		}
		return n, err
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Close closes the open stream.
func (p *Parts) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil {
		err := p.cur.Close()
		p.cur = nil
		return err
	}
	return nil
}
