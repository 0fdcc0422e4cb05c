package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// decoder is shared by all Readers: DecodeAll is safe for concurrent use.
var decoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(maxBlockRaw),
	)
	if err != nil {
		panic(err) // only on invalid options
	}
	return d
})

// Reader reads an index file. Open checks the header, the footer and the
// block directory; blocks are read, checked and decoded when a call needs
// them, one at a time. A Reader is safe for concurrent use.
type Reader struct {
	r       io.ReaderAt
	c       io.Closer
	meta    []byte
	entries int64
	frames  []Frame
	blocks  []blockInfo
}

type blockInfo struct {
	off, length int64
	n           int
	first       string
	dir, base   string // split(first)
}

// OpenFile opens the index file at path. Close the Reader to close the file.
func OpenFile(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := Open(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.c = f
	return r, nil
}

// Close closes the file of a Reader from OpenFile; otherwise it does nothing.
func (r *Reader) Close() error {
	if r.c == nil {
		return nil
	}
	err := r.c.Close()
	r.c = nil
	return err
}

// readAt reads exactly len(b) bytes at off; a short read is ErrTruncated.
func readAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %d bytes at %d, got %d", ErrTruncated, len(b), off, n)
	}
	return fmt.Errorf("index: read: %w", err)
}

// Open opens the index of size bytes held by r. The footer must be the last
// 48 bytes. Errors: ErrNotIndex (no index header), ErrVersion (a newer
// format), ErrTruncated (header good, footer missing or the file too short)
// and ErrCorrupt (a CRC or the structure is wrong), or an I/O error.
// Typically two reads: the start of the file and its tail.
func Open(r io.ReaderAt, size int64) (*Reader, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: size %d", ErrTruncated, size)
	}
	// Header.
	head := make([]byte, min(size, 4096))
	if err := readAt(r, head, 0); err != nil {
		return nil, err
	}
	if len(head) < len(magic)+1 || string(head[:len(magic)]) != magic {
		if len(head) < len(magic)+1 && string(head) == magic[:min(len(head), len(magic))] {
			return nil, fmt.Errorf("%w: %d bytes", ErrTruncated, size)
		}
		if strings.HasPrefix(string(head), sealedMagic) {
			return nil, ErrSealed
		}
		return nil, ErrNotIndex
	}
	if v := head[len(magic)]; v != Version {
		return nil, fmt.Errorf("%w: %d (this reader knows %d)", ErrVersion, v, Version)
	}
	if len(head) < headerFixed {
		return nil, fmt.Errorf("%w: %d bytes", ErrTruncated, size)
	}
	metaLen := int64(binary.LittleEndian.Uint32(head[8:]))
	if metaLen > MaxMeta {
		return nil, fmt.Errorf("%w: meta of %d bytes", ErrCorrupt, metaLen)
	}
	headerEnd := headerFixed + metaLen + 4
	if headerEnd+footerSize > size {
		return nil, fmt.Errorf("%w: %d bytes, header alone needs %d", ErrTruncated, size, headerEnd)
	}
	if int64(len(head)) < headerEnd {
		h := make([]byte, headerEnd)
		copy(h, head)
		if err := readAt(r, h[len(head):], int64(len(head))); err != nil {
			return nil, err
		}
		head = h
	}
	head = head[:headerEnd]
	if crc32.Checksum(head[:headerEnd-4], castagnoli) != binary.LittleEndian.Uint32(head[headerEnd-4:]) {
		return nil, fmt.Errorf("%w: header CRC", ErrCorrupt)
	}
	rd := &Reader{r: r, meta: head[headerFixed : headerFixed+metaLen : headerFixed+metaLen]}

	// Footer, and with luck the trailer in the same read.
	tail := make([]byte, min(size-headerEnd, 64<<10))
	if err := readAt(r, tail, size-int64(len(tail))); err != nil {
		return nil, err
	}
	f := tail[len(tail)-footerSize:]
	if string(f[40:47]) != magic {
		return nil, fmt.Errorf("%w: no footer", ErrTruncated)
	}
	if f[47] != Version {
		return nil, fmt.Errorf("%w: footer version %d", ErrVersion, f[47])
	}
	if crc32.Checksum(f[:36], castagnoli) != binary.LittleEndian.Uint32(f[36:]) {
		return nil, fmt.Errorf("%w: footer CRC", ErrCorrupt)
	}
	tOff := binary.LittleEndian.Uint64(f[0:])
	tLen := binary.LittleEndian.Uint64(f[8:])
	entries := binary.LittleEndian.Uint64(f[16:])
	nBlocks := uint64(binary.LittleEndian.Uint32(f[24:]))
	nFrames := uint64(binary.LittleEndian.Uint32(f[28:]))
	tCRC := binary.LittleEndian.Uint32(f[32:])
	if tOff < uint64(headerEnd) || tLen > maxTrailer || tOff > uint64(size) || tOff+tLen != uint64(size-footerSize) {
		return nil, fmt.Errorf("%w: trailer at %d, %d bytes, in %d", ErrCorrupt, tOff, tLen, size)
	}
	var t []byte
	if tLen+footerSize <= uint64(len(tail)) {
		t = tail[uint64(len(tail))-footerSize-tLen : len(tail)-footerSize]
	} else {
		t = make([]byte, tLen)
		if err := readAt(r, t, int64(tOff)); err != nil {
			return nil, err
		}
	}
	if crc32.Checksum(t, castagnoli) != tCRC {
		return nil, fmt.Errorf("%w: trailer CRC", ErrCorrupt)
	}

	// Block directory: each record takes at least 5 bytes.
	c := cursor{b: t}
	if nBlocks > uint64(len(t))/5 || (nBlocks == 0) != (entries == 0) {
		return nil, fmt.Errorf("%w: %d blocks for %d entries", ErrCorrupt, nBlocks, entries)
	}
	rd.blocks = make([]blockInfo, nBlocks)
	off := headerEnd
	sum := uint64(0)
	prev := ""
	for i := range rd.blocks {
		length := c.uvarint()
		n := c.uvarint()
		shared := c.uvarint()
		rest := c.bytes(c.uvarint())
		if c.bad || length < blockHeader || length > tOff-uint64(off) || n == 0 ||
			n > maxBlockN || shared > uint64(len(prev)) {
			return nil, fmt.Errorf("%w: block directory record %d", ErrCorrupt, i)
		}
		first := prev[:shared] + string(rest)
		// The first path need not be valid (an invalid entry is skipped
		// when read, see InvalidEntry), only in order.
		if i > 0 && Compare(prev, first) >= 0 {
			return nil, fmt.Errorf("%w: block %d first path %q", ErrCorrupt, i, first)
		}
		d, b := split(first)
		rd.blocks[i] = blockInfo{off: off, length: int64(length), n: int(n), first: first, dir: d, base: b}
		off += int64(length)
		sum += n
		prev = first
	}
	if uint64(off) != tOff || sum != entries {
		return nil, fmt.Errorf("%w: blocks end at %d, trailer at %d; %d entries, footer says %d",
			ErrCorrupt, off, tOff, sum, entries)
	}
	rd.entries = int64(entries)

	// Frame table: each record takes at least 5 bytes.
	if nFrames > uint64(len(c.b))/5 {
		return nil, fmt.Errorf("%w: %d frames in %d bytes", ErrCorrupt, nFrames, len(c.b))
	}
	rd.frames = make([]Frame, nFrames)
	var pf Frame
	for i := range rd.frames {
		fr := &rd.frames[i]
		fr.Offset = pf.Offset + int64(pf.Size) + c.varint()
		fr.Size = uint32Col(&c)
		fr.CSize = uint32Col(&c)
		part := int64(pf.Part) + c.varint()
		fr.Part = int32(part)
		fr.PartOffset = pf.PartOffset + int64(pf.CSize) + c.varint()
		if c.bad || int64(fr.Part) != part {
			return nil, fmt.Errorf("%w: frame %d", ErrCorrupt, i)
		}
		pf = *fr
	}
	// Optional final meta (Writer.SetMeta): it replaces the header's.
	if len(c.b) != 0 {
		n := c.uvarint()
		if c.bad || n > MaxMeta || n != uint64(len(c.b)) {
			return nil, fmt.Errorf("%w: %d bytes after the frame table", ErrCorrupt, len(c.b))
		}
		rd.meta = c.bytes(n)
	}
	return rd, nil
}

