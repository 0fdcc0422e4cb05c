package library

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// Defaults and limits of a library's configuration.
const (
	DefaultSlots     = 8
	DefaultDrives    = 2
	DefaultMailSlots = 1
	// DefaultTapeSize is the capacity of a new virtual tape.
	DefaultTapeSize int64 = 64 << 30
	// MinTapeSize is the smallest tape a library accepts.
	MinTapeSize int64 = 16 << 20
	// DefaultBlockSize is a drive's media block size. 256 KiB was the
	// seed's best block size (NetVault VTL measurements).
	DefaultBlockSize = 256 << 10
	// DefaultBufferSize is a drive's transfer-buffer memory. 8193 KiB was
	// the seed's best setting (NetVault's "8193 KiB" transfer buffer).
	DefaultBufferSize = 8193 << 10
	// MinBlockSize and MaxBlockSize bound a drive's block size, which must
	// also be a multiple of BlockSizeUnit.
	MinBlockSize  = 4 << 10
	MaxBlockSize  = 16 << 20
	BlockSizeUnit = 512
	// DefaultBarcodePrefix starts every barcode of a library by default.
	DefaultBarcodePrefix = "KUR"

	// MaxSlots, MaxDrives and MaxMailSlots bound a library's configuration.
	MaxSlots     = 10000
	MaxDrives    = 256
	MaxMailSlots = 64
	// MaxTapeSize bounds a virtual tape: 64 TiB, twice the largest real
	// cartridge (LTO-10, 30 TB native). Anything larger is a typo.
	MaxTapeSize int64 = 64 << 40
	// MaxBufferSize bounds a drive's transfer-buffer memory.
	MaxBufferSize = 1 << 30
	// minEarlyWarningMargin and earlyWarningPercent define the default
	// early-warning margin: 2% of the tape, at least 64 MiB, at most half
	// the tape.
	minEarlyWarningMargin int64 = 64 << 20
	earlyWarningPercent         = 2
)

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	prefixRE = regexp.MustCompile(`^[A-Z0-9]{1,8}$`)
)

