package library

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kura-backup/kura/internal/tape"
)

// Media is where a library keeps its cartridges: it labels new media and
// loads media into a drive as a tape.Device, by barcode. The changer (slots,
// drives, mail slots, the inventory) sits above it and never learns what the
// media are; a folder library's media are a folder per tape (FolderMedia).
type Media interface {
	// Format labels new, blank media with l (package tape's Format rules:
	// a zero EarlyWarning means Capacity; version, generation and times are
	// set). It fails, wrapping fs.ErrExist, when media are stored under
	// l.Barcode already.
	Format(l tape.Label, opts tape.Options) error
	// Open loads the media of barcode bc into a device with the drive
	// settings opts. With a zero standIn it opens only media whose label
	// reads (tape.ErrBlank, tape.ErrBadLabel otherwise); with a standIn,
	// media whose label is lost open for reading with standIn in its place
	// (their tape files record their own block size and length).
	Open(bc string, standIn tape.Label, opts tape.Options) (tape.Device, error)
	// Exists reports whether anything is stored under bc, labelled or not:
	// a new tape never takes the barcode of media a crash left behind.
	Exists(bc string) (bool, error)
}

// Optional capabilities of the devices Media hand out, found by interface
// checks (as tape.Remainer and tape.DataPather are).
type (
	// Relabeler is a device whose media can be erased and labelled again.
	Relabeler interface {
		Relabel(l tape.Label) error
	}
	// Reclaimer is a device that can drop the incomplete last tape file a
	// dead writer left, at once rather than at the next Append, and say how
	// many bytes that freed (tape.ErrBusy while a writer holds the media).
	Reclaimer interface {
		Reclaim() (int64, error)
	}
	// LabelReporter is a device that keeps its label in two copies and
	// says what it found: LabelDamage what is wrong with one copy (nil when
	// both are good; an error wrapping tape.ErrBadLabel), LabelLost whether
	// both were, so that a stand-in label is in use and the media take no
	// more writes until erased.
	LabelReporter interface {
		LabelDamage() error
		LabelLost() bool
	}
)

var (
	_ Relabeler     = (*tape.Tape)(nil)
	_ Reclaimer     = (*tape.Tape)(nil)
	_ LabelReporter = (*tape.Tape)(nil)
)

// ErrUnsupported: the library's media cannot do what was asked (erase media
// that cannot be relabelled, say).
var ErrUnsupported = errors.New("not supported by this library's media")

// FolderMedia returns the media of a folder library: each tape a folder
// DIR/BARCODE holding a virtual tape (package tape).
func FolderMedia(dir string) Media { return folderMedia{dir: dir} }

type folderMedia struct{ dir string }

func (m folderMedia) path(bc string) string { return filepath.Join(m.dir, bc) }

func (m folderMedia) Format(l tape.Label, opts tape.Options) error {
	t, err := tape.Format(m.path(l.Barcode), l, opts)
	if err != nil {
		return err
	}
	return t.Close()
}

func (m folderMedia) Open(bc string, standIn tape.Label, opts tape.Options) (tape.Device, error) {
	var (
		t   *tape.Tape
		err error
	)
	if standIn == (tape.Label{}) {
		t, err = tape.Open(m.path(bc), opts)
	} else {
		t, err = tape.OpenWithLabel(m.path(bc), standIn, opts)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (m folderMedia) Exists(bc string) (bool, error) {
	_, err := os.Lstat(m.path(bc))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("media %s: %w", bc, err)
	}
	return true, nil
}

// closeDevice closes d, ignoring a nil device and a second close.
func closeDevice(d tape.Device) error {
	if d == nil {
		return nil
	}
	if err := d.Close(); err != nil && !errors.Is(err, tape.ErrClosed) {
		return err
	}
	return nil
}
