// Package tape is a virtual tape cartridge on disk and the drive contract
// (Device, FileWriter, FileReader) that every kind of media implements; the
// conformance suite is package tapetest.
//
// # Layout
//
// A tape is a folder, named by its barcode by convention:
//
//	A00001L/
//	├── label          the label (text, replaced atomically)
//	├── label.copy     its second copy, the same bytes (replaced atomically)
//	├── lock           flock(2) target: held by the one writer
//	├── 000001.data    tape file 1: exactly the bytes written
//	├── 000001.crc     its checksum file: header + one CRC-32C per block
//	├── 000001.mark    its filemark: present only once the file is complete
//	├── 000002.data
//	└── ...
//
// The data file holds no headers, so `cat 000001.data | zstd -dc | tar x`
// works. Block k of a tape file starts at byte k·BlockSize of its data file
// and its CRC at byte 16+4k of its checksum file: positioning is O(1).
//
// Label (all of it at most 16 KiB):
//
//	KURA-TAPE-LABEL 1\n
//	{"version":1,"barcode":…,"library":…,"block_size":…,"capacity":…,
//	 "early_warning":…,"created":…,"labelled":…,"generation":…}\n
//	crc32c 89abcdef\n            CRC-32C of the JSON line, lower-case hex
//
// label.copy holds the same bytes. Readers use the label file when it is
// good and the copy when it is not, so one damaged copy loses nothing; a
// damaged, missing or disagreeing copy is reported (Tape.LabelDamage,
// CheckLabel, wrapping ErrBadLabel) and rewritten by the next Append or
// Relabel. Tapes labelled before the copy existed have the label file only:
// they read as before (no damage reported), and get their copy with the
// next append. The label format itself (version 1) is unchanged, so older
// readers read newer tapes too (they ignore the copy). With both copies
// damaged, OpenWithLabel reads the tape under a stand-in label (a library
// gives the one it made the tape with): reading needs little of it, since
// every tape file records its own block size and length; nothing is
// appended until Relabel.
//
// Checksum file (integers little endian):
//
//	off  size  field
//	0    4     magic "KCRC"
//	4    2     version = 1
//	6    2     reserved, 0
//	8    4     block size of this tape file (512 .. 64 MiB)
//	12   4     CRC-32C of bytes 0..11
//	16   4·n   CRC-32C of block i at 16+4i (the last block may be short)
//
// Filemark (integers little endian):
//
//	off  size  field
//	0    4     magic "KFMK"
//	4    2     version = 1
//	6    2     tag length t (≤ 1024)
//	8    4     tape file number (1-based)
//	12   4     block size
//	16   8     data bytes
//	24   8     blocks = ceil(bytes / block size)
//	32   4     CRC-32C over the checksum table (bytes 16.. of the .crc file)
//	36   4     reserved, 0
//	40   8     written, Unix nanoseconds
//	48   t     tag, UTF-8
//	48+t 4     CRC-32C of bytes 0 .. 47+t
//
// # Write ordering
//
//   - The label is replaced atomically: label.tmp, fsync, rename, fsync of
//     the folder; then its copy the same way (label.copy.tmp ...). A crash
//     in between leaves a good label and a stale or missing copy, which is
//     reported and rewritten, never used in preference to the label.
//   - Append takes the lock (flock, non-blocking: a second writer in any
//     process gets ErrBusy), truncates an incomplete last tape file (data
//     without a filemark), then creates NNNNNN.data and NNNNNN.crc.
//   - Blocks reach the data file in one write each; their CRCs follow into
//     the checksum file in batches.
//   - Finish fsyncs the data file and the checksum file, then writes the
//     filemark (NNNNNN.mark.tmp, fsync, rename, fsync of the folder). A tape
//     file is complete exactly when its filemark exists, so a crash at any
//     point leaves a prefix of complete tape files and at most one
//     incomplete last one, which is never read and is truncated by the next
//     Append.
//   - Erasing (Relabel, truncation) removes filemark, checksums, data in
//     that order, last tape file first; the new label is written after.
//
// # Reading
//
// Every block's CRC is checked as it enters: a mismatch is a *CorruptError
// wrapping ErrCorrupt that names library, barcode, tape file and block; a
// data file shorter than its filemark says gives ErrTruncated; a tape file
// without filemark ErrIncomplete; a missing label (both copies) ErrBlank
// and a label whose both copies are damaged ErrBadLabel. Readers use the block size each tape file records.
package tape
