package library

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"

	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/tape"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrInvalidConfig: a configuration or drive setting is out of range.
	ErrInvalidConfig = errors.New("invalid library configuration")
	// ErrExists: Create found a library already in the folder.
	ErrExists = errors.New("library already exists")
	// ErrNotEmpty: Create was given a folder that holds other files.
	ErrNotEmpty = errors.New("folder not empty")
	// ErrNotLibrary: the folder holds no library (no library.json).
	ErrNotLibrary = errors.New("not a Kura library")
	// ErrBadInventory: library.json or inventory.json is damaged or
	// inconsistent.
	ErrBadInventory = errors.New("damaged library inventory")
	// ErrNoDrive: no drive with that number in the library. Messages read
	// "no drive 9 in library default (it has drives 1 to 2)".
	ErrNoDrive = errors.New("no such drive")
	// ErrUnknownTape: no tape with that barcode in the library.
	ErrUnknownTape = errors.New("no such tape")
	// ErrExported: the tape is offline in a mail slot. Messages read
	// "tape KUR003 is exported; import it".
	ErrExported = errors.New("exported")
	// ErrNotExported: Import of a tape that is not in a mail slot.
	ErrNotExported = errors.New("tape is not in a mail slot")
	// ErrNoFreeSlot: every storage slot is taken.
	ErrNoFreeSlot = errors.New("no free slot")
	// ErrMailSlotsFull: every mail slot is taken.
	ErrMailSlotsFull = errors.New("mail slots full")
	// ErrNoTape: no tape can be written (all full, exported or excluded).
	ErrNoTape = errors.New("no writable tape")
	// ErrDriveBusy: another holder (maybe another process) has the drive.
	ErrDriveBusy = errors.New("drive in use")
	// ErrReleased: the Drive handle was already released.
	ErrReleased = errors.New("drive handle released")
)

// NoTapeError is an ErrNoTape of library Library: none of its tapes can
// be written (Pool: none that the pool accepts).
type NoTapeError struct {
	Library string
	Pool    bool
}

func (e *NoTapeError) Error() string {
	if e.Pool {
		return fmt.Sprintf("%v for this pool in library %s", ErrNoTape, e.Library)
	}
	return fmt.Sprintf("%v in library %s", ErrNoTape, e.Library)
}

func (e *NoTapeError) Unwrap() error { return ErrNoTape }

const (
	configFile    = "library.json"
	inventoryFile = "inventory.json"
	lockFile      = ".lock"
	tapesDir      = "tapes"
	drivesDir     = "drives"

	inventoryVersion = 1
	configVersion    = 1
)

// Library is an open virtual tape library. Its methods are safe for
// concurrent use by goroutines and by other processes opening the same
// folder: all shared state lives in the folder and changes under the
// library lock.
type Library struct {
	dir   string
	cfg   Config // as created; Slots is the value at creation
	now   func() time.Time
	media Media // where the tapes are kept: DIR/tapes for a folder library
}

// storedConfig is library.json.
type storedConfig struct {
	Version int `json:"version"`
	Config
	Created time.Time `json:"created"`
}

// inventory is inventory.json.
type inventory struct {
	Version int `json:"version"`
	// Slots is the current number of storage slots (Config.Slots at
	// creation, grown by AddTapes).
	Slots int `json:"slots"`
	// NextBarcode is the sequence number of the next new tape.
	NextBarcode int `json:"next_barcode"`
	// Tapes maps barcode to where the tape is.
	Tapes map[string]*tapeEntry `json:"tapes"`
	// Drives holds per-drive settings; Drives[i] is drive i+1.
	Drives []driveEntry `json:"drives"`
}

// tapeEntry is where a tape is. Exactly one of Home and MailSlot is set;
// Drive is set only together with Home.
type tapeEntry struct {
	Home     int  `json:"home,omitempty"`      // home slot, 1-based; 0 when exported
	Drive    int  `json:"drive,omitempty"`     // drive holding the tape, 1-based; 0 = in its slot
	MailSlot int  `json:"mail_slot,omitempty"` // mail slot, 1-based, when exported
	Full     bool `json:"full,omitempty"`      // marked full by a spanning writer
}

type driveEntry struct {
	BlockSize  int `json:"block_size"`
	BufferSize int `json:"buffer_size"`
}

