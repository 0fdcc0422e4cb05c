package stream

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Sparse files are stored in the pax GNU sparse format 1.0, the one GNU tar
// writes with --sparse --format=pax and restores with holes (Go's
// archive/tar reads it too but cannot write it):
//
//	pax extended header ('x'):
//	  GNU.sparse.major=1  GNU.sparse.minor=0
//	  GNU.sparse.name=<the file's path>  GNU.sparse.realsize=<logical size>
//	  (+ SCHILY.xattr.*, and uid/gid/mtime/size/path when ustar cannot hold them)
//	ustar header ('0'): name DIR/GNUSparseFile.0/BASE, size = map + data
//	sparse map, in 512-byte blocks, NUL-padded, decimal numbers one a line:
//	  N
//	  offset of extent 1   length of extent 1 ... (N pairs)
//	data of the extents, back to back; then the usual padding to 512
//
// A file that ends in a hole gets a last extent of length 0 at its logical
// size: that is how GNU tar learns to extend the file to its size.

// Extent is a run of data in a sparse file: Length bytes at Offset. What
// lies between extents, and after the last, is a hole (zeros).
type Extent struct {
	Offset, Length int64
}

// End is the offset just past the extent.
func (x Extent) End() int64 { return x.Offset + x.Length }

// maxSparseMap bounds the encoded sparse map: Go's archive/tar refuses one
// larger than 1 MiB. A file with so many extents is stored dense.
const maxSparseMap = 1 << 20

// MaxExtents is the most data extents a sparse entry may have; it keeps
// the encoded map within what every reader accepts.
const MaxExtents = maxSparseMap / 48

// checkExtents reports whether data are non-empty extents, in order, apart
// and inside a file of size bytes, each but the last a whole number of
// 512-byte blocks long: GNU tar reads the data of each extent as whole
// blocks (Go's archive/tar reads them back to back), so only then do both
// read the same bytes.
func checkExtents(data []Extent, size int64) error {
	if len(data) > MaxExtents {
		return fmt.Errorf("%d extents, more than %d", len(data), MaxExtents)
	}
	var end int64
	for i, x := range data {
		if x.Offset < end || x.Length <= 0 || x.Offset > size-x.Length {
			return fmt.Errorf("extent %d (%d+%d) overlaps, is empty or lies past the size %d", i, x.Offset, x.Length, size)
		}
		if i < len(data)-1 && x.Length%512 != 0 {
			return fmt.Errorf("extent %d (%d+%d) is not whole 512-byte blocks and not the last", i, x.Offset, x.Length)
		}
		end = x.End()
	}
	return nil
}

// AlignExtents makes data extents as found in a file (in order, apart)
// storable: each extent but the last grows to whole 512-byte blocks (the
// bytes it takes in read as zeros, they were a hole), extents that then
// touch are merged, and none reaches past size. It reuses data.
func AlignExtents(data []Extent, size int64) []Extent {
	out := data[:0]
	for _, x := range data {
		x.Length = min(x.Length, size-x.Offset)
		if x.Length <= 0 {
			continue
		}
		if n := len(out); n > 0 {
			p := &out[n-1]
			p.Length += blockPad(p.Length)
			if p.End() >= x.Offset {
				p.Length = max(p.End(), x.End()) - p.Offset
				continue
			}
		}
		out = append(out, x)
	}
	if n := len(out); n > 0 {
		out[n-1].Length = min(out[n-1].Length, size-out[n-1].Offset)
	}
	return out
}

// appendSparseMap appends the map of data (a file of size bytes), padded to
// whole blocks.
func appendSparseMap(b []byte, data []Extent, size int64) []byte {
	n := len(data)
	tail := n == 0 || data[n-1].End() < size
	if tail {
		n++
	}
	start := len(b)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\n')
	for _, x := range data {
		b = strconv.AppendInt(b, x.Offset, 10)
		b = append(b, '\n')
		b = strconv.AppendInt(b, x.Length, 10)
		b = append(b, '\n')
	}
	if tail {
		b = strconv.AppendInt(b, size, 10)
		b = append(b, "\n0\n"...)
	}
	return append(b, make([]byte, blockPad(int64(len(b)-start)))...)
}

// blockPad is how many bytes pad n to whole 512-byte blocks.
func blockPad(n int64) int64 { return -n & 511 }

