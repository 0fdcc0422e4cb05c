package api

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TapeService is the tapes of the libraries: /tapes, and the tapes of one
// library (/libraries/{name}/tapes). Load and unload are short admin
// actions on a drive, not jobs: they are refused (conflict) while a job
// holds the drive, and the error says which job.
type TapeService interface {
	// Tapes lists the tapes of one library, or of all (library ""). The
	// default library is created on first use, as by a backup.
	Tapes(ctx context.Context, q TapeQuery) ([]Tape, error)
	// Tape is one tape as Tapes lists it.
	Tape(ctx context.Context, barcode string) (*Tape, error)
	// TapeLayout reads a tape's label and tape files from the medium.
	TapeLayout(ctx context.Context, barcode string) (*TapeLayout, error)
	// AddTapes adds labelled blank tapes to a library (new slots, new
	// barcodes) and returns them.
	AddTapes(ctx context.Context, library string, req TapeAdd) ([]Tape, error)
	// ExportTape moves a tape to a mail slot: offline.
	ExportTape(ctx context.Context, barcode string) (*Tape, error)
	// ImportTape moves a tape from the mail slot back into a free slot.
	ImportTape(ctx context.Context, barcode string) (*Tape, error)
	// LabelTape puts a tape into a pool (Scratch: back to scratch); a tape
	// that holds unexpired savesets stays in its pool (conflict).
	LabelTape(ctx context.Context, barcode string, req TapeLabelRequest) (*Tape, error)
	// LoadTape moves a tape into a drive of its library.
	LoadTape(ctx context.Context, barcode string, req TapeLoad) (*Tape, error)
	// UnloadTape moves a tape from its drive back to its home slot.
	UnloadTape(ctx context.Context, barcode string) (*Tape, error)
}

// DriveService is the drives of the libraries and their tuning.
type DriveService interface {
	// Drives lists the drives of one library, or of all (library "").
	Drives(ctx context.Context, library string) ([]Drive, error)
	// SetDrive changes a drive's media block size and transfer-buffer
	// memory; a zero field keeps the drive's value.
	SetDrive(ctx context.Context, library string, drive int, req DriveUpdate) (*Drive, error)
}

func init() {
	wireTypes = append(wireTypes, Tape{}, TapeLayout{}, TapeAdd{}, TapeLabelRequest{}, TapeLoad{}, DriveUpdate{})
}

// Tape is a tape with what the catalog knows of it (`tape list --json`).
type Tape struct {
	Barcode           string  `json:"barcode"`
	Library           string  `json:"library"`
	Pool              string  `json:"pool"` // "" is scratch
	Location          string  `json:"location"`
	Slot              int     `json:"slot,omitempty"` // home slot; 0 when exported
	Drive             int     `json:"drive,omitempty"`
	MailSlot          int     `json:"mail_slot,omitempty"`
	State             string  `json:"state"` // blank, appendable, full, exported, error, unread (a tape library's cartridge not yet read)
	MarkedFull        bool    `json:"marked_full"`
	UsedBytes         int64   `json:"used_bytes"`
	CapacityBytes     int64   `json:"capacity_bytes"`
	EarlyWarningBytes int64   `json:"early_warning_bytes"`
	Files             int     `json:"files"` // tape files, complete or not
	Generation        int     `json:"generation"`
	Savesets          []int64 `json:"savesets"` // unexpired savesets with data or index on the tape
	Error             string  `json:"error,omitempty"`
}

// TapeQuery selects tapes (GET /tapes?library=&pool=).
type TapeQuery struct {
	Library string `json:"library,omitempty"` // "" = every library
	Pool    string `json:"pool,omitempty"`    // "" = every pool; Scratch for the scratch pool
}

// TapeLabel is a tape's label as it is on the medium (docs/design.md,
// "Tape label"); its keys are the medium's.
type TapeLabel struct {
	Version      int       `json:"version"`
	Barcode      string    `json:"barcode"`
	Library      string    `json:"library"`
	BlockSize    int       `json:"block_size"`
	Capacity     int64     `json:"capacity"`
	EarlyWarning int64     `json:"early_warning"`
	Created      time.Time `json:"created"`
	Labelled     time.Time `json:"labelled"`
	Generation   int       `json:"generation"`
}