// Create makes a new library in cfg.Dir, which must be missing or empty
// (ErrExists if it holds a library, ErrNotEmpty if anything else): the drive
// lock files, one blank labelled tape in each slot, the inventory, and
// finally library.json.
func Create(cfg Config) (*Library, error) { return CreateWithMedia(cfg, nil) }

// CreateWithMedia is Create with the tapes kept on media (nil: the folder
// DIR/tapes, as Create does). The library folder still holds the
// configuration, the inventory and the drive locks.
func CreateWithMedia(cfg Config, media Media) (*Library, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("library folder %s: %w", cfg.Dir, err)
	}
	cfg.Dir = dir
	if _, err := os.Stat(filepath.Join(dir, configFile)); err == nil {
		return nil, fmt.Errorf("creating library in %s: %w", dir, ErrExists)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("creating library in %s: %w (a library needs an empty or new folder; remove what a failed Create left there)", dir, ErrNotEmpty)
	}
	if media == nil {
		if media, err = mediaFor(cfg.Media); err != nil {
			return nil, err
		}
	}
	// Media elsewhere (a bucket) are reached before anything is made: bad
	// credentials or a missing bucket leave no half-made library behind.
	if c, ok := media.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("creating library %s on %s: %w", cfg.Name, cfg.Media, err)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, tapesDir), filepath.Join(dir, drivesDir)} {
		if err := private.MkdirAll(d); err != nil {
			return nil, fmt.Errorf("creating library %s: %w", cfg.Name, err)
		}
	}
	l := &Library{dir: dir, cfg: cfg, now: time.Now, media: media}
	if l.media == nil {
		l.media = FolderMedia(filepath.Join(dir, tapesDir))
	}

	lk := flock.New(filepath.Join(dir, lockFile))
	if err := lk.Lock(); err != nil {
		return nil, fmt.Errorf("locking library %s: %w", cfg.Name, err)
	}
	defer lk.Close()
	if _, err := os.Stat(filepath.Join(dir, configFile)); err == nil {
		return nil, fmt.Errorf("creating library in %s: %w", dir, ErrExists)
	}

	for n := 1; n <= cfg.Drives; n++ {
		f, err := private.OpenFile(l.driveLockPath(n), os.O_CREATE|os.O_RDWR)
		if err != nil {
			return nil, fmt.Errorf("creating drive %d of library %s: %w", n, cfg.Name, err)
		}
		f.Close()
	}
	inv := &inventory{
		Version:     inventoryVersion,
		Slots:       cfg.Slots,
		NextBarcode: 1,
		Tapes:       map[string]*tapeEntry{},
	}
	for range cfg.Drives {
		inv.Drives = append(inv.Drives, driveEntry{BlockSize: cfg.BlockSize, BufferSize: cfg.BufferSize})
	}
	adopted, err := l.adoptTapes(inv)
	if err != nil {
		return nil, err
	}
	if _, err := l.addTapes(inv, max(0, cfg.Slots-adopted)); err != nil {
		return nil, err
	}
	if err := l.writeInventory(inv); err != nil {
		return nil, err
	}
	if err := writeConfig(dir, cfg, l.now()); err != nil {
		return nil, err
	}
	return l, nil
}

// writeConfig writes library.json, the last step of creating a library.
func writeConfig(dir string, cfg Config, now time.Time) error {
	sc := storedConfig{Version: configVersion, Config: cfg, Created: now.UTC()}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(dir, configFile), append(b, '\n'), private.FileMode); err != nil {
		return fmt.Errorf("writing library %s configuration: %w", cfg.Name, err)
	}
	return nil
}

// Open opens the library in dir.
func Open(dir string) (*Library, error) { return OpenWithMedia(dir, nil) }

