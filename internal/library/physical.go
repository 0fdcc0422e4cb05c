package library

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"

	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/mtx"
	"github.com/kura-backup/kura/internal/tape/sttape"
)

// Errors of a tape library.
var (
	// ErrChanger: the changer (its robot, or the mtx command driving it)
	// failed or refused a move. Nothing Kura wrote is lost: a tape that
	// did not move is where it was.
	ErrChanger = errors.New("tape changer failed")
	// ErrNoDevice: a changer or drive device named for a tape library does
	// not exist or is not the kind of device it should be.
	ErrNoDevice = errors.New("no such device")
	// ErrTapeLibrary: a *Library (a virtual library) was asked for, and the
	// folder holds a tape library, which opens only as a Changer
	// (OpenChanger): its tapes are its cartridges, not added or removed by
	// Kura.
	ErrTapeLibrary = errors.New("a tape library (changer and drives), not a virtual one")
)

// Hardware is how a tape library reaches its changer and drives; a nil
// Hardware, or nil fields, are the real ones: the mtx command on PATH
// (mtx.Exec) and the st driver (sttape.OpenDrive). Tests give an emulated
// robot and sttape.Emulation drives.
type Hardware struct {
	Run       mtx.Runner
	OpenDrive func(path string, write bool) (sttape.Drive, error)
}

const (
	stateFile    = "state.json"
	stateVersion = 1
	changerLock  = "changer.lock"
	// cleaningPrefix starts the barcodes of cleaning cartridges, which are
	// never tapes for data.
	cleaningPrefix = "CLN"
)

// TapeLibrary is a physical tape library: a SCSI media changer driven
// through mtx(1) (package mtx) and its drives on the Linux st driver
// (package sttape), as a Changer. The robot's inventory is the truth about
// where cartridges are: Kura reads it (`mtx status`) for every question
// and moves cartridges with mtx load, unload and transfer. What the robot
// cannot know — which cartridges a spanning writer marked full, the drive
// settings, and what Kura found on each cartridge the last time it had it
// in a drive (label, tape files, bytes used) — lives in DIR/state.json,
// beside library.json in the library's folder in the Kura home, changed
// under DIR/.lock as the virtual library's inventory is. Reading that
// instead of loading every cartridge keeps `tape list` instant; a
// cartridge Kura never had in a drive is StateUnread until a job needs it.
//
// Drive n (1-based) is the changer's data transfer element n-1 and the st
// device Config.Media.DriveDevices[n-1]. Leases are flocks on
// DIR/drives/N.lock, as in the virtual library; robot moves are serialized
// by DIR/changer.lock. Lock order: drive lock, changer lock, state lock.
type TapeLibrary struct {
	dir   string
	cfg   Config
	robot *mtx.Changer
	open  func(path string, write bool) (sttape.Drive, error)
	now   func() time.Time
}

var (
	_ Changer   = (*TapeLibrary)(nil)
	_ Drive     = (*physDrive)(nil)
	_ Relabeler = (*sttape.Device)(nil)
)

// tapeLibraryState is DIR/state.json.
type tapeLibraryState struct {
	Version int                   `json:"version"`
	Drives  []driveEntry          `json:"drives"`
	Tapes   map[string]*cartridge `json:"tapes"`
}

// cartridge is what Kura knows of one barcode.
type cartridge struct {
	Full bool `json:"full,omitempty"`
	// Seen is what was on the cartridge when Kura last had it in a drive;
	// nil: never.
	Seen *seenTape `json:"seen,omitempty"`
	// Foreign says why Kura does not write on the cartridge (another
	// library's label, data that is not Kura's): erasing it clears this.
	Foreign string `json:"foreign,omitempty"`
}

type seenTape struct {
	Generation   int       `json:"generation"`
	Capacity     int64     `json:"capacity"`
	EarlyWarning int64     `json:"early_warning"`
	Used         int64     `json:"used"`
	Files        int       `json:"files"`
	At           time.Time `json:"at"`
}

func hardware(hw *Hardware) (mtx.Runner, func(string, bool) (sttape.Drive, error)) {
	var h Hardware
	if hw != nil {
		h = *hw
	}
	if h.OpenDrive == nil {
		h.OpenDrive = sttape.OpenDrive
	}
	return h.Run, h.OpenDrive
}

