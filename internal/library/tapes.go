package library

import (
	"fmt"
	"strconv"

	"github.com/kura-backup/kura/internal/tape"
)

// TapeState is what a tape can be used for.
type TapeState string

// Tape states.
const (
	// StateBlank: labelled, no tape files.
	StateBlank TapeState = "blank"
	// StateAppendable: holds tape files and has room before early warning.
	StateAppendable TapeState = "appendable"
	// StateFull: marked full by a spanning writer, or at or past its
	// early-warning point.
	StateFull TapeState = "full"
	// StateExported: offline in a mail slot.
	StateExported TapeState = "exported"
	// StateError: the tape cannot be opened or read, or its label is lost
	// (both copies damaged: its tape files still read, nothing is written
	// to it until it is erased); see TapeStatus.Error.
	StateError TapeState = "error"
	// StateUnread: a cartridge of a tape library (TapeLibrary) that Kura
	// has not had in a drive yet, so its label and tape files are unknown.
	// A backup that needs a tape loads it: a blank one is labelled and
	// written, one holding anything else is marked StateError.
	StateUnread TapeState = "unread"
)

// TapeStatus describes one tape.
type TapeStatus struct {
	Barcode string `json:"barcode"`
	// Location is "slot 3", "drive 1" or "mail slot 1".
	Location     string    `json:"location"`
	Slot         int       `json:"slot,omitempty"` // home slot; 0 when exported
	Drive        int       `json:"drive,omitempty"`
	MailSlot     int       `json:"mail_slot,omitempty"`
	State        TapeState `json:"state"`
	MarkedFull   bool      `json:"marked_full,omitempty"`
	Used         int64     `json:"used"`
	Capacity     int64     `json:"capacity"`
	EarlyWarning int64     `json:"early_warning"`
	Files        int       `json:"files"` // tape files, complete or not
	Generation   int       `json:"generation"`
	Error        string    `json:"error,omitempty"`
}

// SlotStatus is one storage or mail slot.
type SlotStatus struct {
	Number  int    `json:"number"`
	Barcode string `json:"barcode,omitempty"` // tape in the slot now
	// Reserved is the tape whose home this slot is while it sits in a
	// drive.
	Reserved string `json:"reserved,omitempty"`
}

// DriveStatus describes one drive.
type DriveStatus struct {
	Number     int    `json:"number"`
	BlockSize  int    `json:"block_size"`
	BufferSize int    `json:"buffer_size"`
	Barcode    string `json:"barcode,omitempty"` // loaded tape
	Busy       bool   `json:"busy"`              // acquired by someone (any process)
}

// Status is the whole library at one moment.
type Status struct {
	Name      string        `json:"name"`
	Slots     []SlotStatus  `json:"slots"`
	Drives    []DriveStatus `json:"drives"`
	MailSlots []SlotStatus  `json:"mail_slots"`
}

func location(e *tapeEntry) string {
	switch {
	case e.MailSlot > 0:
		return "mail slot " + strconv.Itoa(e.MailSlot)
	case e.Drive > 0:
		return "drive " + strconv.Itoa(e.Drive)
	default:
		return "slot " + strconv.Itoa(e.Home)
	}
}

// inspect reads a tape's label and tape files and works out its state.
func (l *Library) inspect(bc string, e *tapeEntry) TapeStatus {
	ts := TapeStatus{
		Barcode:    bc,
		Location:   location(e),
		Slot:       e.Home,
		Drive:      e.Drive,
		MailSlot:   e.MailSlot,
		MarkedFull: e.Full,
	}
	t, err := l.media.Open(bc, l.standIn(bc), tape.Options{})
	if err != nil {
		ts.State, ts.Error = StateError, err.Error()
		return ts
	}
	defer t.Close()
	lab := t.Label()
	ts.Capacity, ts.EarlyWarning, ts.Generation = lab.Capacity, lab.EarlyWarning, lab.Generation
	ts.Used = t.Used()
	files, err := t.Files()
	ts.Files = len(files)
	switch {
	case err != nil:
		ts.State, ts.Error = StateError, err.Error()
	case lab.Barcode != bc:
		ts.State, ts.Error = StateError, fmt.Sprintf("label says barcode %s", lab.Barcode)
	case e.MailSlot > 0:
		ts.State = StateExported
	case e.Full || ts.Used >= lab.EarlyWarning:
		ts.State = StateFull
	case len(files) == 0:
		ts.State = StateBlank
	default:
		ts.State = StateAppendable
	}
	lr, ok := t.(LabelReporter)
	if !ok {
		return ts
	}
	if lr.LabelLost() {
		// Both copies lost: its tape files read (OpenTape), but nothing is
		// written to it until it is erased.
		ts.State, ts.Error = StateError, "label lost, tape files readable, erase it to write again: "+lr.LabelDamage().Error()
	} else if d := lr.LabelDamage(); d != nil && ts.Error == "" {
		// Readable from the other copy; say so (the next append heals it).
		ts.Error = d.Error()
	}
	return ts
}