// Config describes a library. Zero fields take their defaults (see
// WithDefaults); Validate reports the first invalid field.
type Config struct {
	// Name of the library, written into every tape label. Default: the
	// base name of Dir. Letters, digits, '.', '_' and '-', at most 64.
	Name string `json:"name"`
	// Dir is the library folder. Required. Not stored in library.json:
	// a library can be moved as a folder.
	Dir string `json:"-"`
	// Slots is the number of storage slots (default 8). Create puts one
	// blank labelled tape into each. AddTapes may grow it.
	Slots int `json:"slots"`
	// Drives is the number of virtual drives (default 2).
	Drives int `json:"drives"`
	// MailSlots is the number of mail (import/export) slots (default 1).
	MailSlots int `json:"mail_slots"`
	// TapeSize is the capacity of each tape in bytes (default 64 GiB,
	// at least 16 MiB).
	TapeSize int64 `json:"tape_size"`
	// BlockSize is the default block size of a drive (default 256 KiB;
	// 4 KiB to 16 MiB, a multiple of 512). SetDrive changes one drive.
	BlockSize int `json:"block_size"`
	// BufferSize is the default transfer-buffer memory of a drive
	// (default 8193 KiB; at least two blocks).
	BufferSize int `json:"buffer_size"`
	// EarlyWarningMargin is how many bytes before the end of a tape
	// writers are told to move to the next tape: each tape's
	// Label.EarlyWarning = TapeSize - EarlyWarningMargin. Default: 2% of
	// TapeSize, at least 64 MiB, at most TapeSize/2. A value given must lie
	// in 1..TapeSize/2.
	EarlyWarningMargin int64 `json:"early_warning_margin"`
	// BarcodePrefix starts every barcode (default "KUR"; 1 to 8 characters
	// A-Z, 0-9). See the package documentation for the barcode scheme.
	BarcodePrefix string `json:"barcode_prefix"`
	// Media says where the tapes are kept when not in the folder
	// DIR/tapes: an S3 bucket (MediaConfig). nil: the folder.
	Media *MediaConfig `json:"media,omitempty"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Name == "" && c.Dir != "" {
		c.Name = filepath.Base(filepath.Clean(c.Dir))
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.Drives == 0 {
		c.Drives = DefaultDrives
	}
	if c.MailSlots == 0 {
		c.MailSlots = DefaultMailSlots
	}
	if c.TapeSize == 0 {
		c.TapeSize = DefaultTapeSize
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.BufferSize == 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.EarlyWarningMargin == 0 && c.TapeSize > 0 {
		c.EarlyWarningMargin = DefaultEarlyWarningMargin(c.TapeSize)
	}
	if c.BarcodePrefix == "" {
		c.BarcodePrefix = DefaultBarcodePrefix
	}
	return c
}

// DefaultEarlyWarningMargin is the margin used for a tape of tapeSize bytes:
// 2% of it, at least 64 MiB, at most half the tape.
func DefaultEarlyWarningMargin(tapeSize int64) int64 {
	m := tapeSize / 100 * earlyWarningPercent
	m = max(m, minEarlyWarningMargin)
	return min(m, tapeSize/2)
}

// EarlyWarning is the early-warning point written into each tape's label.
func (c Config) EarlyWarning() int64 { return c.TapeSize - c.EarlyWarningMargin }

// Validate checks c (after defaults) and returns an error wrapping
// ErrInvalidConfig naming the first bad field.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Dir == "":
		return bad("library folder (Dir) is required")
	case !nameRE.MatchString(c.Name):
		return bad("library name %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.Name)
	case c.Slots < 1 || c.Slots > MaxSlots:
		return bad("slots %d: want 1 to %d", c.Slots, MaxSlots)
	case c.Drives < 1 || c.Drives > MaxDrives:
		return bad("drives %d: want 1 to %d", c.Drives, MaxDrives)
	case c.MailSlots < c.minMailSlots() || c.MailSlots > MaxMailSlots:
		return bad("mail slots %d: want %d to %d", c.MailSlots, c.minMailSlots(), MaxMailSlots)
	case c.Media != nil && c.Media.Kind == MediaChanger && c.Drives != len(c.Media.DriveDevices):
		return bad("drives %d for %d drive devices", c.Drives, len(c.Media.DriveDevices))
	case c.TapeSize < MinTapeSize || c.TapeSize > MaxTapeSize:
		return bad("tape size %d bytes: want 16 MiB to 64 TiB", c.TapeSize)
	case c.EarlyWarningMargin < 1 || c.EarlyWarningMargin > c.TapeSize/2:
		return bad("early-warning margin %d bytes: want 1 to half the tape size (%d)", c.EarlyWarningMargin, c.TapeSize/2)
	case !prefixRE.MatchString(c.BarcodePrefix):
		return bad("barcode prefix %q: use 1 to 8 characters A-Z or 0-9", c.BarcodePrefix)
	}
	if err := c.Media.validate(); err != nil {
		return err
	}
	return validateDrive(c.BlockSize, c.BufferSize)
}

// minMailSlots: a virtual library has at least one mail slot; a tape
// library has those of its changer, maybe none.
func (c Config) minMailSlots() int {
	if c.Media != nil && c.Media.Kind == MediaChanger {
		return 0
	}
	return 1
}

// validateDrive checks a drive's block and buffer sizes.
func validateDrive(blockSize, bufferSize int) error {
	if blockSize < MinBlockSize || blockSize > MaxBlockSize || blockSize%BlockSizeUnit != 0 {
		return fmt.Errorf("%w: block size %d: want 4 KiB to 16 MiB in multiples of 512 bytes", ErrInvalidConfig, blockSize)
	}
	if bufferSize > MaxBufferSize {
		return fmt.Errorf("%w: buffer size %d: want at most 1 GiB", ErrInvalidConfig, bufferSize)
	}
	if bufferSize < 2*blockSize {
		return fmt.Errorf("%w: buffer size %d: want at least two blocks (%d bytes)", ErrInvalidConfig, bufferSize, 2*blockSize)
	}
	return nil
}

// String describes c on one line, for logs and benchmark records.
func (c Config) String() string {
	return fmt.Sprintf("library %s (%s): slots=%d drives=%d mail_slots=%d tape_size=%d early_warning_margin=%d block_size=%d buffer_size=%d barcode_prefix=%s",
		c.Name, c.Dir, c.Slots, c.Drives, c.MailSlots, c.TapeSize, c.EarlyWarningMargin, c.BlockSize, c.BufferSize, c.BarcodePrefix)
}