// CreateTapeLibrary registers the tape library whose changer and drives
// cfg.Media names (Kind MediaChanger) in the folder cfg.Dir, which must be
// missing or empty. It reads the changer's inventory and opens each drive
// first: a device that is missing or does not answer is an error wrapping
// ErrNoDevice or ErrChanger, and nothing is created. The slots and mail
// slots are the changer's; a TapeSize of 0 means MaxTapeSize, so that the
// drive's early warning ends each tape. No cartridge is loaded or written:
// a blank one is labelled when a backup first needs it.
func CreateTapeLibrary(cfg Config, hw *Hardware) (*TapeLibrary, error) {
	m := cfg.Media
	if m == nil || m.Kind != MediaChanger {
		return nil, fmt.Errorf("%w: a tape library needs a changer and drives", ErrInvalidConfig)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	if cfg.Drives != 0 && cfg.Drives != len(m.DriveDevices) {
		return nil, fmt.Errorf("%w: %d drives for %d drive devices", ErrInvalidConfig, cfg.Drives, len(m.DriveDevices))
	}
	run, open := hardware(hw)
	if run == nil {
		// The real devices: say which is missing before mtx says it less
		// clearly.
		for i, p := range append([]string{m.Changer}, m.DriveDevices...) {
			if _, err := os.Stat(p); err != nil {
				what := "changer " + p
				if i > 0 {
					what = fmt.Sprintf("drive %d (%s)", i, p)
				}
				return nil, fmt.Errorf("creating tape library %s: %s: %w (%w)", cfg.Name, what, ErrNoDevice, err)
			}
		}
	}
	robot := &mtx.Changer{Device: m.Changer, Run: run}
	s, err := robot.Status(context.Background())
	if err != nil {
		return nil, fmt.Errorf("creating tape library %s: changer %s: %w: %w", cfg.Name, m.Changer, ErrChanger, execHint(err))
	}
	if len(s.Drives) < len(m.DriveDevices) {
		return nil, fmt.Errorf("creating tape library %s: %w: changer %s has %d drives, %d drive devices given", cfg.Name, ErrInvalidConfig, m.Changer, len(s.Drives), len(m.DriveDevices))
	}
	for i, p := range m.DriveDevices {
		d, err := open(p, false)
		if err != nil {
			return nil, fmt.Errorf("creating tape library %s: drive %d (%s): %w: %w", cfg.Name, i+1, p, ErrNoDevice, err)
		}
		d.Close()
	}
	storage, mail := 0, 0
	for _, sl := range s.Slots {
		if sl.ImportExport {
			mail++
		} else {
			storage++
		}
	}
	cfg.Drives, cfg.Slots = len(m.DriveDevices), storage
	if cfg.TapeSize == 0 {
		cfg.TapeSize = MaxTapeSize
	}
	cfg = cfg.WithDefaults()
	cfg.MailSlots = mail
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
		return nil, fmt.Errorf("creating library in %s: %w (a library needs an empty or new folder)", dir, ErrNotEmpty)
	}
	for _, d := range []string{dir, filepath.Join(dir, drivesDir)} {
		if err := private.MkdirAll(d); err != nil {
			return nil, fmt.Errorf("creating library %s: %w", cfg.Name, err)
		}
	}
	l := &TapeLibrary{dir: dir, cfg: cfg, robot: robot, open: open, now: time.Now}
	for n := 1; n <= cfg.Drives; n++ {
		f, err := private.OpenFile(l.driveLockPath(n), os.O_CREATE|os.O_RDWR)
		if err != nil {
			return nil, fmt.Errorf("creating drive %d of library %s: %w", n, cfg.Name, err)
		}
		f.Close()
	}
	st := &tapeLibraryState{Version: stateVersion, Tapes: map[string]*cartridge{}}
	for range cfg.Drives {
		st.Drives = append(st.Drives, driveEntry{BlockSize: cfg.BlockSize, BufferSize: cfg.BufferSize})
	}
	if err := l.writeState(st); err != nil {
		return nil, err
	}
	if err := writeConfig(dir, cfg, l.now()); err != nil {
		return nil, err
	}
	return l, nil
}

// execHint turns "mtx not found" into advice.
func execHint(err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("%w (install the mtx package)", err)
	}
	return err
}

// OpenChanger opens the library in dir as a Changer: a *Library (folder or
// S3) or, when its configuration names a changer, a *TapeLibrary reaching
// its devices through hw (nil: the real ones).
func OpenChanger(dir string, hw *Hardware) (Changer, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	if cfg.Media == nil || cfg.Media.Kind != MediaChanger {
		return OpenWithMedia(dir, nil)
	}
	return openTapeLibrary(cfg, hw)
}

func openTapeLibrary(cfg Config, hw *Hardware) (*TapeLibrary, error) {
	run, open := hardware(hw)
	l := &TapeLibrary{dir: cfg.Dir, cfg: cfg, robot: &mtx.Changer{Device: cfg.Media.Changer, Run: run}, open: open, now: time.Now}
	if _, err := l.readState(); err != nil {
		return nil, err
	}
	return l, nil
}

// Config is the library's configuration as created.
func (l *TapeLibrary) Config() Config { return l.cfg }

// Remove forgets the tape library: its folder in the home (configuration,
// state, drive locks) is deleted; the cartridges stay where they are.
func (l *TapeLibrary) Remove() error {
	for n := 1; n <= l.cfg.Drives; n++ {
		if l.driveBusy(n) {
			return fmt.Errorf("removing library %s: drive %d: %w", l.cfg.Name, n, ErrDriveBusy)
		}
	}
	if err := os.Remove(filepath.Join(l.dir, configFile)); err != nil {
		return fmt.Errorf("removing library %s: %w", l.cfg.Name, err)
	}
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("removing library %s: %w", l.cfg.Name, err)
	}
	return nil
}

func (l *TapeLibrary) driveLockPath(n int) string {
	return filepath.Join(l.dir, drivesDir, fmt.Sprintf("%d.lock", n))
}

func (l *TapeLibrary) driveBusy(n int) bool { return lockBusy(l.driveLockPath(n)) }