// parseSparseMap parses a map from the start of b (whole blocks) and returns
// its data extents (the length-0 ones dropped) and the map's length in
// bytes, padding included. Every number is checked against size.
func parseSparseMap(b []byte, size int64) ([]Extent, int64, error) {
	pos := 0
	next := func() (int64, error) {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 || i > 20 {
			return 0, fmt.Errorf("sparse map: number %d bytes into it ends early or is too long", pos)
		}
		v, err := strconv.ParseInt(string(b[pos:pos+i]), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("sparse map: bad number %q", b[pos:pos+i])
		}
		pos += i + 1
		return v, nil
	}
	n, err := next()
	if err != nil {
		return nil, 0, err
	}
	if n > int64(len(b))/4 {
		return nil, 0, fmt.Errorf("sparse map: %d extents in %d bytes", n, len(b))
	}
	var data []Extent
	var end int64
	for i := int64(0); i < n; i++ {
		off, err := next()
		if err != nil {
			return nil, 0, err
		}
		l, err := next()
		if err != nil {
			return nil, 0, err
		}
		if off < end || off > size || l > size-off {
			return nil, 0, fmt.Errorf("sparse map: extent %d (%d+%d) overlaps or lies past the size %d", i, off, l, size)
		}
		if l > 0 {
			data = append(data, Extent{off, l})
			end = off + l
		}
	}
	used := int64(pos) + blockPad(int64(pos))
	if used > int64(len(b)) || bytes.IndexFunc(b[pos:used], func(r rune) bool { return r != 0 }) >= 0 {
		return nil, 0, fmt.Errorf("sparse map: no padding after it")
	}
	return data, used, nil
}

// Sparse header records. The values are what GNU tar writes.
const (
	paxSparseMajor    = "GNU.sparse.major"
	paxSparseMinor    = "GNU.sparse.minor"
	paxSparseName     = "GNU.sparse.name"
	paxSparseRealSize = "GNU.sparse.realsize"
)

// isSparse10 reports whether h, as Go's reader returns it, is a pax GNU
// sparse 1.0 file, and whether it is another sparse format Kura does not
// write.
func isSparse10(h *tar.Header) (is10, other bool) {
	major, minor := h.PAXRecords[paxSparseMajor], h.PAXRecords[paxSparseMinor]
	if major == "1" && minor == "0" {
		return true, false
	}
	if h.Typeflag == tar.TypeGNUSparse {
		return false, true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return false, true
		}
	}
	return false, false
}

