// Package library is Kura's virtual tape library (VTL): a folder of slots,
// virtual drives, barcoded virtual tapes and a mail slot, after the NetVault
// VTL that Kura's design started from.
//
// # Layout
//
//	DIR/
//	├── library.json      configuration written by Create (name, sizes, defaults); never rewritten
//	├── inventory.json    where every tape is (home slot, drive, mail slot), full marks,
//	│                     slot count and per-drive settings; replaced atomically
//	├── .lock             library-wide flock: held for every inventory read-modify-write
//	├── drives/
//	│   ├── 1.lock        flock held by whoever has acquired drive 1 (any process)
//	│   └── 2.lock
//	└── tapes/
//	    ├── KUR001/       one folder per tape, named by its barcode (see package tape)
//	    └── KUR002/
//
// # Barcodes
//
// A barcode is the library's BarcodePrefix (default "KUR", 1 to 8 characters
// A-Z and 0-9) followed by a decimal sequence number zero-padded to at least
// three digits: KUR001, KUR002, … KUR999, KUR1000. Numbers only grow: an
// erased or removed tape keeps its barcode, and a new tape never reuses one.
//
// # Slots, drives and the mail slot
//
// Every tape in the library has a home slot. Loading a tape into a drive
// moves it out of its slot, which stays reserved for it; unloading puts it
// back. Exporting a tape moves it to a mail slot and gives up its home slot:
// the tape is offline (state "exported") until imported into a free slot.
// Moving a tape changes inventory.json only, never the tape's data.
//
// # Changer and media
//
// *Library is the Changer (changer.go): inventory, drive leases, import
// and export, handing out tape.Device values only. Its cartridges live on
// Media (media.go): FolderMedia, the tapes/ folder above, unless the
// library was created or opened with other media (CreateWithMedia,
// OpenWithMedia). Erasing, reclaiming and reporting label damage are
// optional capabilities of the devices (Relabeler, Reclaimer,
// LabelReporter), found by interface checks.
//
// # Invariants
//
//   - Every inventory change is a read-modify-write under the library lock
//     (DIR/.lock) ending in an atomic replace of inventory.json (temporary
//     file, fsync, rename), so concurrent processes never lose an update and
//     a crash leaves either the old or the new inventory.
//   - A drive is used by one holder at a time, across processes: Acquire
//     takes the flock on DIR/drives/N.lock and Release drops it. Lock order is
//     drive lock, then library lock; the library lock is never held while
//     waiting for a drive.
//   - library.json is written last by Create: a folder without it is not a
//     library, so a crash during Create never leaves a half library that
//     Open accepts.
//   - A tape is picked for writing only if it is in the library (not
//     exported), not marked full and below its early-warning point.
package library
