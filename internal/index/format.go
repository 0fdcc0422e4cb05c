package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// Version is the newest format version this package writes and reads.
// Versions only move forward; a reader refuses newer ones with ErrVersion.
const Version = 1

const magic = "KURAIDX"

// sealedMagic starts an age file (age-encryption.org/v1): an encrypted index.
const sealedMagic = "age-encryption.org/"

// Limits. The Writer refuses entries beyond them with ErrTooLarge and the
// Reader treats larger values read from a file as ErrCorrupt.
const (
	MaxMeta      = 16 << 20 // bytes of Meta
	MaxPath      = 64 << 10 // bytes of a Path or a Link
	MaxXattrs    = 1 << 20  // bytes of all xattr names and values of one entry
	maxBlockRaw  = 4 << 20  // raw (decompressed) payload of one block
	maxBlockN    = 1 << 16  // entries in one block
	maxBlockText = 8 << 20  // path, link and xattr bytes one block expands to
	maxTrailer   = 1 << 30
)

// Block shaping. A block is cut after blockEntries entries, or earlier when
// its expanded text passes blockTextTarget. Measured on the 1M-entry test2
// tree (BenchmarkList1M, BenchmarkWrite, 2-core EPYC): 1024 entries give
// 20.33 bytes/entry and a 0.44 ms Lookup; 2048 give 20.20 bytes/entry and
// 0.84 ms. A block is the unit of decoding, so the smaller one wins.
var (
	blockEntries    = 1024
	blockTextTarget = 2 << 20
)

const (
	headerFixed = 12
	blockHeader = 16
	footerSize  = 48
)

var (
	// ErrNotIndex: the bytes do not start with an index header.
	ErrNotIndex = errors.New("index: not an index file")
	// ErrSealed: the index is encrypted (an age file: the saveset of a
	// client that encrypts). Only an agent holding the client's key reads it.
	ErrSealed = errors.New("index: encrypted; only an agent holding the client's key reads it")
	// ErrVersion: an index of a newer format version than this reader knows.
	ErrVersion = errors.New("index: unsupported format version")
	// ErrTruncated: the file is shorter than the index it starts (no footer).
	ErrTruncated = errors.New("index: truncated")
	// ErrCorrupt: a checksum does not match or the content breaks the format.
	ErrCorrupt = errors.New("index: corrupt")
	// ErrOrder: Writer.Add got an entry not strictly after the previous one.
	ErrOrder = errors.New("index: entry out of order or duplicate")
	// ErrInvalid: an entry or a path argument breaks the Entry rules.
	ErrInvalid = errors.New("index: invalid entry")
	// ErrTooLarge: an entry or Meta beyond the limits of the format.
	ErrTooLarge = errors.New("index: too large")
	// ErrClosed: a call on a closed Writer or Reader.
	ErrClosed = errors.New("index: closed")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Columns of a raw block payload, in stored order. Permanent.
const (
	colTag = iota
	colPath
	colPathText
	colMode
	colOwner
	colSize
	colMTime
	colCTime
	colInode
	colDev
	colRdev
	colOffset
	colSource
	colDigest
	colLink
	colXattrs
	colFlags
	numCols
)

// Tag bits. Permanent.
const (
	tagTypeMask = 0x7
	tagDigest   = 1 << 3
	tagMode     = 1 << 4
	tagUID      = 1 << 5
	tagGID      = 1 << 6
	tagFlags    = 1 << 7
	tagLink     = 1 << 8
	tagXattrs   = 1 << 9
	tagDev      = 1 << 10
	tagRdev     = 1 << 11
	tagSource   = 1 << 12
	tagKnown    = 1<<13 - 1
)

// prevState is what an entry is coded against: the previous entry of the
// same block, zero at a block's start.
type prevState struct {
	path         string
	mode         uint32
	uid, gid     uint32
	mtime        int64
	inode        uint64
	dev          uint64
	offset, size int64
}

func (p *prevState) set(e *Entry) {
	p.path = e.Path
	p.mode, p.uid, p.gid = e.Mode, e.UID, e.GID
	p.mtime, p.inode, p.dev = e.MTime, e.Inode, e.Dev
	p.offset, p.size = e.Offset, e.Size
}

// predictOffset is where the next tar member starts if the previous one had
// a single 512-byte header and no extended header.
func (p *prevState) predictOffset() int64 {
	return p.offset + 512 + (p.size+511)&^511
}

// ValidPath reports whether p is a valid Entry.Path: not empty, relative, no
// empty, "." or ".." component, no NUL, at most MaxPath bytes.
func ValidPath(p string) bool {
	if p == "" || len(p) > MaxPath || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for {
		i := strings.IndexByte(p, '/')
		c := p
		if i >= 0 {
			c = p[:i]
		}
		if c == "" || c == "." || c == ".." {
			return false
		}
		if i < 0 {
			return true
		}
		p = p[i+1:]
	}
}

// pathProblem says what is wrong with an Entry.Path ValidPath refuses.
func pathProblem(p string) string {
	switch {
	case p == "":
		return "empty path"
	case len(p) > MaxPath:
		return fmt.Sprintf("path of %d bytes (max %d)", len(p), MaxPath)
	case strings.IndexByte(p, 0) >= 0:
		return "NUL byte in path"
	case p[0] == '/':
		return "absolute path"
	}
	return `empty, "." or ".." component in path`
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cursor reads a column. Any overrun sets bad; callers check it once.
type cursor struct {
	b   []byte
	bad bool
}

func (c *cursor) uvarint() uint64 {
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.bad = true
		c.b = nil
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *cursor) varint() int64 {
	v, n := binary.Varint(c.b)
	if n <= 0 {
		c.bad = true
		c.b = nil
		return 0
	}
	c.b = c.b[n:]
	return v
}

// bytes returns the next n bytes, n bounded by what is left.
func (c *cursor) bytes(n uint64) []byte {
	if n > uint64(len(c.b)) {
		c.bad = true
		c.b = nil
		return nil
	}
	s := c.b[:n]
	c.b = c.b[n:]
	return s
}

func (c *cursor) byte() byte {
	if len(c.b) == 0 {
		c.bad = true
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}
