package sttape

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/tape"
)

// Errors of this device besides the tape package's sentinels.
var (
	// ErrWriteProtected: the cartridge's write-protect tab is set.
	ErrWriteProtected = errors.New("tape is write-protected")
	// ErrNotBlank: Format was asked to label a tape that holds data.
	ErrNotBlank = errors.New("tape is not blank")
)

// MetaBlockSize is the block size of the label and of every trailer (doc.go):
// fixed, so that they are read before any other block size is known.
const MetaBlockSize = 32 << 10

// Options are the settings a drive is opened with.
type Options struct {
	// BlockSize is the block size of tape files written from now on; 0
	// means the label's. Readers use the size each tape file records.
	BlockSize int
	// Compression leaves the drive's hardware compression on. Off by
	// default: Kura's data is zstd-compressed already, and compressing it
	// again only makes the drive's capacity figures lie.
	Compression bool
	// Overwrite lets Format label a tape that holds data (it is all lost).
	Overwrite bool
	// Clock stamps labels and filemarks; nil means time.Now.
	Clock func() time.Time

	keepCompression bool // leave the drive's compression setting alone (SelfTest)
}

func (o Options) clock() time.Time {
	if o.Clock == nil {
		return time.Now()
	}
	return o.Clock()
}

// Device is a tape in a drive on the st driver. It implements tape.Device.
// It has one head: while a FileWriter is open, Open fails with
// tape.ErrBusy, and while a FileReader is open, so does Append (moving the
// head away from a tape file being written would end it). Readers share
// the head: each moves it where it needs it.
type Device struct {
	mu     sync.Mutex
	d      Drive
	opts   Options
	label  tape.Label
	damage error
	files  []tape.FileInfo // complete tape files, read at Open
	// partial is an incomplete last tape file (data without trailer), or
	// nil; the next Append writes over it.
	partial *tape.FileInfo
	// bad holds the error of each tape file whose trailer is damaged.
	bad     map[int]error
	w       *fileWriter
	readers int
	owner   *fileReader // the reader the head was last moved for
	closed  bool
}

var _ tape.Device = (*Device)(nil)

// OneHead tells the conformance suite (tapetest) that this device cannot
// read while it writes.
func (t *Device) OneHead() bool { return true }

// st file numbers of Kura tape file n (doc.go).
func dataFile(n int) int    { return 2*n - 1 }
func trailerFile(n int) int { return 2 * n }

// Format labels the tape in d and returns it open. The tape must be blank
// unless opts.Overwrite. A zero EarlyWarning means Capacity; Version,
// Generation, Created and Labelled are set here.
func Format(d Drive, l tape.Label, opts Options) (*Device, error) {
	now := opts.clock().UTC()
	l.Version, l.Generation, l.Created, l.Labelled = tape.LabelVersion, 1, now, now
	if l.EarlyWarning == 0 {
		l.EarlyWarning = l.Capacity
	}
	b, err := tape.EncodeLabel(l)
	if err != nil {
		return nil, fmt.Errorf("format: %w", err)
	}
	t := &Device{d: d, opts: opts, label: l}
	if err := t.setup(); err != nil {
		return nil, err
	}
	st, err := d.Status()
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", l.Barcode, err)
	}
	if st.WriteProtected() {
		return nil, fmt.Errorf("format %s: %w", l.Barcode, ErrWriteProtected)
	}
	if !opts.Overwrite {
		if _, _, err := t.readLabel(); err == nil {
			return nil, fmt.Errorf("format %s: already labelled: %w", l.Barcode, fs.ErrExist)
		} else if !errors.Is(err, tape.ErrBlank) {
			return nil, fmt.Errorf("format %s: %w (%v); Overwrite erases it", l.Barcode, ErrNotBlank, err)
		}
	}
	if err := t.writeLabel(b); err != nil {
		return nil, fmt.Errorf("format %s: %w", l.Barcode, err)
	}
	t.label, _ = tape.DecodeLabel(b) // as Open will read it back
	return t, nil
}

// Open reads the label of the tape in d and finds its tape files (one
// trailer read per tape file; no data block is read). ErrBlank if it has
// no label, ErrBadLabel if both copies are damaged; with one damaged the
// tape opens and LabelDamage says what is wrong. The device owns d from
// now on and closes it in Close.
func Open(d Drive, opts Options) (*Device, error) {
	t := &Device{d: d, opts: opts}
	if err := t.setup(); err != nil {
		return nil, err
	}
	l, damage, err := t.readLabel()
	if err != nil {
		return nil, err
	}
	t.label, t.damage = l, damage
	if err := t.scan(); err != nil {
		return nil, err
	}
	return t, nil
}