// Tapes describes every tape of the library, sorted by barcode. It opens
// every tape (both label copies, each tape file's filemark), so what it
// says is what the media hold now, whoever changed them. That costs about
// 40 µs a tape with the labels in the page cache and 0.2 ms without
// (BenchmarkTapes, BenchmarkTapesEvicted: 20 ms and 100 ms for 500 tapes).
// A backup's choice of tape (LoadWritableIf) opens every tape the same
// way, beside an fsynced inventory write (BenchmarkLoadWritable: 10 ms in
// all with 50 tapes, 29 ms with 500). That is too little for a summary
// kept beside the inventory, which could go stale, to be worth its risk.
func (l *Library) Tapes() ([]TapeStatus, error) {
	inv, err := l.readInventory()
	if err != nil {
		return nil, err
	}
	var out []TapeStatus
	for _, bc := range sortedBarcodes(inv) {
		out = append(out, l.inspect(bc, inv.Tapes[bc]))
	}
	return out, nil
}

// Status describes every slot, drive and mail slot and what it holds.
func (l *Library) Status() (Status, error) {
	inv, err := l.readInventory()
	if err != nil {
		return Status{}, err
	}
	st := Status{
		Name:      l.cfg.Name,
		Slots:     make([]SlotStatus, inv.Slots),
		MailSlots: make([]SlotStatus, l.cfg.MailSlots),
		Drives:    l.drives(inv),
	}
	for i := range st.Slots {
		st.Slots[i].Number = i + 1
	}
	for i := range st.MailSlots {
		st.MailSlots[i].Number = i + 1
	}
	for bc, e := range inv.Tapes {
		switch {
		case e.MailSlot > 0:
			st.MailSlots[e.MailSlot-1].Barcode = bc
		case e.Drive > 0:
			st.Slots[e.Home-1].Reserved = bc
		default:
			st.Slots[e.Home-1].Barcode = bc
		}
	}
	return st, nil
}

// Drives describes every drive: its settings, loaded tape and whether it
// is acquired.
func (l *Library) Drives() ([]DriveStatus, error) {
	inv, err := l.readInventory()
	if err != nil {
		return nil, err
	}
	return l.drives(inv), nil
}

func (l *Library) drives(inv *inventory) []DriveStatus {
	out := make([]DriveStatus, len(inv.Drives))
	for i, d := range inv.Drives {
		out[i] = DriveStatus{
			Number:     i + 1,
			BlockSize:  d.BlockSize,
			BufferSize: d.BufferSize,
			Barcode:    inv.inDrive(i + 1),
			Busy:       l.driveBusy(i + 1),
		}
	}
	return out
}

// SetDrive changes drive n's block size (4 KiB to 16 MiB, a multiple of
// 512) and transfer-buffer memory (at least two blocks). The settings are
// stored in the inventory and apply from the drive's next Load.
func (l *Library) SetDrive(n int, blockSize, bufferSize int) error {
	if err := l.checkDrive(n); err != nil {
		return err
	}
	if err := validateDrive(blockSize, bufferSize); err != nil {
		return fmt.Errorf("drive %d of library %s: %w", n, l.cfg.Name, err)
	}
	return l.update(func(inv *inventory) error {
		inv.Drives[n-1] = driveEntry{BlockSize: blockSize, BufferSize: bufferSize}
		return nil
	})
}

func (l *Library) checkDrive(n int) error {
	if n < 1 || n > l.cfg.Drives {
		return NoDrive(l.cfg.Name, n, l.cfg.Drives)
	}
	return nil
}

// entry finds a tape in inv or fails with ErrUnknownTape.
func (l *Library) entry(inv *inventory, bc string) (*tapeEntry, error) {
	e, ok := inv.Tapes[bc]
	if !ok {
		return nil, fmt.Errorf("library %s: tape %s: %w", l.cfg.Name, bc, ErrUnknownTape)
	}
	return e, nil
}

func exportedErr(bc string) error { return fmt.Errorf("tape %s is %w; import it", bc, ErrExported) }

// takeFromDrive puts e back into its slot if it sits in a drive nobody has
// acquired; it fails with ErrDriveBusy otherwise. Called under the library
// lock; it only tries the drive lock, never waits for it.
func (l *Library) takeFromDrive(bc string, e *tapeEntry) error {
	if e.Drive == 0 {
		return nil
	}
	lk := newDriveLock(l.driveLockPath(e.Drive))
	ok, err := lk.TryLock()
	if err != nil {
		return fmt.Errorf("drive %d of library %s: %w", e.Drive, l.cfg.Name, err)
	}
	if !ok {
		return fmt.Errorf("tape %s is in drive %d: %w", bc, e.Drive, ErrDriveBusy)
	}
	defer lk.Close()
	e.Drive = 0
	return nil
}