// sparseHeader returns the header blocks of a sparse entry: a pax
// extended header and a ustar header, for h (from tarHeader) whose data
// (map and extents) is phys bytes.
func sparseHeader(h *tar.Header, realSize, phys int64) ([]byte, error) {
	dir, base := "", h.Name
	if i := strings.LastIndexByte(h.Name, '/'); i >= 0 {
		dir, base = h.Name[:i+1], h.Name[i+1:]
	}
	name := dir + "GNUSparseFile.0/" + base
	recs := map[string]string{
		paxSparseMajor:    "1",
		paxSparseMinor:    "0",
		paxSparseName:     h.Name,
		paxSparseRealSize: strconv.FormatInt(realSize, 10),
	}
	for k, v := range h.PAXRecords {
		recs[k] = v
	}
	const max7, max11 = 1<<21 - 1, 1<<33 - 1 // what 7 and 11 octal digits hold
	uid, gid, size, mtime := int64(h.Uid), int64(h.Gid), phys, h.ModTime.Unix()
	if !fitsUstar(name, 100) {
		recs["path"], name = name, "GNUSparseFile.0/"+clipASCII(base, 80)
	}
	if uid > max7 {
		recs["uid"], uid = strconv.FormatInt(uid, 10), 0
	}
	if gid > max7 {
		recs["gid"], gid = strconv.FormatInt(gid, 10), 0
	}
	if size > max11 {
		recs["size"], size = strconv.FormatInt(size, 10), 0
	}
	if mtime < 0 || mtime > max11 {
		recs["mtime"], mtime = strconv.FormatInt(mtime, 10), 0
	}
	keys := make([]string, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pax []byte
	for _, k := range keys {
		pax = appendPAXRecord(pax, k, recs[k])
	}
	out := make([]byte, 0, 1024+len(pax)+512)
	out = appendUstar(out, "PaxHeaders.0/"+clipASCII(base, 80), 0o644, 0, 0, int64(len(pax)), mtime, tar.TypeXHeader)
	out = append(out, pax...)
	out = append(out, make([]byte, blockPad(int64(len(pax))))...)
	out = appendUstar(out, name, h.Mode, uid, gid, size, mtime, tar.TypeReg)
	return out, nil
}

// fitsUstar reports whether s fits a ustar name field as it is: ASCII, no
// NUL, at most n bytes.
func fitsUstar(s string, n int) bool {
	if len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// clipASCII keeps the printable ASCII of s, at most n bytes of it.
func clipASCII(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}

// appendPAXRecord appends "LEN KEY=VALUE\n", LEN counting itself.
func appendPAXRecord(b []byte, k, v string) []byte {
	n := len(k) + len(v) + 3 // ' ', '=', '\n'
	l := n + len(strconv.Itoa(n))
	if len(strconv.Itoa(l)) != len(strconv.Itoa(n)) {
		l++
	}
	b = strconv.AppendInt(b, int64(l), 10)
	b = append(b, ' ')
	b = append(b, k...)
	b = append(b, '=')
	b = append(b, v...)
	return append(b, '\n')
}

// appendUstar appends one ustar header block. Every number must fit its
// field (the caller moves what does not into pax records).
func appendUstar(b []byte, name string, mode, uid, gid, size, mtime int64, typ byte) []byte {
	var blk [512]byte
	copy(blk[0:100], name)
	octal(blk[100:108], mode)
	octal(blk[108:116], uid)
	octal(blk[116:124], gid)
	octal(blk[124:136], size)
	octal(blk[136:148], mtime)
	blk[156] = typ
	copy(blk[257:263], "ustar\x00")
	copy(blk[263:265], "00")
	copy(blk[148:156], "        ")
	var sum int64
	for _, c := range blk {
		sum += int64(c)
	}
	octal(blk[148:155], sum)
	blk[155] = ' '
	return append(b, blk[:]...)
}

// octal writes v as zero-padded octal digits ending with a NUL.
func octal(f []byte, v int64) {
	s := strconv.FormatInt(v, 8)
	n := len(f) - 1
	copy(f[n-len(s):n], s)
	for i := 0; i < n-len(s); i++ {
		f[i] = '0'
	}
	f[n] = 0
}

// parseOctal reads a ustar numeric field (octal digits, NUL or space
// terminated, leading spaces allowed).
func parseOctal(f []byte) (int64, error) {
	s := strings.Trim(string(f), " \x00")
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 8, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad numeric field %q", f)
	}
	return v, nil
}

// sparseLayout reads the layout of a sparse 1.0 entry from rec, the bytes
// of its headers and map as they were read (from its first header block to
// the start of its data): it returns the data extents and the bytes of data
// that follow. h is the header Go's reader made of them.
func sparseLayout(rec []byte, h *tar.Header) ([]Extent, int64, error) {
	pos := 0
	for {
		if len(rec)-pos < 512 {
			return nil, 0, fmt.Errorf("sparse entry: headers end early")
		}
		blk := rec[pos : pos+512]
		pos += 512
		switch blk[156] {
		case tar.TypeXHeader, tar.TypeXGlobalHeader, tar.TypeGNULongName, tar.TypeGNULongLink:
			n, err := parseOctal(blk[124:136])
			if err != nil || n > int64(len(rec)-pos) {
				return nil, 0, fmt.Errorf("sparse entry: extended header of %d bytes: %v", n, err)
			}
			pos += int(n + blockPad(n))
			continue
		}
		phys, err := parseOctal(blk[124:136])
		if err != nil {
			return nil, 0, fmt.Errorf("sparse entry: %w", err)
		}
		if s, ok := h.PAXRecords["size"]; ok {
			if phys, err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, 0, fmt.Errorf("sparse entry: bad size record %q", s)
			}
		}
		data, used, err := parseSparseMap(rec[pos:], h.Size)
		if err != nil {
			return nil, 0, err
		}
		if int64(pos)+used != int64(len(rec)) {
			return nil, 0, fmt.Errorf("sparse entry: the map is %d bytes, %d were read", used, len(rec)-pos)
		}
		var stored int64
		for _, x := range data {
			stored += x.Length
		}
		if phys != used+stored {
			return nil, 0, fmt.Errorf("sparse entry: %d bytes of map and data, the map accounts for %d", phys, used+stored)
		}
		return data, stored, nil
	}
}

// sparseRead serves the content of a sparse entry: holes as zeros, data
// from the stream.
type sparseRead struct {
	data []Extent
	size int64 // logical
	pos  int64 // logical position
	i    int   // first extent not wholly before pos
	left int64 // data bytes not yet read from the stream
	pad  int64 // padding after the data
}

// hole is how many bytes of hole lie at pos (0 inside data).
func (s *sparseRead) hole() int64 {
	for s.i < len(s.data) && s.pos >= s.data[s.i].End() {
		s.i++
	}
	if s.i == len(s.data) {
		return s.size - s.pos
	}
	return max(s.data[s.i].Offset-s.pos, 0)
}

func (s *sparseRead) read(src io.Reader, p []byte) (int, error) {
	if s.pos >= s.size {
		return 0, io.EOF
	}
	if h := s.hole(); h > 0 {
		n := int(min(int64(len(p)), h))
		clear(p[:n])
		s.pos += int64(n)
		return n, nil
	}
	want := min(int64(len(p)), s.data[s.i].End()-s.pos)
	n, err := src.Read(p[:want])
	s.pos += int64(n)
	s.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