func (l *TapeLibrary) readState() (*tapeLibraryState, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("library %s: %w: %w", l.cfg.Name, ErrBadInventory, err)
	}
	var st tapeLibraryState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("library %s: %w: %s: %v", l.cfg.Name, ErrBadInventory, stateFile, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("library %s: %w: %s version %d (want %d)", l.cfg.Name, ErrBadInventory, stateFile, st.Version, stateVersion)
	}
	if len(st.Drives) != l.cfg.Drives {
		return nil, fmt.Errorf("library %s: %w: %s: %d drive entries for %d drives", l.cfg.Name, ErrBadInventory, stateFile, len(st.Drives), l.cfg.Drives)
	}
	for i, d := range st.Drives {
		if err := validateDrive(d.BlockSize, d.BufferSize); err != nil {
			return nil, fmt.Errorf("library %s: %w: %s: drive %d: %v", l.cfg.Name, ErrBadInventory, stateFile, i+1, err)
		}
	}
	if st.Tapes == nil {
		st.Tapes = map[string]*cartridge{}
	}
	for bc, c := range st.Tapes {
		if c == nil {
			return nil, fmt.Errorf("library %s: %w: %s: tape %s: empty entry", l.cfg.Name, ErrBadInventory, stateFile, bc)
		}
	}
	return &st, nil
}

func (l *TapeLibrary) writeState(st *tapeLibraryState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(l.dir, stateFile), append(b, '\n'), private.FileMode); err != nil {
		return fmt.Errorf("writing library %s state: %w", l.cfg.Name, err)
	}
	return nil
}

// update is a read-modify-write of state.json under DIR/.lock.
func (l *TapeLibrary) update(fn func(st *tapeLibraryState) error) error {
	lk := flock.New(filepath.Join(l.dir, lockFile))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("locking library %s: %w", l.cfg.Name, err)
	}
	defer lk.Close()
	st, err := l.readState()
	if err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	return l.writeState(st)
}

// cart returns st's entry for bc, adding an empty one.
func (st *tapeLibraryState) cart(bc string) *cartridge {
	c := st.Tapes[bc]
	if c == nil {
		c = &cartridge{}
		st.Tapes[bc] = c
	}
	return c
}

// record keeps what an open device shows of its cartridge.
func (l *TapeLibrary) record(bc string, d tape.Device) error {
	lab := d.Label()
	seen := &seenTape{Generation: lab.Generation, Capacity: lab.Capacity, EarlyWarning: lab.EarlyWarning,
		Used: d.Used(), At: l.now().UTC()}
	files, err := d.Files()
	if err != nil {
		return err
	}
	seen.Files = len(files)
	return l.update(func(st *tapeLibraryState) error {
		st.cart(bc).Seen = seen
		return nil
	})
}

// setForeign records why Kura will not write on a cartridge.
func (l *TapeLibrary) setForeign(bc, why string) error {
	return l.update(func(st *tapeLibraryState) error {
		st.cart(bc).Foreign = why
		return nil
	})
}

// robotStatus reads the changer's inventory.
func (l *TapeLibrary) robotStatus() (mtx.Status, error) {
	s, err := l.robot.Status(context.Background())
	if err != nil {
		return mtx.Status{}, l.changerErr("reading the inventory", err)
	}
	return s, nil
}

func (l *TapeLibrary) changerErr(what string, err error) error {
	return fmt.Errorf("library %s: changer %s: %s: %w: %w", l.cfg.Name, l.cfg.Media.Changer, what, ErrChanger, execHint(err))
}

// withChanger runs fn holding DIR/changer.lock: one robot move at a time
// across processes.
func (l *TapeLibrary) withChanger(fn func() error) error {
	lk := flock.New(filepath.Join(l.dir, changerLock))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("locking library %s's changer: %w", l.cfg.Name, err)
	}
	defer lk.Close()
	return fn()
}

// place is where a cartridge is in the robot's inventory.
type place struct {
	drive int // changer drive element (from 0), or -1
	slot  int // storage element (from 1): its slot, or for a drive its source
	mail  bool
}

func (p place) String() string {
	switch {
	case p.drive >= 0:
		return fmt.Sprintf("drive %d", p.drive+1)
	case p.mail:
		return fmt.Sprintf("mail slot %d", p.slot)
	}
	return fmt.Sprintf("slot %d", p.slot)
}

// find locates bc (ErrUnknownTape when the robot does not hold it).
func (l *TapeLibrary) find(s mtx.Status, bc string) (place, error) {
	for _, d := range s.Drives {
		if d.Full && d.VolumeTag == bc {
			return place{drive: d.Number, slot: d.Source}, nil
		}
	}
	for _, sl := range s.Slots {
		if sl.Full && sl.VolumeTag == bc {
			return place{drive: -1, slot: sl.Number, mail: sl.ImportExport}, nil
		}
	}
	return place{}, fmt.Errorf("library %s: tape %s: %w (the changer does not hold it)", l.cfg.Name, bc, ErrUnknownTape)
}

// freeSlot is the lowest empty storage (mail: import/export) element, or 0.
func freeSlot(s mtx.Status, mail bool) int {
	for _, sl := range s.Slots {
		if !sl.Full && sl.ImportExport == mail {
			return sl.Number
		}
	}
	return 0
}

// dataTag reports whether a volume tag is a data cartridge's barcode.
func dataTag(tag string) bool { return tag != "" && !strings.HasPrefix(tag, cleaningPrefix) }

