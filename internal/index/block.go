package index

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// blockEncoder collects the columns of one block.
type blockEncoder struct {
	cols  [numCols][]byte
	n     int    // entries
	text  int    // path, link and xattr bytes, as the reader counts them
	first string // first path
	prev  prevState
	keys  []string // scratch for sorting xattr names
}

func (b *blockEncoder) reset() {
	for i := range b.cols {
		b.cols[i] = b.cols[i][:0]
	}
	b.n, b.text, b.first = 0, 0, ""
	b.prev = prevState{}
}

// add codes e, which the Writer has validated.
func (b *blockEncoder) add(e *Entry) {
	p := &b.prev
	tag := uint64(e.Type)
	if e.Digest != ([16]byte{}) {
		tag |= tagDigest
		b.cols[colDigest] = append(b.cols[colDigest], e.Digest[:]...)
	}
	if e.Mode != p.mode {
		tag |= tagMode
		b.cols[colMode] = binary.AppendUvarint(b.cols[colMode], uint64(e.Mode))
	}
	if e.UID != p.uid {
		tag |= tagUID
		b.cols[colOwner] = binary.AppendUvarint(b.cols[colOwner], uint64(e.UID))
	}
	if e.GID != p.gid {
		tag |= tagGID
		b.cols[colOwner] = binary.AppendUvarint(b.cols[colOwner], uint64(e.GID))
	}
	if e.Flags != 0 {
		tag |= tagFlags
		b.cols[colFlags] = append(b.cols[colFlags], e.Flags)
	}
	if e.Link != "" {
		tag |= tagLink
		b.cols[colLink] = appendString(b.cols[colLink], e.Link)
		b.text += len(e.Link)
	}
	if len(e.Xattrs) > 0 {
		tag |= tagXattrs
		b.keys = b.keys[:0]
		for k := range e.Xattrs {
			b.keys = append(b.keys, k)
		}
		slices.Sort(b.keys)
		c := binary.AppendUvarint(b.cols[colXattrs], uint64(len(b.keys)))
		for _, k := range b.keys {
			v := e.Xattrs[k]
			c = appendString(c, k)
			c = appendString(c, v)
			b.text += len(k) + len(v)
		}
		b.cols[colXattrs] = c
	}
	if e.Dev != p.dev {
		tag |= tagDev
		b.cols[colDev] = binary.AppendUvarint(b.cols[colDev], e.Dev)
	}
	if e.Rdev != 0 {
		tag |= tagRdev
		b.cols[colRdev] = binary.AppendUvarint(b.cols[colRdev], e.Rdev)
	}
	if e.Source != 0 {
		tag |= tagSource
		b.cols[colSource] = binary.AppendUvarint(b.cols[colSource], e.Source)
	}
	b.cols[colTag] = binary.AppendUvarint(b.cols[colTag], tag)

	shared := commonPrefix(p.path, e.Path)
	b.cols[colPath] = binary.AppendUvarint(b.cols[colPath], uint64(shared))
	b.cols[colPath] = binary.AppendUvarint(b.cols[colPath], uint64(len(e.Path)-shared))
	b.cols[colPathText] = append(b.cols[colPathText], e.Path[shared:]...)
	b.text += len(e.Path)

	b.cols[colSize] = binary.AppendUvarint(b.cols[colSize], uint64(e.Size))
	b.cols[colMTime] = binary.AppendVarint(b.cols[colMTime], e.MTime-p.mtime)
	b.cols[colCTime] = binary.AppendVarint(b.cols[colCTime], e.CTime-e.MTime)
	b.cols[colInode] = binary.AppendVarint(b.cols[colInode], int64(e.Inode-p.inode))
	b.cols[colOffset] = binary.AppendVarint(b.cols[colOffset], e.Offset-p.predictOffset())

	if b.n == 0 {
		b.first = e.Path
	}
	b.n++
	p.set(e)
}

// appendRaw appends the raw block payload.
func (b *blockEncoder) appendRaw(dst []byte) []byte {
	for i := range b.cols {
		dst = binary.AppendUvarint(dst, uint64(len(b.cols[i])))
	}
	for i := range b.cols {
		dst = append(dst, b.cols[i]...)
	}
	return dst
}

