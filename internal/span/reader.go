package span

import (
	"errors"
	"fmt"
	"io"

	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// Open gives the tape with a barcode, loaded and ready to read. The reader
// owns it: it closes the device when done with the part or at Close (a
// tape library's cartridge holds a drive for as long as it is open).
type Open func(barcode string) (tape.Device, error)

// Reader reads a saveset's data over its parts. It implements
// stream.FrameSource.
type Reader struct {
	open  Open
	parts []Part
}

var _ stream.FrameSource = (*Reader)(nil)

// NewReader reads the data described by parts (as returned by
// Writer.Finish), opening tapes through open.
func NewReader(open Open, parts []Part) *Reader {
	return &Reader{open: open, parts: parts}
}

// OpenAt reads from loc to the end of the last part. When one part ends,
// reading goes on in the next after its header, so the bytes are the
// frames in order. Each part's tape file must hold exactly Part.Bytes bytes
// (ErrPartMismatch otherwise). The first part is opened before OpenAt
// returns, so an unreadable tape fails here.
func (r *Reader) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	if loc.Part < 0 || loc.Part >= len(r.parts) || loc.Offset < 0 || loc.Offset > r.parts[loc.Part].Bytes {
		return nil, fmt.Errorf("span: part %d offset %d (%d parts): %w", loc.Part, loc.Offset, len(r.parts), ErrBadLocation)
	}
	pr := &partsReader{r: r, part: loc.Part}
	if err := pr.openPart(loc.Offset); err != nil {
		return nil, err
	}
	return pr, nil
}

type partsReader struct {
	r      *Reader
	part   int
	dev    tape.Device // the tape of the current part, closed with it
	fr     tape.FileReader
	left   int64 // bytes left in the current part
	err    error
	closed bool
}

// openPart opens part pr.part at offset off.
func (pr *partsReader) openPart(off int64) error {
	p := pr.r.parts[pr.part]
	where := fmt.Sprintf("span: part %d (tape %s, file %d)", pr.part+1, p.Barcode, p.File)
	dev, err := pr.r.open(p.Barcode)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	fr, err := dev.Open(p.File)
	if err != nil {
		dev.Close()
		return fmt.Errorf("%s: %w", where, err)
	}
	fail := func(err error) error {
		fr.Close()
		dev.Close()
		return err
	}
	if info := fr.Info(); info.Bytes != p.Bytes {
		if info.Bytes < p.Bytes {
			return fail(fmt.Errorf("%s: holds %d bytes, want %d: %w: %w", where, info.Bytes, p.Bytes, ErrPartMismatch, tape.ErrTruncated))
		}
		return fail(fmt.Errorf("%s: holds %d bytes, want %d: %w", where, info.Bytes, p.Bytes, ErrPartMismatch))
	}
	if off > 0 {
		if _, err := fr.Seek(off, io.SeekStart); err != nil {
			return fail(fmt.Errorf("%s: seeking to %d: %w", where, off, err))
		}
	}
	pr.dev = dev
	pr.fr, pr.left = fr, p.Bytes-off
	return nil
}

func (pr *partsReader) Read(b []byte) (int, error) {
	if pr.closed {
		return 0, fmt.Errorf("span reader: %w", tape.ErrClosed)
	}
	if pr.err != nil {
		return 0, pr.err
	}
	for pr.left == 0 {
		if err := pr.closePart(); err != nil {
			pr.err = fmt.Errorf("span: closing part %d: %w", pr.part+1, err)
			return 0, pr.err
		}
		if pr.part+1 >= len(pr.r.parts) {
			pr.err = io.EOF
			return 0, io.EOF
		}
		pr.part++
		if err := pr.openPart(pr.r.parts[pr.part].Header); err != nil {
			pr.err = err
			return 0, err
		}
	}
	if int64(len(b)) > pr.left {
		b = b[:pr.left]
	}
	n, err := pr.fr.Read(b)
	pr.left -= int64(n)
	if errors.Is(err, io.EOF) {
		if pr.left > 0 {
			p := pr.r.parts[pr.part]
			pr.err = fmt.Errorf("span: part %d (tape %s, file %d) ended %d bytes early: %w: %w", pr.part+1, p.Barcode, p.File, pr.left, ErrPartMismatch, tape.ErrTruncated)
			return n, pr.err
		}
		err = nil
	}
	if err != nil {
		pr.err = err
	}
	return n, err
}

func (pr *partsReader) Close() error {
	if pr.closed {
		return nil
	}
	pr.closed = true
	return pr.closePart()
}

// closePart closes the current part's tape file and its tape: a device
// from Open is a drive's for as long as it is open (a tape library's
// cartridge holds a drive until closed).
func (pr *partsReader) closePart() error {
	var err error
	if pr.fr != nil {
		err = pr.fr.Close()
		pr.fr = nil
	}
	if pr.dev != nil {
		if derr := pr.dev.Close(); derr != nil && !errors.Is(derr, tape.ErrClosed) && err == nil {
			err = derr
		}
		pr.dev = nil
	}
	return err
}