// Status is the robot's inventory: storage slots and mail slots by their
// element numbers, drives from 1.
func (l *TapeLibrary) Status() (Status, error) {
	s, err := l.robotStatus()
	if err != nil {
		return Status{}, err
	}
	st, err := l.readState()
	if err != nil {
		return Status{}, err
	}
	out := Status{Name: l.cfg.Name, Slots: []SlotStatus{}, MailSlots: []SlotStatus{}, Drives: l.drives(s, st)}
	reserved := map[int]string{}
	for _, d := range s.Drives {
		if d.Full && d.Source > 0 {
			reserved[d.Source] = cmp.Or(d.VolumeTag, "(no barcode)")
		}
	}
	for _, sl := range s.Slots {
		ss := SlotStatus{Number: sl.Number}
		if sl.Full {
			ss.Barcode = cmp.Or(sl.VolumeTag, "(no barcode)")
		} else {
			ss.Reserved = reserved[sl.Number]
		}
		if sl.ImportExport {
			out.MailSlots = append(out.MailSlots, ss)
		} else {
			out.Slots = append(out.Slots, ss)
		}
	}
	return out, nil
}

// Drives describes the library's drives (those Kura was given, not every
// drive of the changer).
func (l *TapeLibrary) Drives() ([]DriveStatus, error) {
	s, err := l.robotStatus()
	if err != nil {
		return nil, err
	}
	st, err := l.readState()
	if err != nil {
		return nil, err
	}
	return l.drives(s, st), nil
}

func (l *TapeLibrary) drives(s mtx.Status, st *tapeLibraryState) []DriveStatus {
	out := make([]DriveStatus, l.cfg.Drives)
	for i := range out {
		out[i] = DriveStatus{Number: i + 1, BlockSize: st.Drives[i].BlockSize, BufferSize: st.Drives[i].BufferSize, Busy: l.driveBusy(i + 1)}
		if i < len(s.Drives) && s.Drives[i].Full {
			out[i].Barcode = cmp.Or(s.Drives[i].VolumeTag, "(no barcode)")
		}
	}
	return out
}

// Tapes describes every data cartridge in the changer (cleaning cartridges
// and cartridges without a barcode are not tapes), from the inventory and
// what Kura last saw on each; none is loaded to find out.
func (l *TapeLibrary) Tapes() ([]TapeStatus, error) {
	s, err := l.robotStatus()
	if err != nil {
		return nil, err
	}
	st, err := l.readState()
	if err != nil {
		return nil, err
	}
	var out []TapeStatus
	add := func(bc string, p place) {
		ts := TapeStatus{Barcode: bc, Location: p.String(), Slot: p.slot, Capacity: l.cfg.TapeSize, EarlyWarning: l.cfg.EarlyWarning()}
		switch {
		case p.drive >= 0:
			ts.Drive = p.drive + 1
		case p.mail:
			ts.Slot, ts.MailSlot = 0, p.slot
		}
		c := st.Tapes[bc]
		if c == nil {
			c = &cartridge{}
		}
		ts.MarkedFull = c.Full
		if c.Seen != nil {
			ts.Capacity, ts.EarlyWarning, ts.Generation = c.Seen.Capacity, c.Seen.EarlyWarning, c.Seen.Generation
			ts.Used, ts.Files = c.Seen.Used, c.Seen.Files
		}
		switch {
		case p.mail:
			ts.State = StateExported
		case c.Foreign != "":
			ts.State, ts.Error = StateError, c.Foreign
		case c.Seen == nil:
			ts.State = StateUnread
		case c.Full || ts.Used >= ts.EarlyWarning:
			ts.State = StateFull
		case ts.Files == 0:
			ts.State = StateBlank
		default:
			ts.State = StateAppendable
		}
		out = append(out, ts)
	}
	for _, d := range s.Drives {
		if d.Full && dataTag(d.VolumeTag) {
			add(d.VolumeTag, place{drive: d.Number, slot: d.Source})
		}
	}
	for _, sl := range s.Slots {
		if sl.Full && dataTag(sl.VolumeTag) {
			add(sl.VolumeTag, place{drive: -1, slot: sl.Number, mail: sl.ImportExport})
		}
	}
	slices.SortFunc(out, func(a, b TapeStatus) int { return cmp.Compare(a.Barcode, b.Barcode) })
	return out, nil
}

// SetDrive changes drive n's block size and buffer from its next Load.
func (l *TapeLibrary) SetDrive(n int, blockSize, bufferSize int) error {
	if n < 1 || n > l.cfg.Drives {
		return NoDrive(l.cfg.Name, n, l.cfg.Drives)
	}
	if err := validateDrive(blockSize, bufferSize); err != nil {
		return fmt.Errorf("drive %d of library %s: %w", n, l.cfg.Name, err)
	}
	return l.update(func(st *tapeLibraryState) error {
		st.Drives[n-1] = driveEntry{BlockSize: blockSize, BufferSize: bufferSize}
		return nil
	})
}

// MarkFull records that a spanning writer left the tape.
func (l *TapeLibrary) MarkFull(barcode string) error {
	return l.update(func(st *tapeLibraryState) error {
		st.cart(barcode).Full = true
		return nil
	})
}