// Meta returns the Meta blob: the one given to SetMeta if any, else the one
// given to NewWriter. The caller must not modify it.
func (r *Reader) Meta() []byte { return r.meta }

// Len returns the number of entries.
func (r *Reader) Len() int64 { return r.entries }

// Frames returns the frame table. The caller must not modify it.
func (r *Reader) Frames() []Frame { return r.frames }

// readBlock reads block i into *buf and checks its CRC and its header
// against the block directory. It returns the block and its raw length.
func (r *Reader) readBlock(buf *[]byte, i int) ([]byte, uint32, error) {
	bi := &r.blocks[i]
	if cap(*buf) < int(bi.length) {
		*buf = make([]byte, bi.length)
	}
	b := (*buf)[:bi.length]
	if err := readAt(r.r, b, bi.off); err != nil {
		return nil, 0, err
	}
	sLen := binary.LittleEndian.Uint32(b[0:])
	rawLen := binary.LittleEndian.Uint32(b[4:])
	n := binary.LittleEndian.Uint32(b[8:])
	crc := crc32.Update(crc32.Checksum(b[:12], castagnoli), castagnoli, b[blockHeader:])
	if crc != binary.LittleEndian.Uint32(b[12:]) {
		return nil, 0, fmt.Errorf("%w: block %d CRC", ErrCorrupt, i)
	}
	if int64(sLen) != bi.length-blockHeader || int(n) != bi.n || rawLen > maxBlockRaw {
		return nil, 0, fmt.Errorf("%w: block %d header disagrees with the directory", ErrCorrupt, i)
	}
	return b, rawLen, nil
}