// decodeBlock decodes the raw payload of a block of n entries into dst[:0]
// and returns it. It checks every length against what is left, that the
// columns are consumed exactly, that paths are valid and strictly in index
// order, that the first path is first (if not "") and every path is before
// next (if not "").
func decodeBlock(dst []Entry, raw []byte, n int, first, next string) ([]Entry, error) {
	corrupt := func(format string, a ...any) ([]Entry, error) {
		return dst[:0], fmt.Errorf("%w: block: %s", ErrCorrupt, fmt.Sprintf(format, a...))
	}
	var cols [numCols]cursor
	hdr := cursor{b: raw}
	var lens [numCols]uint64
	total := uint64(0)
	for i := range lens {
		lens[i] = hdr.uvarint()
		if lens[i] > uint64(len(raw)) {
			hdr.bad = true
		}
		total += lens[i]
	}
	if hdr.bad || total != uint64(len(hdr.b)) {
		return corrupt("column lengths")
	}
	rest := hdr.b
	for i := range cols {
		cols[i].b = rest[:lens[i]]
		rest = rest[lens[i]:]
	}
	// Every entry takes at least one byte of tag, two of path and one each
	// of size, mtime, ctime, inode and offset.
	if n < 1 || n > len(raw)/8 || n > maxBlockN {
		return corrupt("%d entries in %d bytes", n, len(raw))
	}

	// All paths of the block go into one string, sliced per entry: a single
	// allocation, bounded by maxBlockText.
	pathCol := cursor{b: cols[colPath].b}
	textCol := cursor{b: cols[colPathText].b}
	var ends []int
	{
		arenaLen := 0
		prevLen := 0
		ends = make([]int, n)
		for i := range n {
			shared := pathCol.uvarint()
			suffix := pathCol.uvarint()
			if pathCol.bad || shared > uint64(prevLen) || suffix > uint64(len(textCol.b)) {
				return corrupt("path %d lengths", i)
			}
			textCol.bytes(suffix)
			l := int(shared) + int(suffix)
			arenaLen += l
			if arenaLen > maxBlockText {
				return corrupt("paths expand past %d bytes", maxBlockText)
			}
			ends[i] = arenaLen
			prevLen = l
		}
		if len(pathCol.b) != 0 || len(textCol.b) != 0 {
			return corrupt("path columns not consumed")
		}
		arena := make([]byte, 0, arenaLen)
		pathCol.b, textCol.b = cols[colPath].b, cols[colPathText].b
		prevStart := 0
		for range n {
			shared := int(pathCol.uvarint())
			suffix := textCol.bytes(pathCol.uvarint())
			start := len(arena)
			arena = append(arena, arena[prevStart:prevStart+shared]...)
			arena = append(arena, suffix...)
			prevStart = start
		}
		cols[colPath].b, cols[colPathText].b = nil, nil
		paths := string(arena)
		if cap(dst) < n {
			dst = make([]Entry, n)
		}
		dst = dst[:n]
		start := 0
		for i := range n {
			dst[i] = Entry{Path: paths[start:ends[i]]}
			start = ends[i]
		}
	}

	text := ends[n-1]
	var p prevState
	for i := range dst {
		e := &dst[i]
		// A path that breaks the Entry rules is this entry's problem, not
		// the block's: it decodes (its bytes are bounded by maxBlockText)
		// and readers skip it (Iter.Invalid).
		e.invalid = !ValidPath(e.Path)
		if i == 0 {
			if first != "" && e.Path != first {
				return corrupt("first path %q, directory says %q", e.Path, first)
			}
		} else if Compare(p.path, e.Path) >= 0 {
			return corrupt("%q after %q", e.Path, p.path)
		}
		tag := cols[colTag].uvarint()
		if tag&^tagKnown != 0 {
			return corrupt("unknown tag bits %#x", tag)
		}
		e.Type = Type(tag & tagTypeMask)
		if e.Type < TypeFile || e.Type > TypeBlock {
			return corrupt("type %d", e.Type)
		}
		if tag&tagDigest != 0 {
			copy(e.Digest[:], cols[colDigest].bytes(16))
		}
		e.Mode = p.mode
		if tag&tagMode != 0 {
			e.Mode = uint32Col(&cols[colMode])
		}
		e.UID, e.GID = p.uid, p.gid
		if tag&tagUID != 0 {
			e.UID = uint32Col(&cols[colOwner])
		}
		if tag&tagGID != 0 {
			e.GID = uint32Col(&cols[colOwner])
		}
		if tag&tagFlags != 0 {
			e.Flags = cols[colFlags].byte()
		}
		if tag&tagLink != 0 {
			l := cols[colLink].uvarint()
			if l == 0 || l > maxBlockText {
				return corrupt("link length %d", l)
			}
			e.Link = string(cols[colLink].bytes(l))
			e.invalid = e.invalid || l > MaxPath
			text += len(e.Link)
		}
		if tag&tagXattrs != 0 {
			c := &cols[colXattrs]
			cnt := c.uvarint()
			if cnt == 0 || cnt > uint64(len(c.b))/2 {
				return corrupt("xattr count %d", cnt)
			}
			e.Xattrs = make(map[string]string, cnt)
			sum := 0
			prevKey := ""
			for j := range cnt {
				k := string(c.bytes(c.uvarint()))
				v := string(c.bytes(c.uvarint()))
				if c.bad || (j > 0 && k <= prevKey) {
					return corrupt("xattrs of %q", e.Path)
				}
				prevKey = k
				sum += len(k) + len(v)
				e.Xattrs[k] = v
			}
			if sum > MaxXattrs {
				return corrupt("xattrs of %q too large", e.Path)
			}
			text += sum
		}
		e.Dev = p.dev
		if tag&tagDev != 0 {
			e.Dev = cols[colDev].uvarint()
		}
		if tag&tagRdev != 0 {
			e.Rdev = cols[colRdev].uvarint()
		}
		if tag&tagSource != 0 {
			e.Source = cols[colSource].uvarint()
		}
		size := cols[colSize].uvarint()
		if size > 1<<62 {
			return corrupt("size %d", size)
		}
		e.Size = int64(size)
		e.MTime = p.mtime + cols[colMTime].varint()
		e.CTime = e.MTime + cols[colCTime].varint()
		e.Inode = p.inode + uint64(cols[colInode].varint())
		e.Offset = p.predictOffset() + cols[colOffset].varint()
		if text > maxBlockText {
			return corrupt("entries expand past %d bytes", maxBlockText)
		}
		p.set(e)
	}
	if next != "" && Compare(p.path, next) >= 0 {
		return corrupt("last path %q not before next block's %q", p.path, next)
	}
	for i := range cols {
		if cols[i].bad || len(cols[i].b) != 0 {
			return corrupt("column %d: bad or not consumed", i)
		}
	}
	return dst, nil
}

func uint32Col(c *cursor) uint32 {
	v := c.uvarint()
	if v > 1<<32-1 {
		c.bad = true
	}
	return uint32(v)
}

// isUnder reports whether an entry whose parent directory is parent lies in
// the subtree of dir (parent is dir or below it).
func isUnder(parent, dir string) bool {
	if dir == "" {
		return true
	}
	return parent == dir || (len(parent) > len(dir) && parent[len(dir)] == '/' && strings.HasPrefix(parent, dir))
}