// Acquire leases drive n (0: the first free one), as the virtual library
// does.
func (l *TapeLibrary) Acquire(ctx context.Context, n int) (Drive, error) {
	i, lk, err := acquireDrive(ctx, l.cfg.Name, l.cfg.Drives, n, l.driveLockPath)
	if err != nil {
		return nil, err
	}
	return &physDrive{lib: l, n: i, lock: lk}, nil
}

// tryLease takes drive n's lock without waiting (ErrDriveBusy).
func (l *TapeLibrary) tryLease(n int, why string) (*flock.Flock, error) {
	lk := flock.New(l.driveLockPath(n))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("library %s: locking drive %d: %w", l.cfg.Name, n, err)
	}
	if !ok {
		return nil, fmt.Errorf("library %s: %s: drive %d: %w", l.cfg.Name, why, n, ErrDriveBusy)
	}
	return lk, nil
}

// leaseFor takes, without waiting, the drive that holds bc or else the
// first free one: for Erase and OpenTape, which have no drive of their own.
func (l *TapeLibrary) leaseFor(s mtx.Status, bc string, p place, why string) (int, *flock.Flock, error) {
	if p.drive >= 0 {
		if p.drive >= l.cfg.Drives {
			return 0, nil, fmt.Errorf("library %s: tape %s is in the changer's drive %d, which is not one of this library's: %w", l.cfg.Name, bc, p.drive+1, ErrDriveBusy)
		}
		lk, err := l.tryLease(p.drive+1, fmt.Sprintf("%s: tape %s is in a drive in use", why, bc))
		return p.drive + 1, lk, err
	}
	for n := 1; n <= l.cfg.Drives; n++ {
		lk := flock.New(l.driveLockPath(n))
		if ok, err := lk.TryLock(); err == nil && ok {
			return n, lk, nil
		}
	}
	return 0, nil, fmt.Errorf("library %s: %s: every drive is in use: %w", l.cfg.Name, why, ErrDriveBusy)
}

// eject opens changer drive element k's device and ejects its tape.
func (l *TapeLibrary) eject(k int) error {
	d, err := l.open(l.cfg.Media.DriveDevices[k], false)
	if err != nil {
		return fmt.Errorf("library %s: drive %d: %w", l.cfg.Name, k+1, err)
	}
	err = sttape.Offline(d)
	d.Close()
	if err != nil {
		return fmt.Errorf("library %s: drive %d: %w", l.cfg.Name, k+1, err)
	}
	return nil
}

// unloadDrive ejects the tape in changer drive k and puts it back into its
// source slot, or the lowest free storage slot. Under the changer lock,
// with drive k's lease held by the caller.
func (l *TapeLibrary) unloadDrive(s mtx.Status, k int) error {
	d := s.Drives[k]
	if !d.Full {
		return nil
	}
	to := d.Source
	if to == 0 || s.Slots[to-1].Full || s.Slots[to-1].ImportExport {
		to = freeSlot(s, false)
	}
	if to == 0 {
		return fmt.Errorf("library %s: unloading drive %d: %w", l.cfg.Name, k+1, ErrNoFreeSlot)
	}
	if err := l.eject(k); err != nil {
		return err
	}
	if err := l.robot.Unload(context.Background(), to, k); err != nil {
		return l.changerErr(fmt.Sprintf("unloading drive %d into slot %d", k+1, to), err)
	}
	return nil
}

// takeFromDrive unloads bc from changer drive k if nobody leases it
// (ErrDriveBusy otherwise). Under the changer lock.
func (l *TapeLibrary) takeFromDrive(s mtx.Status, bc string, k int) error {
	if k >= l.cfg.Drives {
		return fmt.Errorf("library %s: tape %s is in the changer's drive %d, which is not one of this library's: %w", l.cfg.Name, bc, k+1, ErrDriveBusy)
	}
	lk, err := l.tryLease(k+1, "tape "+bc+" is in a drive in use")
	if err != nil {
		return err
	}
	defer lk.Close()
	return l.unloadDrive(s, k)
}

// moveInto puts bc into drive n (1-based; its lease held by the caller):
// the tape the drive holds goes back to its slot, bc comes from its slot
// or from another drive nobody leases.
func (l *TapeLibrary) moveInto(n int, bc string) error {
	k := n - 1
	return l.withChanger(func() error {
		s, err := l.robotStatus()
		if err != nil {
			return err
		}
		p, err := l.find(s, bc)
		if err != nil {
			return err
		}
		switch {
		case p.mail:
			return fmt.Errorf("cannot load into drive %d: %w", n, exportedErr(bc))
		case p.drive == k:
			return nil
		case p.drive >= 0:
			if err := l.takeFromDrive(s, bc, p.drive); err != nil {
				return fmt.Errorf("loading into drive %d: %w", n, err)
			}
		}
		if s.Drives[k].Full {
			if s, err = l.robotStatus(); err != nil {
				return err
			}
			if err := l.unloadDrive(s, k); err != nil {
				return err
			}
		}
		if s, err = l.robotStatus(); err != nil {
			return err
		}
		if p, err = l.find(s, bc); err != nil {
			return err
		}
		if err := l.robot.Load(context.Background(), p.slot, k); err != nil {
			return l.changerErr(fmt.Sprintf("loading tape %s from slot %d into drive %d", bc, p.slot, n), err)
		}
		return nil
	})
}