// Check reads every block and checks its CRC-32C and its header, without
// decoding: Open checks only the header, the footer and the block
// directory, so a damaged block would otherwise show only when an iteration
// reaches it. It reads the file once, sequentially. Errors as Open.
func (r *Reader) Check() error {
	var buf []byte
	for i := range r.blocks {
		if _, _, err := r.readBlock(&buf, i); err != nil {
			return err
		}
	}
	return nil
}

// block reads, checks and decodes block i into dst.
func (r *Reader) block(dst []Entry, buf *[]byte, i int) ([]Entry, error) {
	bi := &r.blocks[i]
	b, rawLen, err := r.readBlock(buf, i)
	if err != nil {
		return dst[:0], err
	}
	raw, err := decoder().DecodeAll(b[blockHeader:], make([]byte, 0, rawLen))
	if err != nil || len(raw) != int(rawLen) {
		return dst[:0], fmt.Errorf("%w: block %d: zstd: %d of %d bytes, %v", ErrCorrupt, i, len(raw), rawLen, err)
	}
	next := ""
	if i+1 < len(r.blocks) {
		next = r.blocks[i+1].first
	}
	dst, err = decodeBlock(dst, raw, bi.n, bi.first, next)
	if err != nil {
		return dst, fmt.Errorf("block %d: %w", i, err)
	}
	return dst, nil
}

// Iter returns an iterator over all entries, in index order.
func (r *Reader) Iter() *Iter {
	return &Iter{r: r, mode: iterAll}
}

// Subtree returns an iterator over every entry below dir, in index order:
// entries whose parent directory is dir or lies below dir. dir itself is not
// included (it sorts with its own parent's children; use Lookup). dir ""
// is the root: Subtree("") is Iter(). An invalid dir yields no entries and
// Err returns ErrInvalid.
func (r *Reader) Subtree(dir string) *Iter {
	return r.seek(dir, iterSubtree)
}

// List returns the immediate children of dir ("" for the root), in index
// order. A dir without children (or absent) gives an empty list. dir is in
// Entry.Path form (no leading or trailing slash); an invalid one gives
// ErrInvalid.
func (r *Reader) List(dir string) ([]Entry, error) {
	it := r.Children(dir)
	var out []Entry
	for it.Next() {
		out = append(out, *it.Entry())
	}
	return out, it.Err()
}

// Children returns an iterator over the immediate children of dir, as
// List returns them; its Invalid says which entries it skipped.
func (r *Reader) Children(dir string) *Iter {
	return r.seek(dir, iterChildren)
}

// After makes it start after the entry at path p, in index order (p need
// not be in the index): the entries up to and including p are passed over
// without being decoded past the block that holds p, and the ones it
// passes over are not reported by Invalid. A listing that is read page by
// page resumes with After(last path of the previous page), so reading all
// pages decodes each block about once (not once per page). Call it before
// the first Next.
func (it *Iter) After(p string) *Iter {
	if it.err != nil {
		return it
	}
	d, b := split(p)
	// The last block whose first entry is not after p holds p's place.
	j := sort.Search(len(it.r.blocks), func(i int) bool {
		bi := &it.r.blocks[i]
		if c := compareDirs(bi.dir, d); c != 0 {
			return c > 0
		}
		return bi.base > b
	})
	it.block = max(it.block, j-1, 0)
	it.after, it.hasAfter = p, true
	return it
}

func (r *Reader) seek(dir string, mode iterMode) *Iter {
	it := &Iter{r: r, mode: mode, dir: dir}
	if dir != "" && !ValidPath(dir) {
		it.err = fmt.Errorf("%w: directory %q", ErrInvalid, dir)
		return it
	}
	// The first block whose first entry's parent is not before dir; the
	// wanted entries start in it or at the tail of the block before.
	j := sort.Search(len(r.blocks), func(i int) bool {
		return compareDirs(r.blocks[i].dir, dir) >= 0
	})
	it.block = max(j-1, 0)
	it.skip = true
	return it
}

