package sttape

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

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

// Relabel erases the tape and labels it again (recycling, library.Erase):
// the label tape.Relabelled gives from the current one and l, written at
// the beginning of the tape, which discards every tape file after it. Not
// while a tape file is open (tape.ErrBusy), nor on a write-protected tape.
func (t *Device) Relabel(l tape.Label) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return tape.ErrClosed
	case t.w != nil || t.readers > 0:
		return fmt.Errorf("relabel %s: %w: a tape file is open", t.label.Barcode, tape.ErrBusy)
	}
	nl, err := tape.Relabelled(t.label, l, t.label.Generation, t.opts.clock())
	if err != nil {
		return err
	}
	b, err := tape.EncodeLabel(nl)
	if err != nil {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, err)
	}
	st, err := t.d.Status()
	if err != nil {
		return fmt.Errorf("relabel %s: status: %w", t.label.Barcode, err)
	}
	if st.WriteProtected() {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, ErrWriteProtected)
	}
	if err := t.writeLabel(b); err != nil {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, err)
	}
	t.label, _ = tape.DecodeLabel(b)
	t.damage, t.bad = nil, map[int]error{}
	return nil
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
	tr, empty, done, err := t.readTrailer()
	switch {
	case empty && err == nil && blocks == 0:
		return nil, true, nil // an aborted tape file's filemark, or the driver's on close
	case empty && err == nil, !done && err == nil:
		return incomplete(blocks), true, nil
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

// readTrailer reads the trailer st file at the head, to its filemark.
// empty: the st file holds nothing (end of data or a bare filemark);
// !done: it ends without its filemark, at the end of data.
// Memory grows with the blocks actually read, never with a length read
// from the tape.
func (t *Device) readTrailer() (tr trailer, empty, done bool, err error) {
	if err := t.d.Op(mtSETBLK, MetaBlockSize); err != nil {
		return trailer{}, false, false, fmt.Errorf("set block size %d: %w", MetaBlockSize, err)
	}
	var b []byte
	blk := make([]byte, MetaBlockSize)
	for {
		n, err := t.d.Read(blk)
		if err != nil {
			return trailer{}, false, false, fmt.Errorf("%w: read trailer: %v", tape.ErrCorrupt, err)
		}
		if n == 0 {
			break
		}
		b = append(b, blk[:n]...)
	}
	if len(b) == 0 {
		return trailer{}, true, true, nil
	}
	if t.atEOD() {
		// No filemark after it: the writer stopped while writing the
		// trailer, so Finish never returned.
		return trailer{}, false, false, nil
	}
	tr, err = decodeTrailer(b)
	return tr, false, true, err
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