// openDrive opens drive n's device for writing, or for reading only when
// the cartridge is write-protected (or write is false).
func (l *TapeLibrary) openDrive(n int, write bool) (sttape.Drive, error) {
	path := l.cfg.Media.DriveDevices[n-1]
	d, err := l.open(path, write)
	if write && errors.Is(err, syscall.EROFS) {
		d, err = l.open(path, false)
	}
	if err != nil {
		return nil, fmt.Errorf("library %s: drive %d (%s): %w", l.cfg.Name, n, path, err)
	}
	return d, nil
}

// device opens the tape in drive n with the drive's settings.
func (l *TapeLibrary) device(n int, bc string, write bool) (*physDevice, error) {
	st, err := l.readState()
	if err != nil {
		return nil, err
	}
	d, err := l.openDrive(n, write)
	if err != nil {
		return nil, err
	}
	t, err := sttape.Open(d, sttape.Options{BlockSize: st.Drives[n-1].BlockSize, Clock: l.now})
	known := st.Tapes[bc] != nil && st.Tapes[bc].Seen != nil
	if errors.Is(err, tape.ErrBadLabel) || (errors.Is(err, tape.ErrBlank) && known) {
		// Not Kura's, damaged, or a Kura tape whose label is gone. A
		// blank cartridge Kura never read is new, not foreign.
		d.Close()
		return nil, l.foreign(n, bc, err.Error(), err)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("drive %d of library %s: opening tape %s: %w", n, l.cfg.Name, bc, err)
	}
	if lab := t.Label(); lab.Barcode != bc || lab.Library != l.cfg.Name {
		t.Close()
		why := fmt.Sprintf("labelled %s of library %s", lab.Barcode, lab.Library)
		return nil, l.foreign(n, bc, why, tape.ErrBadLabel)
	}
	if err := l.record(bc, t); err != nil {
		t.Close()
		return nil, err
	}
	return &physDevice{Device: t, lib: l, bc: bc}, nil
}

// foreign records that Kura does not write on bc (why) until it is erased
// (or, blank, labelled) and returns the error of opening it.
func (l *TapeLibrary) foreign(n int, bc, why string, err error) error {
	if uerr := l.setForeign(bc, why+"; erase it to use it here"); uerr != nil {
		return uerr
	}
	if strings.Contains(err.Error(), why) {
		return fmt.Errorf("drive %d of library %s: tape %s: %w", n, l.cfg.Name, bc, err)
	}
	return fmt.Errorf("drive %d of library %s: tape %s is %s: %w", n, l.cfg.Name, bc, why, err)
}

// label formats the blank cartridge in drive n as bc of this library.
func (l *TapeLibrary) label(n int, bc string, overwrite bool) (*physDevice, error) {
	st, err := l.readState()
	if err != nil {
		return nil, err
	}
	d, err := l.openDrive(n, true)
	if err != nil {
		return nil, err
	}
	t, err := sttape.Format(d, tape.Label{Barcode: bc, Library: l.cfg.Name, BlockSize: l.cfg.BlockSize,
		Capacity: l.cfg.TapeSize, EarlyWarning: l.cfg.EarlyWarning()},
		sttape.Options{BlockSize: st.Drives[n-1].BlockSize, Clock: l.now, Overwrite: overwrite})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("drive %d of library %s: labelling tape %s: %w", n, l.cfg.Name, bc, err)
	}
	if err := l.update(func(st *tapeLibraryState) error {
		c := st.cart(bc)
		c.Full, c.Foreign = false, ""
		return nil
	}); err != nil {
		t.Close()
		return nil, err
	}
	if err := l.record(bc, t); err != nil {
		t.Close()
		return nil, err
	}
	return &physDevice{Device: t, lib: l, bc: bc}, nil
}

// Export moves a tape to a free mail slot (unloading it from a drive
// nobody leases first).
func (l *TapeLibrary) Export(barcode string) error {
	return l.withChanger(func() error {
		s, err := l.robotStatus()
		if err != nil {
			return err
		}
		p, err := l.find(s, barcode)
		if err != nil {
			return err
		}
		if p.mail {
			return fmt.Errorf("tape %s is already %w (mail slot %d)", barcode, ErrExported, p.slot)
		}
		if freeSlot(s, true) == 0 {
			return fmt.Errorf("exporting tape %s: library %s: %w (take a tape out of the mail slots first)", barcode, l.cfg.Name, ErrMailSlotsFull)
		}
		if p.drive >= 0 {
			if err := l.takeFromDrive(s, barcode, p.drive); err != nil {
				return fmt.Errorf("exporting: %w", err)
			}
			if s, err = l.robotStatus(); err != nil {
				return err
			}
			if p, err = l.find(s, barcode); err != nil {
				return err
			}
		}
		to := freeSlot(s, true)
		if err := l.robot.Transfer(context.Background(), p.slot, to); err != nil {
			return l.changerErr(fmt.Sprintf("exporting tape %s from slot %d to mail slot %d", barcode, p.slot, to), err)
		}
		return nil
	})
}

