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
//
// Every method is one a physical library (a changer robot and its drives)
// could honour as well; creating and removing a library, adding tapes and
// reclaiming space belong to the concrete type, not here. Errors are the
// package's sentinels (ErrUnknownTape, ErrExported, ErrDriveBusy, …)
// wrapped with %w.
type Changer interface {
	// Config is the library's configuration: name, barcode prefix, the
	// number of drives, slots and mail slots, default drive settings.
	Config() Config
	// Status is the inventory: every slot, drive and mail slot and what
	// it holds.
	Status() (Status, error)
	// Tapes describes every tape, sorted by barcode.
	Tapes() ([]TapeStatus, error)
	// Drives describes every drive: its settings and the tape it holds.
	Drives() ([]DriveStatus, error)
	// SetDrive changes drive n's block size and transfer-buffer memory
	// from its next Load (ErrNoDrive for a drive it does not have).
	SetDrive(n int, blockSize, bufferSize int) error
	// Acquire leases drive n (0: the first free one), waiting while it is
	// busy until ctx ends (ErrDriveBusy).
	Acquire(ctx context.Context, n int) (Drive, error)
	// Export moves a tape to a mail slot (offline); Import back to a free
	// storage slot.
	Export(barcode string) error
	Import(barcode string) error
	// MarkFull stops writers from choosing a tape.
	MarkFull(barcode string) error
	// Erase relabels a tape: its files are gone, its generation grows by
	// one, its full mark is cleared. Not an exported tape, nor one in an
	// acquired drive (ErrDriveBusy); the catalog is the caller's concern.
	Erase(barcode string) error
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
