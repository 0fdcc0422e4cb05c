// Package catalogbackup reads and writes a catalog backup: one tape file
// holding a consistent snapshot of Kura's catalog (the SQLite file
// catalog.db), labelled so that it can be found and checked from the media
// alone, when the catalog itself is lost.
//
// # Layout of a catalog backup (one tape file)
//
//	+---------------------------------------------------------------+
//	| label: zstd skippable frame                                   |
//	|   5B 2A 4D 18   magic 0x184D2A5B, little-endian (Kura's label |
//	|                 frame magic, shared with saveset labels)      |
//	|   LL LL LL LL   content length, little-endian (≤ MaxLabelSize) |
//	|   "KURA CATALOG BACKUP\n" human summary                       |
//	|   "-----BEGIN KURA LABEL JSON-----\n" JSON of Label "\n"       |
//	|   "-----END KURA LABEL JSON xxh3=<16 hex>-----\n"             |
//	|   how to restore it (text)                                    |
//	+---------------------------------------------------------------+
//	| zstd frame(s) (magic 28 B5 2F FD), content checksum           |
//	|   content = the catalog database, exactly Label.Size bytes    |
//	|   whose SHA-256 is Label.SHA256                               |
//	+---------------------------------------------------------------+
//
// zstd skips skippable frames, so stock tools get the database back:
//
//	zstd -dc FILE > catalog.db && sha256sum catalog.db
//
// The label frame has the framing of a saveset label (package stream):
// same magic, same JSON block and XXH3-64 line; the first line of the text
// ("KURA CATALOG BACKUP" against "KURA SAVESET LABEL") and the JSON's
// format ("kura-catalog") tell the two apart, so a tape scan reads the first
// frame of a tape file once and knows what it holds.
//
// # Checks where bytes enter
//
// A Reader checks the label's XXH3, every zstd frame's content checksum, and
// at the end the size and SHA-256 of the database against the label. The
// failures are told apart with errors.Is: ErrNotBackup (some other tape
// file), ErrLabelDamaged, ErrUnsupported (a newer format version),
// ErrTruncated (the file ends early) and ErrCorrupt (checksum or size
// mismatch). Errors of the underlying reader (a tape block whose CRC does
// not match) are passed on wrapped, not hidden behind ErrCorrupt.
//
// # Versions
//
// Format "kura-catalog", version 1. The version only moves forward; a reader
// refuses a newer version with ErrUnsupported.
package catalogbackup