// Export moves a tape to a free mail slot: it goes offline (state exported)
// and gives up its home slot. A tape in a drive nobody has acquired is
// unloaded first; in an acquired drive, Export fails with ErrDriveBusy.
func (l *Library) Export(barcode string) error {
	return l.update(func(inv *inventory) error {
		e, err := l.entry(inv, barcode)
		if err != nil {
			return err
		}
		if e.MailSlot > 0 {
			return fmt.Errorf("tape %s is already %w (mail slot %d)", barcode, ErrExported, e.MailSlot)
		}
		m := inv.freeMailSlot(l.cfg.MailSlots)
		if m == 0 {
			return fmt.Errorf("exporting tape %s: library %s: %w (import or remove a tape first)", barcode, l.cfg.Name, ErrMailSlotsFull)
		}
		if err := l.takeFromDrive(barcode, e); err != nil {
			return fmt.Errorf("exporting: %w", err)
		}
		*e = tapeEntry{MailSlot: m, Full: e.Full}
		return nil
	})
}

// Import moves a tape from a mail slot into the lowest free slot.
func (l *Library) Import(barcode string) error {
	return l.update(func(inv *inventory) error {
		e, err := l.entry(inv, barcode)
		if err != nil {
			return err
		}
		if e.MailSlot == 0 {
			return fmt.Errorf("importing tape %s (%s): %w", barcode, location(e), ErrNotExported)
		}
		s := inv.freeSlot()
		if s == 0 {
			return fmt.Errorf("importing tape %s: library %s: %w (add slots with more tapes or export one)", barcode, l.cfg.Name, ErrNoFreeSlot)
		}
		*e = tapeEntry{Home: s, Full: e.Full}
		return nil
	})
}

// MarkFull records that a spanning writer left the tape: it is not picked
// for writing again until erased.
func (l *Library) MarkFull(barcode string) error {
	return l.update(func(inv *inventory) error {
		e, err := l.entry(inv, barcode)
		if err != nil {
			return err
		}
		e.Full = true
		return nil
	})
}

// Erase relabels a tape: every tape file on it is gone, its generation
// grows by one and its full mark is cleared. An exported tape, or one in an
// acquired drive (ErrDriveBusy), cannot be erased. Checking the catalog
// for unexpired savesets is the caller's job.
func (l *Library) Erase(barcode string) error {
	return l.update(func(inv *inventory) error {
		e, err := l.entry(inv, barcode)
		if err != nil {
			return err
		}
		if e.MailSlot > 0 {
			return fmt.Errorf("cannot erase: %w", exportedErr(barcode))
		}
		if e.Drive > 0 && l.driveBusy(e.Drive) {
			return fmt.Errorf("erasing tape %s: it is in drive %d: %w", barcode, e.Drive, ErrDriveBusy)
		}
		t, err := l.media.Open(barcode, l.standIn(barcode), tape.Options{Clock: l.now})
		if err != nil {
			return fmt.Errorf("erasing tape %s: %w", barcode, err)
		}
		defer t.Close()
		rl, ok := t.(Relabeler)
		if !ok {
			return fmt.Errorf("erasing tape %s: relabelling: %w", barcode, ErrUnsupported)
		}
		lab := t.Label()
		lab.Barcode = barcode
		lab.Library = l.cfg.Name
		lab.Labelled = l.now().UTC()
		lab.Generation++
		if err := rl.Relabel(lab); err != nil {
			return fmt.Errorf("erasing tape %s: %w", barcode, err)
		}
		e.Full = false
		return nil
	})
}

// OpenTape opens a tape for reading wherever it is in the library (slot or
// drive). An exported tape fails with ErrExported ("tape X is exported;
// import it"). The caller closes the device. A tape whose label is lost
// opens with the label it was made with standing in.
func (l *Library) OpenTape(barcode string) (tape.Device, error) {
	inv, err := l.readInventory()
	if err != nil {
		return nil, err
	}
	e, err := l.entry(inv, barcode)
	if err != nil {
		return nil, err
	}
	if e.MailSlot > 0 {
		return nil, exportedErr(barcode)
	}
	t, err := l.media.Open(barcode, l.standIn(barcode), l.defaultOptions())
	if err != nil {
		return nil, fmt.Errorf("library %s: opening tape %s: %w", l.cfg.Name, barcode, err)
	}
	return t, nil
}

// standIn is the label a tape of this library was given when it was made:
// what stands in, for reading, for a label whose both copies are damaged
// (Media.Open). Its times and generation are unknown.
func (l *Library) standIn(barcode string) tape.Label {
	return tape.Label{Barcode: barcode, Library: l.cfg.Name, BlockSize: l.cfg.BlockSize,
		Capacity: l.cfg.TapeSize, EarlyWarning: l.cfg.EarlyWarning()}
}

// noDriveError is ErrNoDrive (and ErrInvalidConfig, as a drive setting
// out of range) with a message of its own.
type noDriveError struct{ msg string }

func (e *noDriveError) Error() string { return e.msg }
func (e *noDriveError) Is(target error) bool {
	return target == ErrNoDrive || target == ErrInvalidConfig
}

// NoDrive returns the error for drive n of a library of drives drives,
// which has none by that number.
func NoDrive(library string, n, drives int) error {
	return &noDriveError{fmt.Sprintf("no drive %d in library %s (it has drives 1 to %d)", n, library, drives)}
}