// Import moves a tape from a mail slot into the lowest free storage slot.
func (l *TapeLibrary) Import(barcode string) error {
	return l.withChanger(func() error {
		s, err := l.robotStatus()
		if err != nil {
			return err
		}
		p, err := l.find(s, barcode)
		if err != nil {
			return err
		}
		if !p.mail {
			return fmt.Errorf("importing tape %s (%s): %w", barcode, p, ErrNotExported)
		}
		to := freeSlot(s, false)
		if to == 0 {
			return fmt.Errorf("importing tape %s: library %s: %w (export a tape first)", barcode, l.cfg.Name, ErrNoFreeSlot)
		}
		if err := l.robot.Transfer(context.Background(), p.slot, to); err != nil {
			return l.changerErr(fmt.Sprintf("importing tape %s from mail slot %d to slot %d", barcode, p.slot, to), err)
		}
		return nil
	})
}

// Erase relabels a cartridge in a free drive (or the one it is in, if
// nobody leases it): its tape files are gone, its generation grows, its
// full mark and any foreign mark are cleared. A cartridge without a Kura
// label of its own is labelled afresh. The tape stays in the drive.
func (l *TapeLibrary) Erase(barcode string) error {
	s, err := l.robotStatus()
	if err != nil {
		return err
	}
	p, err := l.find(s, barcode)
	if err != nil {
		return err
	}
	if p.mail {
		return fmt.Errorf("cannot erase: %w", exportedErr(barcode))
	}
	n, lk, err := l.leaseFor(s, barcode, p, "erasing tape "+barcode)
	if err != nil {
		return err
	}
	defer lk.Close()
	if err := l.moveInto(n, barcode); err != nil {
		return fmt.Errorf("erasing tape %s: %w", barcode, err)
	}
	t, err := l.device(n, barcode, true)
	if errors.Is(err, tape.ErrBlank) || errors.Is(err, tape.ErrBadLabel) {
		// Blank, damaged, or someone else's: label it afresh.
		t, err = l.label(n, barcode, true)
		if err != nil {
			return fmt.Errorf("erasing tape %s: %w", barcode, err)
		}
		return t.Close()
	}
	if err != nil {
		return fmt.Errorf("erasing tape %s: %w", barcode, err)
	}
	lab := t.Label()
	lab.Library, lab.Capacity, lab.EarlyWarning = l.cfg.Name, l.cfg.TapeSize, l.cfg.EarlyWarning()
	if err := t.Relabel(lab); err != nil {
		t.Close()
		return fmt.Errorf("erasing tape %s: %w", barcode, err)
	}
	if err := l.update(func(st *tapeLibraryState) error {
		c := st.cart(barcode)
		c.Full, c.Foreign = false, ""
		return nil
	}); err != nil {
		t.Close()
		return err
	}
	return t.Close()
}

// OpenTape loads a tape into a free drive (or opens it in the drive it is
// in, if nobody leases that drive) for reading. The device holds the drive
// until it is closed; the tape stays in the drive. With every drive in use
// it fails with ErrDriveBusy at once. A tape already open for reading in
// this process is shared, not loaded twice: its readers share the drive's
// head (sttape), and the last Close gives the drive back.
func (l *TapeLibrary) OpenTape(barcode string) (tape.Device, error) {
	key := l.dir + "\x00" + barcode
	openTapes.Lock()
	defer openTapes.Unlock()
	if s := openTapes.m[key]; s != nil {
		s.refs++
		return &tapeRef{physDevice: s.dev, s: s, key: key}, nil
	}
	t, err := l.openTape(barcode)
	if err != nil {
		return nil, err
	}
	s := &sharedTape{dev: t, refs: 1}
	openTapes.m[key] = s
	return &tapeRef{physDevice: s.dev, s: s, key: key}, nil
}

func (l *TapeLibrary) openTape(barcode string) (*physDevice, error) {
	s, err := l.robotStatus()
	if err != nil {
		return nil, err
	}
	p, err := l.find(s, barcode)
	if err != nil {
		return nil, err
	}
	if p.mail {
		return nil, exportedErr(barcode)
	}
	n, lk, err := l.leaseFor(s, barcode, p, "reading tape "+barcode)
	if err != nil {
		return nil, err
	}
	if err := l.moveInto(n, barcode); err != nil {
		lk.Close()
		return nil, err
	}
	t, err := l.device(n, barcode, false)
	if err != nil {
		lk.Close()
		return nil, err
	}
	t.lease = lk
	return t, nil
}

// openTapes are the tapes of tape libraries open for reading in this
// process, by library folder and barcode.
var openTapes = struct {
	sync.Mutex
	m map[string]*sharedTape
}{m: map[string]*sharedTape{}}

type sharedTape struct {
	dev  *physDevice
	refs int
}

// tapeRef is one OpenTape's handle on a shared tape.
type tapeRef struct {
	*physDevice
	s      *sharedTape
	key    string
	closed bool
}

func (r *tapeRef) Close() error {
	openTapes.Lock()
	defer openTapes.Unlock()
	if r.closed {
		return tape.ErrClosed
	}
	r.closed = true
	r.s.refs--
	if r.s.refs > 0 {
		return nil
	}
	delete(openTapes.m, r.key)
	return r.s.dev.Close()
}

// physDevice is a cartridge open in a drive: the st device, which on Close
// records what is on the cartridge in the library's state and gives back
// the drive lease OpenTape took.
type physDevice struct {
	*sttape.Device
	lib   *TapeLibrary
	bc    string
	lease *flock.Flock
}

