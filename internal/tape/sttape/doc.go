// Package sttape is a tape.Device on a physical tape drive through the
// Linux SCSI tape (st) driver: the same tape files, labels, block CRCs and
// filemark records as the folder tape (package tape, doc.go), laid out on a
// medium that is written only at its end.
//
// # Layers
//
//	Device (tape.Device)   labels, tape files, trailers, early warning
//	  │
//	Drive (interface)      read(2), write(2), MTIOCTOP, MTIOCGET, MTIOCPOS
//	  ├── OpenDrive        /dev/nstN through golang.org/x/sys/unix
//	  └── Emulation        the st driver's documented semantics on Media in memory
//
// Everything above Drive is tested on the Emulation; no test needs a drive.
//
// # Layout
//
// Kura tape file n is two st files: its data (st file 2n-1) and its trailer
// (st file 2n). st file 0 is the label. "FM" is a filemark.
//
//	st file 0     [label][label copy] FM              2 blocks of MetaBlockSize
//	st file 1     [data][data]…[data, zero-padded] FM  tape file 1, its block size
//	st file 2     [trailer]…  FM                      tape file 1's trailer, MetaBlockSize
//	st file 3     [data]… FM                          tape file 2
//	st file 4     [trailer]… FM
//	…             end of data (EOD)
//
// A label block holds the label record of package tape (text, at most
// 16 KiB, CRC-32C) padded with zeros; the two blocks hold the same bytes,
// and a reader uses the first good one, as the folder tape does with label
// and label.copy.
//
// A data st file holds exactly the bytes written, in blocks of the tape
// file's block size, the last one padded with zeros (a fixed-block tape
// cannot write a short block). So stock tools read it back:
//
//	mt -f /dev/nst0 rewind; mt -f /dev/nst0 fsf 2n-1
//	dd if=/dev/nst0 bs=BLOCK | head -c BYTES | zstd -dc | tar -xf -
//
// A trailer (integers little endian), in blocks of MetaBlockSize, zero-padded:
//
//	off    size  field
//	0      4     magic "KSTT"
//	4      2     version = 1
//	6      2     reserved, 0
//	8      4     filemark record length m (≤ tape.MaxFilemarkBytes)
//	12     4     reserved, 0
//	16     8     checksum table length c = 16 + 4·blocks
//	24     4     CRC-32C of bytes 0..23
//	28     m     the filemark record of package tape (KFMK…): number, block
//	             size, bytes, blocks, CRC of the table, written, tag
//	28+m   c     the checksum table of package tape (KCRC header, then one
//	             CRC-32C per data block, of its bytes without padding)
//
// The label and trailers have a block size of their own (MetaBlockSize,
// 32 KiB) so that they are read before any tape file's block size is
// known; the drive is switched (MTSETBLK) between them and the data.
//
// # Why a trailer per tape file, not a directory at the end
//
// A tape cannot be rewritten in the middle: writing anywhere discards
// everything after it. A directory at the end would have to be rewritten
// by every append, over the previous one, and a crash in between would
// leave none. A trailer is written once, after its data, and never touched
// again; finding the tape files costs one space-over-filemark and one small
// read per tape file (Open does it once: no data block is read), and
// locating tape file n spaces over filemarks (MTFSF/MTBSF), which drives do
// at high speed.
//
// # Write ordering
//
//   - Format rewinds and writes the label, its copy and a filemark: writing
//     at the beginning discards the whole tape.
//   - Append spaces to the beginning of the data st file after the last
//     complete trailer and writes there, which discards an incomplete tape
//     file after it.
//   - Finish writes the last block, a filemark, the trailer and a filemark.
//     Writing a filemark flushes the drive's buffer, so a tape file is
//     complete exactly when its trailer and the filemark after it are on
//     the tape. A crash before leaves data without a trailer (with or
//     without a filemark: the driver writes one on close), or a trailer
//     without the filemark after it, which Open lists as incomplete and
//     the next Append writes over.
//   - Abort (and a failed Finish) writes a filemark to end the data, spaces
//     back to where the tape file began and writes a filemark there: the
//     tape ends with an empty st file, read as the end of the tape files.
//
// # Early warning and the end of the tape
//
// The st driver does not say how much room is left; it reports early
// warning (Documentation/scsi/st.rst): the write that reaches it completes
// (and MTIOCGET shows GMT_EOT); the next write fails with ENOSPC, the one
// after it proceeds, and so on alternately, so that trailers still fit;
// at the physical end every write fails. The device retries a write that
// failed with ENOSPC once: its success, or GMT_EOT after any write, makes
// FileWriter.EarlyWarning true (sticky); a second ENOSPC is
// tape.ErrEndOfMedia. The label's Capacity and EarlyWarning (nominal
// figures an administrator gives) are enforced too, as on any device. The
// writers do not implement tape.Remainer: a drive does not know.
//
// # One head
//
// A drive reads where it writes. While a FileWriter is open, Open fails
// with tape.ErrBusy (moving the head would end the tape file being
// written); while a FileReader is open, so does Append. Readers share the
// head, each spacing it to its block (MTFSR/MTBSR within its data) when
// another moved it.
//
// # Drive settings
//
// Hardware compression is turned off (MTCOMPRESSION 0, for the loaded
// tape, without root) unless Options.Compression: Kura compresses before
// the drive. MTSETDRVBUFFER would change the driver's default for every
// user of the device and needs CAP_SYS_ADMIN, so it is left to the
// administrator (`mt -f /dev/nst0 stoptions` / `defcompression`).
// The block size is set with MTSETBLK for every st file read or written.
//
// # Tested against
//
// There is no tape drive on the project's machines: everything here is
// tested against the Emulation only, which follows st.rst; the ioctl
// numbers and structure layouts are checked against linux/mtio.h in the
// tests. `kura tape selftest /dev/nst0` is the check to run on a real drive.
package sttape
