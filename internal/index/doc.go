// Package index reads and writes a saveset's index file: every entry of the
// saveset (path, type, mode, owner, size, times, inode, xattrs, stream offset,
// content digest) in index order, plus the saveset's frame table and an
// opaque Meta blob (the engine's saveset record). The file is cached in the
// Kura home and written as its own tape file after the saveset's data, so it
// is self-describing: a tape scan rebuilds the catalog from it alone.
//
// It is not one database row per file: it is one compact sorted file, about
// 25–30 bytes an entry for typical trees, of which 16 are the digest.
//
// # Order
//
// Entries are in the order of [Compare]: by parent directory, component by
// component, then by base name. The immediate children of a directory are
// contiguous, and so is a directory's subtree (every entry whose parent is D
// or below D). The [Writer] streams entries in that order (it never sorts and
// its memory does not grow with the number of entries, save one short path a
// block) and rejects an entry that is not strictly after the previous one
// with [ErrOrder]. A [Reader] therefore finds a directory's children with a
// binary search on the block directory and decodes one or two blocks.
//
// # File layout (version 1)
//
// All fixed-size integers are little-endian. uv is an unsigned LEB128
// varint, sv a zigzag signed varint (encoding/binary). CRCs are CRC-32C
// (Castagnoli).
//
//	header   (12 + M + 4 bytes)
//	  0   7  magic "KURAIDX"
//	  7   1  version (1)
//	  8   4  M = length of Meta (at most MaxMeta)
//	 12   M  Meta, opaque
//	12+M  4  CRC of bytes [0, 12+M)
//
//	block    (16 + S bytes), repeated; blocks are back to back after the header
//	  0   4  S = stored (zstd) payload length
//	  4   4  R = raw payload length (at most 4 MiB)
//	  8   4  N = entries in the block (1 to 65536)
//	 12   4  CRC of bytes [0, 12) and of the S payload bytes
//	 16   S  zstd frame; decompresses to exactly R bytes
//
//	raw block payload
//	  17 × uv   length of each column, in column order
//	  columns   concatenated; each is consumed exactly by the N entries
//
//	trailer  (T bytes), at the offset the footer names
//	  block directory, one record a block:
//	    uv  block length (16 + S); the first block starts right after the header
//	    uv  N
//	    uv  bytes shared with the previous block's first path
//	    uv  length of the rest, then the rest of this block's first path
//	  frame table, one record a frame (see [Frame]):
//	    sv  Offset − (previous Offset + previous Size)
//	    uv  Size
//	    uv  CSize
//	    sv  Part − previous Part
//	    sv  PartOffset − (previous PartOffset + previous CSize)
//	  final meta (optional, from Writer.SetMeta; replaces the header's):
//	    uv  length, then the bytes
//
//	footer   (48 bytes, the last of the file)
//	  0   8  trailer offset
//	  8   8  T = trailer length
//	 16   8  entries in the file
//	 24   4  blocks
//	 28   4  frames
//	 32   4  CRC of the trailer
//	 36   4  CRC of footer bytes [0, 36)
//	 40   7  magic "KURAIDX"
//	 47   1  version (1)
//
// # Columns of a block
//
// Each entry is coded against the previous entry of the same block (the
// "previous" values are zero for the first entry), so every block decodes on
// its own. Fields of the same kind sit together, which is what makes the zstd
// pass effective. A column marked "if bit" holds a value only for entries
// whose tag has that bit.
//
//	 0 tag      uv  bits 0–2 Type; 3 digest; 4 mode changed; 5 uid changed;
//	                6 gid changed; 7 flags; 8 link; 9 xattrs; 10 dev changed;
//	                11 rdev; 12 source. Other bits are invalid in version 1.
//	 1 path     uv shared prefix with the previous path, uv suffix length
//	 2 pathtext suffix bytes
//	 3 mode     uv  if bit 4 (else the previous Mode)
//	 4 owner    uv UID if bit 5, uv GID if bit 6 (else the previous ones)
//	 5 size     uv
//	 6 mtime    sv  MTime − previous MTime
//	 7 ctime    sv  CTime − MTime
//	 8 inode    sv  Inode − previous Inode (wrapping)
//	 9 dev      uv  if bit 10 (else the previous Dev)
//	10 rdev     uv  if bit 11 (else 0)
//	11 offset   sv  Offset − (previous Offset + 512 + Size rounded up to 512):
//	                zero for consecutive tar members without extended headers
//	12 source   uv  if bit 12 (else 0)
//	13 digest   16 bytes if bit 3 (else all zero)
//	14 link     uv length, bytes; if bit 8 (else "")
//	15 xattrs   if bit 9: uv count (≥ 1), then per pair in increasing key
//	            order uv key length, key, uv value length, value
//	16 flags    1 byte if bit 7 (else 0): FlagUnchanged, FlagChanged,
//	            FlagSparse, FlagPart (Entry); unknown bits are kept and ignored
//
// # Ordering and crash safety
//
// The header is written first, then blocks as they fill, then the trailer and
// last the footer. A file cut anywhere before its footer is complete has no
// valid footer and opens with [ErrTruncated]; nothing that reads an index
// trusts a file without a footer. The caller makes the file durable (fsync,
// rename) after [Writer.Close].
//
// # Distrust
//
// The Reader checks every CRC before it uses the bytes they cover, bounds
// every length and count by the bytes that could hold it before allocating,
// checks that blocks tile the file, that paths are strictly in index order
// inside and across blocks, and that the sums in the footer agree with the
// blocks. Errors are [ErrNotIndex], [ErrVersion], [ErrTruncated] and
// [ErrCorrupt], to be told apart with errors.Is.
//
// A bad entry is not a corrupt file: an entry of a sound block whose path
// breaks the Entry rules (empty, absolute, a NUL byte, an empty, "." or
// ".." component, more than MaxPath bytes, bounded only by the block's
// text) or whose link is longer than MaxPath is skipped by iterators,
// Lookup and List, and reported by [Iter.Invalid] as an [InvalidEntry];
// every other entry reads.
package index