// OpenWithMedia opens the library in dir whose tapes are kept on media
// (nil: the folder DIR/tapes, as Open does).
func OpenWithMedia(dir string, media Media) (*Library, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	dir = cfg.Dir
	if media == nil {
		if media, err = mediaFor(cfg.Media); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	l := &Library{dir: dir, cfg: cfg, now: time.Now, media: media}
	if l.media == nil {
		l.media = FolderMedia(filepath.Join(dir, tapesDir))
	}
	if _, err := l.readInventory(); err != nil {
		return nil, err
	}
	return l, nil
}

// readConfig reads and checks DIR/library.json; Dir is the absolute dir.
func readConfig(dir string) (Config, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Config{}, fmt.Errorf("library folder %s: %w", dir, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("%s: %w (no %s)", dir, ErrNotLibrary, configFile)
	}
	if err != nil {
		return Config{}, fmt.Errorf("opening library %s: %w", dir, err)
	}
	var sc storedConfig
	if err := json.Unmarshal(b, &sc); err != nil {
		return Config{}, fmt.Errorf("%s: %w: %s: %v", dir, ErrBadInventory, configFile, err)
	}
	if sc.Version != configVersion {
		return Config{}, fmt.Errorf("%s: %w: %s version %d (want %d)", dir, ErrBadInventory, configFile, sc.Version, configVersion)
	}
	cfg := sc.Config
	cfg.Dir = dir
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w: %s: %w", dir, ErrBadInventory, configFile, err)
	}
	return cfg, nil
}

// Config returns the library's configuration; Slots is the current slot
// count, which AddTapes may have grown since Create.
func (l *Library) Config() Config {
	c := l.cfg
	if inv, err := l.readInventory(); err == nil {
		c.Slots = inv.Slots
	}
	return c
}

// Remove deletes the library folder and every tape in it. It fails with
// ErrDriveBusy while any drive is acquired. Checking the catalog for
// savesets on the library's tapes is the caller's job.
func (l *Library) Remove() error {
	if _, err := os.Stat(filepath.Join(l.dir, configFile)); err != nil {
		return fmt.Errorf("removing library %s: %w", l.cfg.Name, ErrNotLibrary)
	}
	lk := flock.New(filepath.Join(l.dir, lockFile))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("locking library %s: %w", l.cfg.Name, err)
	}
	defer lk.Close()
	for n := 1; n <= l.cfg.Drives; n++ {
		if l.driveBusy(n) {
			return fmt.Errorf("removing library %s: drive %d: %w", l.cfg.Name, n, ErrDriveBusy)
		}
	}
	// library.json goes first, so a crash half way leaves no library
	// that Open would accept.
	if err := os.Remove(filepath.Join(l.dir, configFile)); err != nil {
		return fmt.Errorf("removing library %s: %w", l.cfg.Name, err)
	}
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("removing library %s: %w", l.cfg.Name, err)
	}
	return nil
}

// driveOptions are the tape options of a drive with settings set.
func (l *Library) driveOptions(set driveEntry) tape.Options {
	return tape.Options{BlockSize: set.BlockSize, BufferSize: set.BufferSize, Clock: l.now}
}

// defaultOptions are the tape options of the library's default drive
// settings.
func (l *Library) defaultOptions() tape.Options {
	return l.driveOptions(driveEntry{BlockSize: l.cfg.BlockSize, BufferSize: l.cfg.BufferSize})
}

func (l *Library) driveLockPath(n int) string {
	return filepath.Join(l.dir, drivesDir, strconv.Itoa(n)+".lock")
}

// driveBusy reports whether someone holds drive n's lock.
func (l *Library) driveBusy(n int) bool { return lockBusy(l.driveLockPath(n)) }

// lockBusy reports whether someone holds the flock on path.
func lockBusy(path string) bool {
	lk := flock.New(path)
	ok, err := lk.TryLock()
	if err != nil {
		return true
	}
	if ok {
		lk.Close()
	}
	return !ok
}

// update is a read-modify-write of the inventory under the library lock.
// If fn fails, nothing is written.
func (l *Library) update(fn func(inv *inventory) error) error {
	lk := flock.New(filepath.Join(l.dir, lockFile))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("locking library %s: %w", l.cfg.Name, err)
	}
	defer lk.Close()
	inv, err := l.readInventory()
	if err != nil {
		return err
	}
	if err := fn(inv); err != nil {
		return err
	}
	return l.writeInventory(inv)
}

// readInventory reads and checks inventory.json. It needs no lock: the file
// is only ever replaced atomically.
func (l *Library) readInventory() (*inventory, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, inventoryFile))
	if err != nil {
		return nil, fmt.Errorf("library %s: %w: %w", l.cfg.Name, ErrBadInventory, err)
	}
	var inv inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return nil, fmt.Errorf("library %s: %w: %v", l.cfg.Name, ErrBadInventory, err)
	}
	if err := inv.check(l.cfg); err != nil {
		return nil, fmt.Errorf("library %s: %w: %s", l.cfg.Name, ErrBadInventory, err)
	}
	return &inv, nil
}

