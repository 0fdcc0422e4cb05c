// Package stream reads and writes a saveset's data stream: a standard pax
// (POSIX tar) archive cut into independent zstd frames, preceded by a
// self-describing label in a zstd skippable frame. Stock tools restore it:
//
//	cat PART1 PART2 ... | zstd -dc | tar --delay-directory-restore --xattrs --xattrs-include='*' -xpf -
//
// # Layout of one part (one tape file)
//
//	+---------------------------------------------------------------+
//	| label: zstd skippable frame                                   |
//	|   5B 2A 4D 18   magic 0x184D2A5B, little-endian               |
//	|   LL LL LL LL   content length, little-endian (≤ MaxLabelSize) |
//	|   "KURA SAVESET LABEL\n" human summary                        |
//	|   "-----BEGIN KURA LABEL JSON-----\n" JSON of Label "\n"       |
//	|   "-----END KURA LABEL JSON xxh3=<16 hex>-----\n"             |
//	|   restore recipe (text)                                       |
//	+---------------------------------------------------------------+
//	| frame 0: zstd frame (magic 28 B5 2F FD), content checksum     |
//	|   content = pax stream bytes [0, FrameSize)                   |
//	+---------------------------------------------------------------+
//	| frame 1: pax stream bytes [FrameSize, 2×FrameSize)            |
//	| ...                                                           |
//	| last frame: the rest, ending with tar's end-of-archive marker |
//	|   (two 512-byte zero blocks) — only in the last part          |
//	+---------------------------------------------------------------+
//
// A saveset that spans tapes is cut between two frames; every part starts
// with its own label (Part, PrevBarcode set). zstd -dc skips skippable
// frames, so the concatenated parts decompress to one pax archive.
//
// Every frame is an independent zstd frame (RFC 8878) with a content
// checksum, so it can be decoded alone: the frame table ([]index.Frame,
// kept in the saveset's index) maps each frame's uncompressed range to
// its part and byte offset, which is how SeekTo reaches an entry without
// decoding what precedes it. A frame's codec is CodecZstd or CodecRaw
// (Raw_Blocks written by compress.AppendRawFrame); both are plain zstd.
//
// # Entries
//
// One index.Entry is one tar entry: a plain ustar header (512 bytes)
// whenever the entry fits one, with pax extended records only for what
// ustar cannot hold (long or non-ASCII names, big ids or sizes, xattrs).
// Entry.Offset is the stream offset of its first header block (the pax
// extended header, when there is one). Paths are Entry.Path (relative,
// slash-separated), directories get a trailing "/"; mode, uid/gid, mtime
// (whole seconds: the index keeps nanoseconds, and forcing pax for them
// cost 1 KiB more per file, 10 % of a 10 KB file), symlink and
// hard link targets, device numbers and xattrs (SCHILY.xattr.NAME) are
// kept. A hard link carries no content (tar size 0). Content digests are
// not in the stream; the index holds them.
//
// A file with holes is stored sparse (WriteSparseEntry): only its data
// extents, in the pax GNU sparse format 1.0 that GNU tar restores with its
// holes (layout in sparse.go). The Reader gives its content with the holes
// read as zeros, its extents (Extents) and skips holes for free (Discard).
//
// # Names (measured with Go's archive/tar and GNU tar 1.34, TestGNUTarNames)
//
// Names of any length travel in pax "path"/"linkpath" records and read back
// exactly with this package. Non-UTF-8 bytes are kept as they are (pax
// wants UTF-8 there, but Go's archive/tar and GNU tar both pass the bytes
// through unchanged and GNU tar restores them). GNU tar restores a path of
// up to PATH_MAX-1 (4095) bytes; a longer path fails there with "File name
// too long" (restore such files with Kura, which reads them fine). No
// single component can exceed NAME_MAX (255) on Linux anyway.
//
// The restore recipe passes --delay-directory-restore to GNU tar: entries
// come in index order, where a directory's children follow its siblings,
// and without that option GNU tar fixes a directory's mtime too early. It
// passes --xattrs --xattrs-include='*' so that extended attributes of every
// namespace (capabilities, ACLs) come back too.
//
// # Write ordering
//
// Frames reach the sink strictly in stream order. The writer never
// rewrites: a crash leaves a prefix of whole frames (possibly a torn last
// frame), which a reader reports as ErrTruncated, never as a clean end,
// because the tar end-of-archive marker is written only by Close.
package stream