// TapeFile is one tape file of a tape's layout.
type TapeFile struct {
	Number         int       `json:"number"` // 1-based
	Status         string    `json:"status"` // complete or incomplete
	Bytes          int64     `json:"bytes"`
	Blocks         int64     `json:"blocks"`
	BlockSizeBytes int       `json:"block_size_bytes"`
	CRCTable       uint32    `json:"crc_table"` // CRC-32C over the block checksum table
	Written        time.Time `json:"written"`
	Tag            string    `json:"tag"`
}

// TapeLayout is what a tape holds, read from the medium (`tape show`).
type TapeLayout struct {
	Label     TapeLabel  `json:"label"`
	Files     []TapeFile `json:"files"`
	UsedBytes int64      `json:"used_bytes"`
	// LabelDamage says what is wrong with one copy of the label (the tape
	// is read with the other); "" when both are sound.
	LabelDamage string `json:"label_damage,omitempty"`
	// FilesError says why the tape files could not all be read; Files
	// holds those before the damage.
	FilesError string `json:"files_error,omitempty"`
}

// TapeAdd adds blank tapes to a library (POST /libraries/{name}/tapes).
type TapeAdd struct {
	Count int `json:"count"`
}

// Scratch names the scratch pool in requests (in a Tape it is "").
const Scratch = "scratch"

// MaxPoolLen is the longest pool name, in bytes.
const MaxPoolLen = 128

// TapeLabelRequest puts a tape into a pool (POST /tapes/{barcode}/label).
type TapeLabelRequest struct {
	Pool string `json:"pool"` // Scratch for the scratch pool
}

// Validate checks a pool name: not empty, at most MaxPoolLen bytes of
// UTF-8 without control characters.
func (r *TapeLabelRequest) Validate() error {
	switch {
	case r.Pool == "":
		return bad("pool", "say which pool (%s for the scratch pool)", Scratch)
	case len(r.Pool) > MaxPoolLen:
		return bad("pool", "at most %d bytes", MaxPoolLen)
	case !utf8.ValidString(r.Pool):
		return bad("pool", "%q is not UTF-8", r.Pool)
	case strings.IndexFunc(r.Pool, unicode.IsControl) >= 0:
		return bad("pool", "%q contains a control character", r.Pool)
	}
	return nil
}

// TapeLoad loads a tape into a drive (POST /tapes/{barcode}/load).
type TapeLoad struct {
	Drive int `json:"drive"` // 1-based, of the tape's library
}

// DriveUpdate tunes a drive (PATCH /libraries/{name}/drives/{drive}); a
// zero field keeps the drive's value.
type DriveUpdate struct {
	BlockSizeBytes  int `json:"block_size_bytes,omitempty"`
	BufferSizeBytes int `json:"buffer_size_bytes,omitempty"`
}

// MaxTapesAdded is the most tapes one TapeAdd adds (a library's slots).
const MaxTapesAdded = 10000

// Validate checks a tape add.
func (r *TapeAdd) Validate() error {
	if r.Count < 1 || r.Count > MaxTapesAdded {
		return bad("count", "must be between 1 and %d", MaxTapesAdded)
	}
	return nil
}

// Validate checks a load.
func (r *TapeLoad) Validate() error {
	if r.Drive < 1 {
		return bad("drive", "say which drive to load into (1, 2, ...)")
	}
	return nil
}

// Validate checks a drive update: something to change, nothing negative
// (the library checks the sizes).
func (r *DriveUpdate) Validate() error {
	switch {
	case r.BlockSizeBytes < 0:
		return bad("block_size_bytes", "must not be negative")
	case r.BufferSizeBytes < 0:
		return bad("buffer_size_bytes", "must not be negative")
	case r.BlockSizeBytes == 0 && r.BufferSizeBytes == 0:
		return bad("block_size_bytes", "give block_size_bytes and/or buffer_size_bytes")
	}
	return nil
}