func (l *Library) writeInventory(inv *inventory) error {
	b, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		return err
	}
	err = renameio.WriteFile(filepath.Join(l.dir, inventoryFile), append(b, '\n'), private.FileMode)
	if errors.Is(err, syscall.ENOSPC) {
		// A writer that died may have left an unfinished tape file filling
		// the disk: take its space back and try once more.
		if freed, _ := l.Reclaim(); freed > 0 {
			err = renameio.WriteFile(filepath.Join(l.dir, inventoryFile), append(b, '\n'), private.FileMode)
		}
	}
	if err != nil {
		return fmt.Errorf("writing library %s inventory: %w", l.cfg.Name, err)
	}
	return nil
}

// Reclaim removes the unfinished last tape file that a writer which died
// left on any tape of the library (Reclaimer: a folder tape can), and
// returns the bytes freed. Tapes being written are left alone.
func (l *Library) Reclaim() (int64, error) {
	inv, err := l.readInventory()
	if err != nil {
		return 0, err
	}
	var freed int64
	var firstErr error
	for bc := range inv.Tapes {
		t, err := l.media.Open(bc, tape.Label{}, l.defaultOptions())
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		r, ok := t.(Reclaimer)
		if !ok {
			t.Close()
			continue
		}
		n, err := r.Reclaim()
		t.Close()
		freed += n
		if err != nil && !errors.Is(err, tape.ErrBusy) {
			firstErr = cmp.Or(firstErr, err)
		}
	}
	return freed, firstErr
}

// check verifies the inventory's invariants: every tape in exactly one
// place, no two tapes in one slot, drive or mail slot, numbers in range.
func (inv *inventory) check(cfg Config) error {
	if inv.Version != inventoryVersion {
		return fmt.Errorf("version %d (want %d)", inv.Version, inventoryVersion)
	}
	if inv.Slots < 1 || inv.Slots > MaxSlots {
		return fmt.Errorf("slot count %d", inv.Slots)
	}
	if len(inv.Drives) != cfg.Drives {
		return fmt.Errorf("%d drive entries for %d drives", len(inv.Drives), cfg.Drives)
	}
	for i, d := range inv.Drives {
		if err := validateDrive(d.BlockSize, d.BufferSize); err != nil {
			return fmt.Errorf("drive %d: %v", i+1, err)
		}
	}
	if inv.Tapes == nil {
		inv.Tapes = map[string]*tapeEntry{}
	}
	slots, drives, mail := map[int]string{}, map[int]string{}, map[int]string{}
	claim := func(m map[int]string, what string, n, limit int, bc string) error {
		if n < 1 || n > limit {
			return fmt.Errorf("tape %s: %s %d out of range 1..%d", bc, what, n, limit)
		}
		if other, ok := m[n]; ok {
			return fmt.Errorf("tapes %s and %s both in %s %d", other, bc, what, n)
		}
		m[n] = bc
		return nil
	}
	for _, bc := range sortedBarcodes(inv) {
		e := inv.Tapes[bc]
		if e == nil {
			return fmt.Errorf("tape %s: empty entry", bc)
		}
		switch {
		case e.Home > 0 && e.MailSlot == 0:
			if err := claim(slots, "slot", e.Home, inv.Slots, bc); err != nil {
				return err
			}
			if e.Drive != 0 {
				if err := claim(drives, "drive", e.Drive, cfg.Drives, bc); err != nil {
					return err
				}
			}
		case e.Home == 0 && e.MailSlot > 0 && e.Drive == 0:
			if err := claim(mail, "mail slot", e.MailSlot, cfg.MailSlots, bc); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tape %s: inconsistent place (slot %d, drive %d, mail slot %d)", bc, e.Home, e.Drive, e.MailSlot)
		}
	}
	return nil
}

func sortedBarcodes(inv *inventory) []string {
	bcs := make([]string, 0, len(inv.Tapes))
	for bc := range inv.Tapes {
		bcs = append(bcs, bc)
	}
	sort.Strings(bcs)
	return bcs
}

// freeSlot is the lowest slot no tape calls home, or 0.
func (inv *inventory) freeSlot() int {
	used := map[int]bool{}
	for _, e := range inv.Tapes {
		used[e.Home] = true
	}
	for s := 1; s <= inv.Slots; s++ {
		if !used[s] {
			return s
		}
	}
	return 0
}