// setup turns hardware compression off (unless asked for), as MTCOMPRESSION
// does for the loaded tape without root. A drive that cannot compress at all
// answers EINVAL or EIO, which is what off means anyway.
func (t *Device) setup() error {
	if t.opts.BlockSize != 0 && (t.opts.BlockSize < tape.MinBlockSize || t.opts.BlockSize > tape.MaxBlockSize) {
		return fmt.Errorf("sttape options: block size %d: want 0 or %d to %d", t.opts.BlockSize, tape.MinBlockSize, tape.MaxBlockSize)
	}
	if t.opts.keepCompression {
		return nil
	}
	on := int32(0)
	if t.opts.Compression {
		on = 1
	}
	if err := t.d.Op(mtCOMPRESSION, on); err != nil && (t.opts.Compression || !(errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO))) {
		return fmt.Errorf("set hardware compression: %w", err)
	}
	return nil
}

// writeLabel rewinds and writes tape file 0: the label twice, one block
// each, and a filemark. Writing at the beginning discards the rest of the
// tape.
func (t *Device) writeLabel(b []byte) error {
	if err := t.d.Op(mtREW, 1); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	if err := t.d.Op(mtSETBLK, MetaBlockSize); err != nil {
		return fmt.Errorf("set block size %d: %w", MetaBlockSize, err)
	}
	blk := make([]byte, MetaBlockSize)
	copy(blk, b)
	for range 2 {
		if _, err := t.writeBlock(blk); err != nil {
			return fmt.Errorf("write label: %w", err)
		}
	}
	if err := t.d.Op(mtWEOF, 1); err != nil {
		return fmt.Errorf("write filemark after the label: %w", err)
	}
	t.files, t.partial, t.owner = nil, nil, nil
	return nil
}

// readLabel rewinds and reads both copies of the label, as the folder tape
// does: the first wins when it is good; damage describes a bad copy.
func (t *Device) readLabel() (l tape.Label, damage, err error) {
	if err := t.d.Op(mtREW, 1); err != nil {
		return tape.Label{}, nil, fmt.Errorf("rewind: %w", err)
	}
	if err := t.d.Op(mtSETBLK, MetaBlockSize); err != nil {
		return tape.Label{}, nil, fmt.Errorf("set block size %d: %w", MetaBlockSize, err)
	}
	t.owner = nil
	blk := make([]byte, MetaBlockSize)
	var got [2]tape.Label
	missing := fmt.Errorf("%w: label block missing", tape.ErrBadLabel)
	errs := [2]error{missing, missing}
	for i := range 2 {
		n, err := t.d.Read(blk)
		switch {
		case err == nil && n == 0 && i == 0:
			// Nothing, or only a filemark (how a tape is blanked without
			// erasing it: `mt weof` at the beginning), before end of data.
			if t.atEOD() {
				return tape.Label{}, nil, fmt.Errorf("%w (the tape is empty)", tape.ErrBlank)
			}
			if n2, err2 := t.d.Read(blk); err2 == nil && n2 == 0 && t.atEOD() {
				return tape.Label{}, nil, fmt.Errorf("%w (a filemark and nothing after it)", tape.ErrBlank)
			}
			return tape.Label{}, nil, fmt.Errorf("%w: tape file 0 is empty", tape.ErrBadLabel)
		case err != nil:
			errs[i] = fmt.Errorf("%w: label block %d: %v (not a Kura tape, or a medium error)", tape.ErrBadLabel, i, err)
		case n != MetaBlockSize:
			errs[i] = fmt.Errorf("%w: label block %d missing", tape.ErrBadLabel, i)
		default:
			got[i], errs[i] = tape.DecodeLabel(bytes.TrimRight(blk, "\x00"))
		}
		if n == 0 {
			break
		}
	}
	switch {
	case errs[0] == nil && errs[1] == nil:
		if got[0] != got[1] {
			return got[0], fmt.Errorf("%w: the label's two copies disagree; the first is used", tape.ErrBadLabel), nil
		}
		return got[0], nil, nil
	case errs[0] == nil:
		return got[0], fmt.Errorf("second copy: %w (the first is good)", errs[1]), nil
	case errs[1] == nil:
		return got[1], fmt.Errorf("first copy: %w (read from the second)", errs[0]), nil
	}
	return tape.Label{}, nil, fmt.Errorf("%w; %v", errs[0], errs[1])
}