func (d *physDevice) Close() error {
	recErr := d.lib.record(d.bc, d.Device)
	err := d.Device.Close()
	if d.lease != nil {
		d.lease.Close()
		d.lease = nil
	}
	if errors.Is(recErr, tape.ErrClosed) {
		recErr = nil
	}
	return cmp.Or(err, recErr)
}

// physDrive is a leased drive of a tape library.
type physDrive struct {
	lib  *TapeLibrary
	n    int
	lock *flock.Flock

	mu       sync.Mutex
	cur      tape.Device
	released bool
}

func (d *physDrive) Number() int { return d.n }

func (d *physDrive) check() error {
	if d.released {
		return fmt.Errorf("drive %d of library %s: %w", d.n, d.lib.cfg.Name, ErrReleased)
	}
	return nil
}

func (d *physDrive) closeCur() error {
	t := d.cur
	d.cur = nil
	return closeDevice(t)
}

// Load moves the tape into this drive and opens it; a cartridge Kura has
// never read that turns out blank is labelled (nothing is on it to lose).
func (d *physDrive) Load(barcode string) (tape.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return nil, err
	}
	if err := d.closeCur(); err != nil {
		return nil, err
	}
	st, err := d.lib.readState()
	if err != nil {
		return nil, err
	}
	c := st.Tapes[barcode]
	t, err := d.try(barcode, c == nil || c.Seen == nil)
	if err != nil {
		return nil, err
	}
	d.cur = t
	return t, nil
}

// LoadWritable loads the best tape to write on; see LoadWritableIf.
func (d *physDrive) LoadWritable(exclude ...string) (tape.Device, string, error) {
	return d.LoadWritableIf(nil, exclude...)
}

// LoadWritableIf picks as the virtual library does (the tape in this
// drive, then appendable tapes fullest first, then blank ones), from what
// Kura last saw on each cartridge, and after those the cartridges it has
// never read, by barcode: such a cartridge is loaded and, if blank,
// labelled; one with another label or data is marked foreign and passed
// over. Tapes in other drives, marked full, exported, excluded or not
// accepted by allow are never picked.
func (d *physDrive) LoadWritableIf(allow TapeFilter, exclude ...string) (tape.Device, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return nil, "", err
	}
	if err := d.closeCur(); err != nil {
		return nil, "", err
	}
	l := d.lib
	tapes, err := l.Tapes()
	if err != nil {
		return nil, "", err
	}
	type cand struct {
		bc      string
		unread  bool
		used    int64
		ranking int
	}
	var cands []cand
	for _, ts := range tapes {
		if slices.Contains(exclude, ts.Barcode) || ts.MarkedFull || (ts.Drive != 0 && ts.Drive != d.n) {
			continue
		}
		here := ts.Drive == d.n
		c := cand{bc: ts.Barcode, used: ts.Used}
		switch {
		case ts.State == StateAppendable && here:
			c.ranking = 1
		case ts.State == StateAppendable:
			c.ranking = 2
		case ts.State == StateBlank && here:
			c.ranking = 3
		case ts.State == StateBlank:
			c.ranking = 4
		case ts.State == StateUnread && here:
			c.ranking, c.unread = 5, true
		case ts.State == StateUnread:
			c.ranking, c.unread = 6, true
		default:
			continue
		}
		if allow != nil && !allow(c.bc, ts.State != StateAppendable) {
			continue
		}
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.ranking, b.ranking), cmp.Compare(b.used, a.used), cmp.Compare(a.bc, b.bc))
	})
	for _, c := range cands {
		t, err := d.try(c.bc, c.unread)
		switch {
		case err != nil && (errors.Is(err, ErrDriveBusy) || errors.Is(err, tape.ErrBadLabel) || errors.Is(err, tape.ErrBlank)):
			continue // another drive took it, or it is not ours to write
		case err != nil:
			return nil, "", err
		}
		files, err := t.Files()
		if err != nil || t.Used() >= t.Label().EarlyWarning || (allow != nil && !allow(c.bc, len(files) == 0)) {
			t.Close()
			continue
		}
		d.cur = t
		return t, c.bc, nil
	}
	return nil, "", &NoTapeError{Library: l.cfg.Name, Pool: allow != nil}
}

// try loads bc and opens it; an unread blank cartridge is labelled, a
// cartridge with something else on it is marked foreign (device).
func (d *physDrive) try(bc string, unread bool) (*physDevice, error) {
	l := d.lib
	if err := l.moveInto(d.n, bc); err != nil {
		return nil, err
	}
	t, err := l.device(d.n, bc, true)
	if unread && errors.Is(err, tape.ErrBlank) {
		return l.label(d.n, bc, false)
	}
	return t, err
}

// Unload ejects the loaded tape and puts it back into its slot.
func (d *physDrive) Unload() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return err
	}
	closeErr := d.closeCur()
	err := d.lib.withChanger(func() error {
		s, err := d.lib.robotStatus()
		if err != nil {
			return err
		}
		return d.lib.unloadDrive(s, d.n-1)
	})
	return cmp.Or(err, closeErr)
}

// Release closes the loaded tape (it stays in the drive) and ends the
// lease.
func (d *physDrive) Release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return err
	}
	d.released = true
	closeErr := d.closeCur()
	if err := d.lock.Close(); err != nil {
		return fmt.Errorf("drive %d of library %s: releasing: %w", d.n, d.lib.cfg.Name, err)
	}
	return closeErr
}