// freeMailSlot is the lowest empty mail slot, or 0.
func (inv *inventory) freeMailSlot(n int) int {
	used := map[int]bool{}
	for _, e := range inv.Tapes {
		used[e.MailSlot] = true
	}
	for s := 1; s <= n; s++ {
		if !used[s] {
			return s
		}
	}
	return 0
}

// inDrive is the barcode of the tape in drive n, or "".
func (inv *inventory) inDrive(n int) string {
	for bc, e := range inv.Tapes {
		if e.Drive == n {
			return bc
		}
	}
	return ""
}

// adoptTapes puts into the slots of a library being created the tapes its
// media already hold under this library's name and barcode prefix —
// numbered from 001 up to the first number with nothing stored — so that a
// library created again over the same bucket (a lost home) finds its tapes
// and a tape scan rebuilds their catalog. A folder library starts empty and
// adopts nothing. It returns how many it adopted.
func (l *Library) adoptTapes(inv *inventory) (int, error) {
	n := 0
	for {
		bc := l.barcode(inv.NextBarcode)
		exists, err := l.media.Exists(bc)
		if err != nil {
			return n, fmt.Errorf("creating library %s: %w", l.cfg.Name, err)
		}
		if !exists {
			return n, nil
		}
		lab, ok := labelOf(l.media, bc)
		if !ok || lab.Library != l.cfg.Name {
			return n, nil // not ours: addTapes skips the number
		}
		slot := inv.freeSlot()
		if slot == 0 {
			if inv.Slots >= MaxSlots {
				return n, nil
			}
			inv.Slots++
			slot = inv.Slots
		}
		inv.Tapes[bc] = &tapeEntry{Home: slot}
		inv.NextBarcode++
		n++
	}
}

// barcode formats sequence number n with the library's prefix.
func (l *Library) barcode(n int) string { return fmt.Sprintf("%s%03d", l.cfg.BarcodePrefix, n) }

// addTapes labels n new tapes into free slots, growing the slot count when
// none is free. It records in inv every tape it made, even when it fails
// part way, so the caller should write inv in either case.
func (l *Library) addTapes(inv *inventory, n int) ([]string, error) {
	var made []string
	for range n {
		slot := inv.freeSlot()
		if slot == 0 {
			if inv.Slots >= MaxSlots {
				return made, fmt.Errorf("adding tapes to library %s: %w (the library has the maximum of %d slots)", l.cfg.Name, ErrNoFreeSlot, MaxSlots)
			}
			inv.Slots++
			slot = inv.Slots
		}
		// Skip numbers whose folder exists: a tape left behind by a crash
		// between labelling and the inventory write is never overwritten.
		var bc string
		for {
			bc = l.barcode(inv.NextBarcode)
			inv.NextBarcode++
			if _, ok := inv.Tapes[bc]; ok {
				continue
			}
			exists, err := l.media.Exists(bc)
			if err != nil {
				return made, fmt.Errorf("adding tapes to library %s: %w", l.cfg.Name, err)
			}
			if !exists {
				break
			}
		}
		now := l.now().UTC()
		err := l.media.Format(tape.Label{
			Barcode:      bc,
			Library:      l.cfg.Name,
			BlockSize:    l.cfg.BlockSize,
			Capacity:     l.cfg.TapeSize,
			EarlyWarning: l.cfg.EarlyWarning(),
			Created:      now,
			Labelled:     now,
		}, l.defaultOptions())
		if err != nil {
			return made, fmt.Errorf("labelling tape %s in library %s: %w", bc, l.cfg.Name, err)
		}
		inv.Tapes[bc] = &tapeEntry{Home: slot}
		made = append(made, bc)
	}
	return made, nil
}

// AddTapes labels n new blank tapes and puts them into free slots. When
// there are fewer free slots than n, the library grows: new slots are added
// after the last one (and Config().Slots grows with them). It returns the new
// barcodes; on failure, the tapes made before it stay in the library.
func (l *Library) AddTapes(n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: adding %d tapes: want at least 1", ErrInvalidConfig, n)
	}
	var made []string
	var addErr error
	err := l.update(func(inv *inventory) error {
		made, addErr = l.addTapes(inv, n)
		if len(made) == 0 {
			return addErr
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return made, addErr
}