// Lookup returns the entry of path, and whether there is one.
func (r *Reader) Lookup(path string) (Entry, bool, error) {
	if !ValidPath(path) {
		return Entry{}, false, nil
	}
	d, b := split(path)
	j := sort.Search(len(r.blocks), func(i int) bool {
		bi := &r.blocks[i]
		if c := compareDirs(bi.dir, d); c != 0 {
			return c > 0
		}
		return bi.base > b
	})
	if j == 0 {
		return Entry{}, false, nil
	}
	var buf []byte
	ents, err := r.block(nil, &buf, j-1)
	if err != nil {
		return Entry{}, false, err
	}
	k, found := sort.Find(len(ents), func(i int) int { return Compare(path, ents[i].Path) })
	if !found || ents[k].invalid {
		return Entry{}, false, nil
	}
	return ents[k], true, nil
}

type iterMode uint8

const (
	iterAll iterMode = iota
	iterChildren
	iterSubtree
)

// Iter iterates over entries in index order, holding one decoded block at a
// time.
//
//	it := r.Iter()
//	for it.Next() {
//		e := it.Entry()
//	}
//	if err := it.Err(); err != nil { ... }
type Iter struct {
	r    *Reader
	mode iterMode
	dir  string
	skip bool // skip entries whose parent sorts before dir
	// hasAfter: skip entries up to and including after (Iter.After).
	hasAfter bool
	after    string
	block    int // next block to decode
	ents     []Entry
	pos      int
	buf      []byte
	cur      *Entry
	done     bool
	err      error
	bad      []InvalidEntry
}

// InvalidEntry is an entry an Iter passed over: its block is sound (CRC,
// structure, order), but its path breaks the Entry rules (empty, absolute,
// a NUL byte, an empty, "." or ".." component, longer than MaxPath) or its
// link is longer than MaxPath. An index written by this package never
// holds one; a damaged or hostile one may, and the rest of it reads as
// usual. Error names the entry (shortened) and what is wrong; it wraps
// ErrInvalid.
type InvalidEntry struct {
	Path    string // as stored: at most a block's text, and may hold any byte
	Problem string
}

func (e InvalidEntry) Error() string {
	return fmt.Sprintf("%v %s: %s", ErrInvalid, ShortPath(e.Path), e.Problem)
}

func (e InvalidEntry) Unwrap() error { return ErrInvalid }

// ShortPath quotes a path read from media for a message, shortened to its
// first 200 bytes and its length when longer.
func ShortPath(p string) string {
	const keep = 200
	if len(p) <= keep {
		return strconv.Quote(p)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(p[:keep]), len(p))
}

func invalidEntry(e *Entry) InvalidEntry {
	if !ValidPath(e.Path) {
		return InvalidEntry{Path: e.Path, Problem: pathProblem(e.Path)}
	}
	return InvalidEntry{Path: e.Path, Problem: fmt.Sprintf("link of %d bytes (max %d)", len(e.Link), MaxPath)}
}

// Invalid returns the entries Next skipped since the last call to Invalid
// (see InvalidEntry). Call it as often as suits; what it returned is
// forgotten.
func (it *Iter) Invalid() []InvalidEntry {
	b := it.bad
	it.bad = nil
	return b
}

// Next advances to the next entry and reports whether there is one. It
// returns false at the end or on an error; see Err.
func (it *Iter) Next() bool {
	if it.done || it.err != nil {
		return false
	}
	for {
		for it.pos < len(it.ents) {
			e := &it.ents[it.pos]
			it.pos++
			if it.hasAfter {
				if Compare(e.Path, it.after) <= 0 {
					continue
				}
				it.hasAfter = false
			}
			if it.mode == iterAll {
				if e.invalid {
					it.bad = append(it.bad, invalidEntry(e))
					continue
				}
				it.cur = e
				return true
			}
			parent, _ := split(e.Path)
			if it.skip {
				if compareDirs(parent, it.dir) < 0 {
					continue
				}
				it.skip = false
			}
			if (it.mode == iterChildren && parent == it.dir) || (it.mode == iterSubtree && isUnder(parent, it.dir)) {
				if e.invalid {
					it.bad = append(it.bad, invalidEntry(e))
					continue
				}
				it.cur = e
				return true
			}
			return it.finish()
		}
		if it.block >= len(it.r.blocks) {
			return it.finish()
		}
		it.ents, it.err = it.r.block(it.ents, &it.buf, it.block)
		it.pos = 0
		it.block++
		if it.err != nil {
			it.cur = nil
			return false
		}
	}
}

func (it *Iter) finish() bool {
	it.done, it.cur, it.ents = true, nil, nil
	return false
}

// Entry returns the current entry. It stays valid until the next call to
// Next; copy it to keep it (its Xattrs map is shared with the copy, and
// Path may share memory with the block).
func (it *Iter) Entry() *Entry { return it.cur }

// Err returns the error that stopped the iteration, or nil at a clean end.
func (it *Iter) Err() error { return it.err }
