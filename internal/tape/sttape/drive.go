package sttape

import "fmt"

// Drive is the seam under the device: the Linux st driver's character
// device as read(2), write(2) and its three ioctls, nothing more. The real
// one is OpenDrive (a file descriptor on /dev/nstN); Emulation is the same
// semantics in memory, so everything above this interface is tested
// without a drive.
//
// Errors are the driver's errno values (unix.Errno): ENOSPC at early
// warning and at the physical end, EIO at end of data and on medium
// errors, EACCES on a write-protected tape, EINVAL for a count that is not
// a whole number of blocks in fixed-block mode.
type Drive interface {
	// Read reads whole blocks (fixed-block mode: len(p) a multiple of the
	// block size). It stops at a filemark; reading the filemark itself
	// returns 0 bytes once and positions after it. At end of data it
	// returns 0 bytes (GMT_EOD is then set), then EIO.
	Read(p []byte) (int, error)
	// Write writes whole blocks at the current position, discarding
	// everything after it. See doc.go for early warning.
	Write(p []byte) (int, error)
	// Op is MTIOCTOP: one of the mt* operations with its count.
	Op(op int16, count int32) error
	// Status is MTIOCGET.
	Status() (Status, error)
	// Tell is MTIOCPOS: the logical object number at the head (blocks and
	// filemarks count one each), what MTSEEK takes.
	Tell() (int64, error)
	// Close closes the device. The driver writes a filemark first if the
	// last operation was a write.
	Close() error
}

// Operations of MTIOCTOP (linux/mtio.h).
const (
	mtFSF         int16 = 1  // forward space over count filemarks: after the last
	mtBSF         int16 = 2  // backward space over count filemarks: before the last
	mtFSR         int16 = 3  // forward space count records
	mtBSR         int16 = 4  // backward space count records
	mtWEOF        int16 = 5  // write count filemarks
	mtREW         int16 = 6  // rewind
	mtOFFL        int16 = 7  // rewind and eject the tape (unload), ready for the changer
	mtNOP         int16 = 8  // no operation; flushes the driver's buffer
	mtEOM         int16 = 12 // to end of recorded data
	mtSETBLK      int16 = 20 // set the block size (0: variable)
	mtSEEK        int16 = 22 // to logical object count
	mtCOMPRESSION int16 = 32 // hardware compression on (1) or off (0)
)

// Status bits of MTIOCGET's mt_gstat (linux/mtio.h).
const (
	gmtEOF    uint32 = 0x80000000 // just after a filemark
	gmtBOT    uint32 = 0x40000000 // at the beginning of the tape
	gmtEOT    uint32 = 0x20000000 // past early warning (end of tape)
	gmtEOD    uint32 = 0x08000000 // at end of recorded data
	gmtWRPROT uint32 = 0x04000000 // the cartridge is write-protected
	gmtONLINE uint32 = 0x01000000 // a tape is loaded
)

// Status is what MTIOCGET says.
type Status struct {
	Type      int64  // mt_type: the driver's drive type
	BlockSize int    // from mt_dsreg; 0 is variable-block mode
	Density   int    // density code, from mt_dsreg
	Gstat     uint32 // generic status bits
	FileNo    int32  // file number of the position (-1: unknown)
	BlockNo   int32  // block number within the file (-1: unknown)
}

// Online, BOT, EOT, EOF, EOD and WriteProtected read the generic status bits.
func (s Status) Online() bool         { return s.Gstat&gmtONLINE != 0 }
func (s Status) BOT() bool            { return s.Gstat&gmtBOT != 0 }
func (s Status) EOT() bool            { return s.Gstat&gmtEOT != 0 }
func (s Status) EOF() bool            { return s.Gstat&gmtEOF != 0 }
func (s Status) EOD() bool            { return s.Gstat&gmtEOD != 0 }
func (s Status) WriteProtected() bool { return s.Gstat&gmtWRPROT != 0 }

// Offline rewinds the tape in d and ejects it (MTOFFL, `mt offline`): most
// libraries' robots take a tape out of a drive only after the drive has
// ejected it.
func Offline(d Drive) error {
	if err := d.Op(mtOFFL, 1); err != nil {
		return fmt.Errorf("eject (MTOFFL): %w", err)
	}
	return nil
}
