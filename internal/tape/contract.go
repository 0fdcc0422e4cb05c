// The drive contract: what every kind of media implements. See doc.go for
// the on-disk layout of a virtual tape.

package tape

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Sentinel errors. Every failure a reader can meet is one of these, wrapped
// with context; test with errors.Is.
var (
	// ErrBlank: the tape has no label (never labelled, or label file missing).
	ErrBlank = errors.New("blank tape: no label")
	// ErrBadLabel: the label exists but is damaged or of an unknown version.
	ErrBadLabel = errors.New("damaged tape label")
	// ErrCorrupt: a block's CRC-32C does not match its data.
	ErrCorrupt = errors.New("corrupt block")
	// ErrTruncated: a tape file is shorter than its filemark says.
	ErrTruncated = errors.New("truncated tape file")
	// ErrIncomplete: the tape file was never finished (crash or failed write).
	ErrIncomplete = errors.New("incomplete tape file")
	// ErrEndOfMedia: the tape's capacity is reached; nothing more fits.
	ErrEndOfMedia = errors.New("end of media")
	// ErrNoSuchFile: a tape file number past the end of data.
	ErrNoSuchFile = errors.New("no such tape file")
	// ErrBusy: another writer (maybe another process) holds the tape or drive.
	ErrBusy = errors.New("in use by another writer")
	// ErrClosed: the handle was already finished, aborted or closed.
	ErrClosed = errors.New("handle closed")
)

// CorruptError names exactly where corruption was found. It wraps ErrCorrupt
// (or ErrTruncated).
type CorruptError struct {
	Library string // library name, from the label
	Barcode string
	File    int   // tape file number, 1-based
	Block   int64 // block number within the tape file, 0-based
	Err     error // ErrCorrupt or ErrTruncated
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: library %s, tape %s, tape file %d, block %d", e.Err, e.Library, e.Barcode, e.File, e.Block)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Label is what a tape says about itself. Stored in the tape folder.
type Label struct {
	Version      int       `json:"version"`
	Barcode      string    `json:"barcode"`
	Library      string    `json:"library"`
	BlockSize    int       `json:"block_size"`    // bytes per block for tape files written from now on
	Capacity     int64     `json:"capacity"`      // bytes of data the tape holds at most
	EarlyWarning int64     `json:"early_warning"` // bytes at which writers should span to the next tape
	Created      time.Time `json:"created"`
	Labelled     time.Time `json:"labelled"`   // last (re)label
	Generation   int       `json:"generation"` // how many times the tape has been (re)labelled
}

// FileStatus of a tape file.
type FileStatus string

const (
	FileComplete   FileStatus = "complete"   // filemark written
	FileIncomplete FileStatus = "incomplete" // no filemark: a crash or a failed/aborted write
)

// FileInfo describes one tape file.
type FileInfo struct {
	Number    int        `json:"number"` // 1-based
	Status    FileStatus `json:"status"`
	Bytes     int64      `json:"bytes"`
	Blocks    int64      `json:"blocks"`
	BlockSize int        `json:"block_size"`
	CRCTable  uint32     `json:"crc_table"` // CRC-32C over the block checksum table
	Written   time.Time  `json:"written"`
	Tag       string     `json:"tag,omitempty"` // free text the writer attached (e.g. "saveset 12 data part 1")
}

// FileWriter writes one tape file. It ends in exactly one of Finish or Abort.
// Writes are buffered through the drive's transfer-buffer ring and reach the
// media in block-size writes; the first error sticks.
type FileWriter interface {
	io.Writer
	// Written is the number of bytes accepted so far.
	Written() int64
	// EarlyWarning reports whether the tape has reached its early-warning
	// point. It is sticky: once true it stays true for this writer. Writes
	// still succeed past it, up to the hard end (ErrEndOfMedia); a writer
	// that sees it finishes its tape file and continues on the next tape.
	// This is all a physical drive can say (the st driver reports early
	// warning, not a byte count); devices that know exactly how much fits
	// also implement Remainer.
	EarlyWarning() bool
	// Finish flushes, fsyncs data and checksums, then writes the filemark.
	Finish() (FileInfo, error)
	// Abort stops writing and removes the unfinished tape file, so that its
	// space is free at once; a file it cannot remove stays incomplete and is
	// truncated by the next Append. A Finish that fails does the same.
	Abort() error
}

// Remainer is an optional capability of a FileWriter whose device knows
// exactly how many bytes still fit before early warning (a folder, memory,
// object storage; not a physical drive). Spanning writers use it to cut a
// part before a frame that would cross early warning instead of after it.
type Remainer interface {
	// Remaining is the number of bytes that still fit before the tape's
	// early warning point (negative past it).
	Remaining() int64
}

// FileReader reads one tape file, checking every block's CRC-32C as it enters.
// Seek positions in O(1) (block = offset / block size).
type FileReader interface {
	io.ReadSeekCloser
	Info() FileInfo
}

// Device is the drive contract: what a job needs from a loaded tape. Every
// implementation passes the suite in package tapetest.
//
//   - Append and Open may be called on the same device concurrently only for
//     different tape files; at most one FileWriter is open at a time.
//     A device with one head (a physical drive, tapetest.OneHead) answers
//     Open while a FileWriter is open, and Append while a FileReader is,
//     with ErrBusy instead.
//   - Data is durable only after FileWriter.Finish returns nil.
//   - Once Finish returns, the tape file reads back byte for byte.
//   - A write that would pass Capacity fails with ErrEndOfMedia; the tape
//     file is removed by the Finish or Abort that must follow.
//   - A tape file without a filemark (a crash) is incomplete: no reader
//     uses it, and the next Append truncates it.
type Device interface {
	Label() Label
	Files() ([]FileInfo, error)
	// Used is the number of data bytes on the tape (all tape files).
	Used() int64
	Append(tag string) (FileWriter, error)
	Open(n int) (FileReader, error)
	// Close releases the device (its lock, descriptors, connections). An
	// open FileWriter must be finished or aborted first.
	Close() error
}

// DataPather is an optional capability of a device whose tape files are
// plain files on this machine: the stock-tool recipe reads them with cat.
type DataPather interface {
	DataPath(n int) string
}

// DataURLer is an optional capability of a device whose tape files are
// objects in an S3-compatible store: the stock-tool recipe fetches tape
// file n's objects in the order DataURLs gives, signed (AWS signature v4
// for region) with the user's own credentials, and concatenates them.
type DataURLer interface {
	DataURLs(n int) (urls []string, region string, err error)
}