func (t *Device) atEOD() bool {
	st, err := t.d.Status()
	return err == nil && st.EOD()
}

// LabelDamage reports what was wrong with one copy of the label when the
// tape was opened: nil when both are good, else an error wrapping
// tape.ErrBadLabel. The tape is readable either way.
func (t *Device) LabelDamage() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.damage
}

// locate moves the head to the beginning of st file f, spacing over
// filemarks from where the driver says the head is (rewinding only when it
// does not know).
func (t *Device) locate(f int) error {
	t.owner = nil
	st, err := t.d.Status()
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	cur, blk := int(st.FileNo), int(st.BlockNo)
	if cur < 0 || blk < 0 || f == 0 {
		if err := t.d.Op(mtREW, 1); err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
		cur, blk = 0, 0
	}
	switch {
	case cur == f && blk == 0:
		return nil
	case cur < f:
		err = t.d.Op(mtFSF, int32(f-cur))
	default:
		if err = t.d.Op(mtBSF, int32(cur-f+1)); err == nil {
			err = t.d.Op(mtFSF, 1)
		}
	}
	if err != nil {
		return fmt.Errorf("space to tape file %d: %w", f, err)
	}
	return nil
}

// scan finds the tape files: for each, it spaces over the data (counting
// its blocks by the position) and reads the trailer.
func (t *Device) scan() error {
	t.files, t.partial, t.bad = nil, nil, map[int]error{}
	if err := t.locate(dataFile(1)); err != nil {
		if errors.Is(err, unix.EIO) {
			return nil // a label and nothing after it
		}
		return fmt.Errorf("tape %s: %w", t.label.Barcode, err)
	}
	for n := 1; ; n++ {
		fi, end, err := t.scanOne(n)
		if err != nil && fi != nil {
			// A damaged trailer: the tape file stays in the list, and
			// the others stay readable. Files and Open(n) report it.
			t.files = append(t.files, *fi)
			t.bad[n] = err
			if t.locate(dataFile(n+1)) != nil {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		if fi == nil {
			return nil
		}
		if fi.Status == tape.FileIncomplete {
			t.partial = fi
			return nil
		}
		t.files = append(t.files, *fi)
		if end {
			return nil
		}
	}
}

// scanOne reads tape file n, the head at the beginning of its data. It
// returns nil at the end of the tape files, an incomplete FileInfo for
// data without a trailer, and end when the tape ends right after n.
func (t *Device) scanOne(n int) (fi *tape.FileInfo, end bool, err error) {
	corrupt := func(err error) error {
		return &tape.CorruptError{Library: t.label.Library, Barcode: t.label.Barcode, File: n, Block: -1, Err: err}
	}
	p0, err := t.d.Tell()
	if err != nil {
		return nil, false, fmt.Errorf("tape %s: tape file %d: position: %w", t.label.Barcode, n, err)
	}
	serr := t.d.Op(mtFSF, 1)
	p1, err := t.d.Tell()
	if err != nil {
		return nil, false, fmt.Errorf("tape %s: tape file %d: position: %w", t.label.Barcode, n, err)
	}
	incomplete := func(blocks int64) *tape.FileInfo {
		bs := t.label.BlockSize
		return &tape.FileInfo{Number: n, Status: tape.FileIncomplete, Blocks: blocks, BlockSize: bs, Bytes: blocks * int64(bs)}
	}
	if serr != nil {
		// End of data inside the data: written up to a power loss.
		if p1 > p0 {
			return incomplete(p1 - p0), true, nil
		}
		return nil, true, nil
	}
	blocks := p1 - p0 - 1
	tr, empty, err := t.readTrailer()
	if empty && err == nil {
		if blocks > 0 {
			return incomplete(blocks), true, nil
		}
		return nil, true, nil // an aborted tape file's filemark, or the driver's on close
	}
	damaged := &tape.FileInfo{Number: n, Status: tape.FileComplete, Blocks: blocks, BlockSize: t.label.BlockSize,
		Bytes: blocks * int64(t.label.BlockSize)}
	switch {
	case err != nil:
		return damaged, false, corrupt(err)
	case tr.Number != n:
		return damaged, false, corrupt(fmt.Errorf("%w: the trailer says tape file %d", tape.ErrCorrupt, tr.Number))
	case tr.Blocks != blocks:
		return damaged, false, corrupt(fmt.Errorf("%w: %d blocks on tape, the trailer says %d", tape.ErrTruncated, blocks, tr.Blocks))
	}
	return &tr.FileInfo, false, nil
}

// trailer is a tape file's trailer: its filemark and checksum table.
type trailer struct {
	tape.FileInfo
	sums []uint32
}

// Trailer layout (doc.go).
const (
	trailerMagic   = "KSTT"
	trailerVersion = 1
	trailerHeader  = 28
)

func encodeTrailer(fi tape.FileInfo, table []byte) ([]byte, error) {
	mark, err := tape.EncodeFilemark(fi)
	if err != nil {
		return nil, err
	}
	sums := append(tape.EncodeChecksumHeader(fi.BlockSize), table...)
	b := make([]byte, trailerHeader, trailerHeader+len(mark)+len(sums))
	le := binary.LittleEndian
	copy(b, trailerMagic)
	le.PutUint16(b[4:], trailerVersion)
	le.PutUint32(b[8:], uint32(len(mark)))
	le.PutUint64(b[16:], uint64(len(sums)))
	le.PutUint32(b[24:], tape.CRC32C(b[:24]))
	b = append(b, mark...)
	return append(b, sums...), nil
}

// decodeTrailer parses a trailer (zero padding after it allowed). Every
// length is checked against the bytes there are before it is used.
func decodeTrailer(b []byte) (trailer, error) {
	le := binary.LittleEndian
	if len(b) < trailerHeader {
		return trailer{}, fmt.Errorf("trailer: %w: %d bytes", tape.ErrTruncated, len(b))
	}
	if string(b[:4]) != trailerMagic {
		return trailer{}, fmt.Errorf("trailer: %w: bad magic", tape.ErrCorrupt)
	}
	if got, want := le.Uint32(b[24:]), tape.CRC32C(b[:24]); got != want {
		return trailer{}, fmt.Errorf("trailer: %w: header crc %08x, want %08x", tape.ErrCorrupt, got, want)
	}
	if v := le.Uint16(b[4:]); v != trailerVersion {
		return trailer{}, fmt.Errorf("trailer: %w: unknown version %d", tape.ErrCorrupt, v)
	}
	if le.Uint16(b[6:]) != 0 || le.Uint32(b[12:]) != 0 {
		return trailer{}, fmt.Errorf("trailer: %w: reserved bytes set", tape.ErrCorrupt)
	}
	m, c := uint64(le.Uint32(b[8:])), le.Uint64(b[16:])
	rest := uint64(len(b) - trailerHeader)
	if m > tape.MaxFilemarkSize || m > rest || c > rest-m {
		return trailer{}, fmt.Errorf("trailer: %w: %d filemark and %d checksum bytes in %d", tape.ErrTruncated, m, c, rest)
	}
	fi, err := tape.DecodeFilemark(b[trailerHeader : trailerHeader+m])
	if err != nil {
		return trailer{}, err
	}
	sums := b[trailerHeader+m : trailerHeader+m+c]
	bs, err := tape.DecodeChecksumHeader(sums)
	if err != nil {
		return trailer{}, err
	}
	table := sums[tape.ChecksumHeaderSize:]
	if bs != fi.BlockSize || uint64(len(table)) != 4*uint64(fi.Blocks) {
		return trailer{}, fmt.Errorf("trailer: %w: checksum table of %d bytes, block size %d, for %d blocks of %d",
			tape.ErrCorrupt, len(table), bs, fi.Blocks, fi.BlockSize)
	}
	if got := crc32.Checksum(table, castagnoli); got != fi.CRCTable {
		return trailer{}, fmt.Errorf("trailer: %w: checksum table crc %08x, the filemark says %08x", tape.ErrCorrupt, got, fi.CRCTable)
	}
	if bytes.ContainsFunc(b[trailerHeader+m+c:], func(r rune) bool { return r != 0 }) {
		return trailer{}, fmt.Errorf("trailer: %w: data after the checksum table", tape.ErrCorrupt)
	}
	tr := trailer{FileInfo: fi, sums: make([]uint32, fi.Blocks)}
	for i := range tr.sums {
		tr.sums[i] = le.Uint32(table[4*i:])
	}
	return tr, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readTrailer reads the trailer st file at the head, to its filemark.
// empty: the st file holds nothing (end of data or a bare filemark).
// Memory grows with the blocks actually read, never with a length read
// from the tape.
func (t *Device) readTrailer() (tr trailer, empty bool, err error) {
	if err := t.d.Op(mtSETBLK, MetaBlockSize); err != nil {
		return trailer{}, false, fmt.Errorf("set block size %d: %w", MetaBlockSize, err)
	}
	var b []byte
	blk := make([]byte, MetaBlockSize)
	for {
		n, err := t.d.Read(blk)
		if err != nil {
			return trailer{}, false, fmt.Errorf("%w: read trailer: %v", tape.ErrCorrupt, err)
		}
		if n == 0 {
			break
		}
		b = append(b, blk[:n]...)
	}
	if len(b) == 0 {
		return trailer{}, true, nil
	}
	tr, err = decodeTrailer(b)
	return tr, false, err
}

// Label returns the tape's label.
func (t *Device) Label() tape.Label {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.label
}

// Files lists the tape files, as found at Open and written since; an
// incomplete last one (data without trailer) is listed with FileIncomplete.
func (t *Device) Files() ([]tape.FileInfo, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, tape.ErrClosed
	}
	for n := range len(t.files) {
		if err := t.bad[n+1]; err != nil {
			return nil, err
		}
	}
	files := append([]tape.FileInfo(nil), t.files...)
	if t.partial != nil {
		files = append(files, *t.partial)
	}
	if t.w != nil {
		files = append(files, tape.FileInfo{Number: t.w.number, Status: tape.FileIncomplete, BlockSize: t.w.bs,
			Bytes: t.w.written, Blocks: t.w.blocks})
	}
	return files, nil
}

// Used is the number of data bytes on the tape.
func (t *Device) Used() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.used()
}

func (t *Device) used() int64 {
	var u int64
	for _, f := range t.files {
		u += f.Bytes
	}
	if t.partial != nil {
		u += t.partial.Bytes
	}
	if t.w != nil {
		u += t.w.written
	}
	return u
}

// Close releases the drive; an open writer is aborted first.
func (t *Device) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return tape.ErrClosed
	}
	w := t.w
	t.mu.Unlock()
	var err error
	if w != nil {
		if e := w.Abort(); e != nil && !errors.Is(e, tape.ErrClosed) {
			err = e
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if e := t.d.Close(); e != nil && err == nil {
		err = e
	}
	return err
}

// writeBlock writes one block. Early warning is the driver's: a write that
// fails with ENOSPC is tried once more (the driver lets every second write
// through past early warning); two in a row are the physical end. ew
// reports that the tape is past early warning after this block.
func (t *Device) writeBlock(b []byte) (ew bool, err error) {
	n, err := t.d.Write(b)
	if errors.Is(err, unix.ENOSPC) {
		ew = true
		n, err = t.d.Write(b)
		if errors.Is(err, unix.ENOSPC) {
			return true, fmt.Errorf("%w: the drive reports the physical end of the tape", tape.ErrEndOfMedia)
		}
	}
	switch {
	case errors.Is(err, unix.EACCES):
		return ew, ErrWriteProtected
	case err != nil:
		return ew, err
	case n != len(b):
		return true, fmt.Errorf("%w: the drive wrote %d of %d bytes", tape.ErrEndOfMedia, n, len(b))
	}
	if st, err := t.d.Status(); err == nil && st.EOT() {
		ew = true
	}
	return ew, nil
}

// ---- writing ----

// Append starts tape file len(Files())+1 after the last complete one,
// writing over an incomplete one.
func (t *Device) Append(tag string) (tape.FileWriter, error) {
	if len(tag) > tape.MaxTagLen || !utf8.ValidString(tag) {
		return nil, fmt.Errorf("append: tag is not UTF-8 of at most %d bytes", tape.MaxTagLen)
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

// ---- reading ----

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
	tr, empty, err := t.readTrailer()
	if empty {
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
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.off + offset
	case io.SeekEnd:
		abs = r.info.Bytes + offset
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("seek: negative position %d", abs)
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
