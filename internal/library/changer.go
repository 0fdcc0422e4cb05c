package library

import (
	"context"

	"github.com/kura-backup/kura/internal/tape"
)

// Changer is a tape library as jobs and administrators see it: an
// inventory of slots, drives and mail slots; drives leased one holder at a
// time; tapes moved by barcode between slots, drives and mail slots
// (import/export); and devices handed out only as tape.Device, from a
// leased drive or, for reading, OpenTape. What the media are is the
// library's Media; the changer never learns it.
//
// *Library, the virtual tape library on disk, is the implementation; its
// tapes are folders (FolderMedia) unless it was opened with other Media.
type Changer interface {
	Config() Config
	// Status is the inventory: every slot, drive and mail slot and what
	// it holds.
	Status() (Status, error)
	// Tapes describes every tape, sorted by barcode.
	Tapes() ([]TapeStatus, error)
	// Acquire leases drive n (0: the first free one), waiting while it is
	// busy until ctx ends (ErrDriveBusy).
	Acquire(ctx context.Context, n int) (Drive, error)
	// Export moves a tape to a mail slot (offline); Import back to a free
	// storage slot.
	Export(barcode string) error
	Import(barcode string) error
	// MarkFull stops writers from choosing a tape.
	MarkFull(barcode string) error
	// OpenTape opens a tape for reading wherever it is (not exported).
	OpenTape(barcode string) (tape.Device, error)
}

// Drive is a leased drive. The tape.Device returned by Load and
// LoadWritable belongs to the drive: it stays valid until the next Load,
// LoadWritable, Unload or Release, which close it. A Drive is safe for use
// by one goroutine at a time.
type Drive interface {
	// Number is the drive's number, 1-based.
	Number() int
	// Load moves a tape into the drive and opens it with the drive's
	// settings.
	Load(barcode string) (tape.Device, error)
	// LoadWritable loads the best tape to write on (see vtlDrive's rules);
	// LoadWritableIf among those allow accepts.
	LoadWritable(exclude ...string) (tape.Device, string, error)
	LoadWritableIf(allow TapeFilter, exclude ...string) (tape.Device, string, error)
	// Unload closes the loaded tape and puts it back in its home slot.
	Unload() error
	// Release closes the loaded tape and ends the lease.
	Release() error
}

var (
	_ Changer = (*Library)(nil)
	_ Drive   = (*vtlDrive)(nil)
)
