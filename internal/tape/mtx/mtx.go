// Package mtx drives a SCSI media changer (a tape library's robot) through
// the mtx(1) command: its inventory from `mtx status`, and load, unload
// and transfer. It is a thin seam, not wired into Kura's libraries yet;
// the parser is tested on fixtures in testdata (written in the format
// mtx prints, not captured from a library: the project has none).
//
// `mtx -f /dev/sgN status` prints (element numbers are mtx's: drives from
// 0, storage elements from 1, import/export slots among them):
//
//	  Storage Changer /dev/sg5:2 Drives, 24 Slots ( 2 Import/Export )
//	Data Transfer Element 0:Full (Storage Element 3 Loaded):VolumeTag = A00003L8
//	Data Transfer Element 1:Empty
//	      Storage Element 1:Full :VolumeTag=A00001L8
//	      Storage Element 2:Empty
//	      Storage Element 23 IMPORT/EXPORT:Full :VolumeTag=CLN001CU
//
// A changer without a barcode reader prints no VolumeTag; a drive loaded
// from an unknown slot says "Full (Unknown Storage Element Loaded)".
// Lines mtx prints about sense data ("mtx: Request Sense: …") and anything
// else outside this grammar are refused, as are numbers out of order and
// counts that disagree with the header: an inventory Kura cannot read
// exactly is not one to move tapes by.
package mtx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Errors.
var (
	// ErrBadStatus: `mtx status` printed something this parser does not read.
	ErrBadStatus = errors.New("unreadable mtx status")
	// ErrSlotEmpty: a load or transfer from an empty slot.
	ErrSlotEmpty = errors.New("slot is empty")
	// ErrSlotFull: an unload or transfer to a full slot.
	ErrSlotFull = errors.New("slot is full")
	// ErrDriveFull, ErrDriveEmpty: a load into a loaded drive, an unload
	// of an empty one.
	ErrDriveFull  = errors.New("drive is loaded")
	ErrDriveEmpty = errors.New("drive is empty")
	// ErrNoSuchElement: a drive or slot number the changer does not have.
	ErrNoSuchElement = errors.New("no such drive or slot")
)

// Status is a changer's inventory.
type Status struct {
	Device string  `json:"device"`
	Drives []Drive `json:"drives"` // Drives[i].Number == i
	Slots  []Slot  `json:"slots"`  // Slots[i].Number == i+1
}

// Drive is a data transfer element.
type Drive struct {
	Number    int    `json:"number"` // from 0
	Full      bool   `json:"full"`
	Source    int    `json:"source,omitempty"` // the slot it was loaded from; 0 unknown
	VolumeTag string `json:"volume_tag,omitempty"`
}

// Slot is a storage element; ImportExport marks a mail slot.
type Slot struct {
	Number       int    `json:"number"` // from 1
	ImportExport bool   `json:"import_export,omitempty"`
	Full         bool   `json:"full"`
	VolumeTag    string `json:"volume_tag,omitempty"`
}

// maxElements bounds the counts a status may claim (the largest libraries
// have a few tens of thousands of slots).
const maxElements = 1 << 16

// ParseStatus reads the output of `mtx status`.
func ParseStatus(b []byte) (Status, error) {
	bad := func(line int, format string, a ...any) (Status, error) {
		return Status{}, fmt.Errorf("%w: line %d: %s", ErrBadStatus, line, fmt.Sprintf(format, a...))
	}
	if !utf8.Valid(b) {
		return bad(0, "not UTF-8")
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var s Status
	head := strings.TrimSpace(lines[0])
	rest, ok := strings.CutPrefix(head, "Storage Changer ")
	if !ok {
		return bad(1, "want \"Storage Changer DEVICE:N Drives, M Slots ( K Import/Export )\", have %q", clip(head))
	}
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return bad(1, "no drive and slot counts")
	}
	s.Device = rest[:i]
	var drives, slots, ie int
	if n, err := fmt.Sscanf(rest[i+1:], "%d Drives, %d Slots ( %d Import/Export )", &drives, &slots, &ie); n != 3 || err != nil {
		return bad(1, "counts %q", clip(rest[i+1:]))
	}
	if drives < 0 || slots < 0 || ie < 0 || drives > maxElements || slots > maxElements || ie > slots {
		return bad(1, "counts %d drives, %d slots, %d import/export", drives, slots, ie)
	}
	// The header's slot count includes the import/export slots; all are
	// listed as storage elements.
	for n, line := range lines[1:] {
		ln := n + 2
		switch t := strings.TrimSpace(line); {
		case strings.HasPrefix(t, "Data Transfer Element "):
			if len(s.Slots) > 0 {
				return bad(ln, "a drive after the slots")
			}
			d, err := parseDrive(strings.TrimPrefix(t, "Data Transfer Element "))
			if err != nil {
				return bad(ln, "%v", err)
			}
			if d.Number != len(s.Drives) {
				return bad(ln, "drive %d where %d comes next", d.Number, len(s.Drives))
			}
			s.Drives = append(s.Drives, d)
		case strings.HasPrefix(t, "Storage Element "):
			sl, err := parseSlot(strings.TrimPrefix(t, "Storage Element "))
			if err != nil {
				return bad(ln, "%v", err)
			}
			if sl.Number != len(s.Slots)+1 {
				return bad(ln, "slot %d where %d comes next", sl.Number, len(s.Slots)+1)
			}
			s.Slots = append(s.Slots, sl)
		default:
			return bad(ln, "unexpected %q", clip(t))
		}
		if len(s.Drives) > drives || len(s.Slots) > slots {
			return bad(ln, "more elements than the header's %d drives and %d slots", drives, slots)
		}
	}
	nie := 0
	for _, sl := range s.Slots {
		if sl.ImportExport {
			nie++
		}
	}
	if len(s.Drives) != drives || len(s.Slots) != slots || nie != ie {
		return bad(len(lines), "%d drives and %d slots (%d import/export) listed, the header says %d, %d (%d)",
			len(s.Drives), len(s.Slots), nie, drives, slots, ie)
	}
	for _, d := range s.Drives {
		if d.Source > len(s.Slots) {
			return bad(0, "drive %d loaded from slot %d of %d", d.Number, d.Source, len(s.Slots))
		}
	}
	return s, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// number parses the decimal element number at the start of s, up to sep.
func number(s, sep string) (int, string, error) {
	num, rest, ok := strings.Cut(s, sep)
	if !ok {
		return 0, "", fmt.Errorf("no %q after the element number", sep)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > maxElements || strconv.Itoa(n) != num {
		return 0, "", fmt.Errorf("element number %q", clip(num))
	}
	return n, rest, nil
}

// volumeTag checks a barcode: printable, no spaces, at most 36 characters
// (SCSI's primary volume tag field).
func volumeTag(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 36 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return "", fmt.Errorf("volume tag %q", clip(s))
	}
	return s, nil
}

// parseDrive reads "0:Empty", "0:Full (Storage Element 3 Loaded):VolumeTag = X"
// or "0:Full (Unknown Storage Element Loaded)".
func parseDrive(s string) (Drive, error) {
	n, rest, err := number(s, ":")
	if err != nil {
		return Drive{}, err
	}
	d := Drive{Number: n}
	if rest == "Empty" {
		return d, nil
	}
	rest, ok := strings.CutPrefix(rest, "Full (")
	if !ok {
		return Drive{}, fmt.Errorf("drive state %q", clip(rest))
	}
	d.Full = true
	src, rest, ok := strings.Cut(rest, ")")
	if !ok {
		return Drive{}, fmt.Errorf("no ')' after the drive's source")
	}
	if src != "Unknown Storage Element Loaded" {
		num, ok := strings.CutPrefix(src, "Storage Element ")
		if !ok {
			return Drive{}, fmt.Errorf("drive source %q", clip(src))
		}
		if d.Source, _, err = number(num, " Loaded"); err != nil || d.Source < 1 {
			return Drive{}, fmt.Errorf("drive source %q", clip(src))
		}
	}
	if rest == "" {
		return d, nil
	}
	tag, ok := strings.CutPrefix(rest, ":VolumeTag = ")
	if !ok {
		return Drive{}, fmt.Errorf("after the drive's source: %q", clip(rest))
	}
	tag, _, _ = strings.Cut(tag, ":") // an :AlternateVolumeTag may follow
	if d.VolumeTag, err = volumeTag(tag); err != nil {
		return Drive{}, err
	}
	return d, nil
}

// parseSlot reads "1:Empty", "1:Full ", "1:Full :VolumeTag=X" or
// "21 IMPORT/EXPORT:…".
func parseSlot(s string) (Slot, error) {
	num, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Slot{}, fmt.Errorf("no ':' after the slot number")
	}
	var sl Slot
	num, sl.ImportExport = strings.CutSuffix(num, " IMPORT/EXPORT")
	n, _, err := number(num+":", ":")
	if err != nil || n < 1 {
		return Slot{}, fmt.Errorf("slot number %q", clip(num))
	}
	sl.Number = n
	switch {
	case rest == "Empty":
		return sl, nil
	case strings.TrimSpace(rest) == "Full":
		sl.Full = true
		return sl, nil
	}
	tag, ok := strings.CutPrefix(rest, "Full :VolumeTag=")
	if !ok {
		return Slot{}, fmt.Errorf("slot state %q", clip(rest))
	}
	sl.Full = true
	tag, _, _ = strings.Cut(tag, ":")
	if sl.VolumeTag, err = volumeTag(tag); err != nil {
		return Slot{}, err
	}
	return sl, nil
}

// String renders the status as mtx prints it; ParseStatus reads it back.
func (s Status) String() string {
	var b bytes.Buffer
	ie := 0
	for _, sl := range s.Slots {
		if sl.ImportExport {
			ie++
		}
	}
	fmt.Fprintf(&b, "  Storage Changer %s:%d Drives, %d Slots ( %d Import/Export )\n", s.Device, len(s.Drives), len(s.Slots), ie)
	for _, d := range s.Drives {
		fmt.Fprintf(&b, "Data Transfer Element %d:", d.Number)
		switch {
		case !d.Full:
			b.WriteString("Empty")
		case d.Source > 0:
			fmt.Fprintf(&b, "Full (Storage Element %d Loaded)", d.Source)
		default:
			b.WriteString("Full (Unknown Storage Element Loaded)")
		}
		if d.Full && d.VolumeTag != "" {
			fmt.Fprintf(&b, ":VolumeTag = %s", d.VolumeTag)
		}
		b.WriteByte('\n')
	}
	for _, sl := range s.Slots {
		fmt.Fprintf(&b, "      Storage Element %d", sl.Number)
		if sl.ImportExport {
			b.WriteString(" IMPORT/EXPORT")
		}
		switch {
		case !sl.Full:
			b.WriteString(":Empty")
		case sl.VolumeTag != "":
			fmt.Fprintf(&b, ":Full :VolumeTag=%s", sl.VolumeTag)
		default:
			b.WriteString(":Full ")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Runner runs mtx with its arguments and returns what it printed on
// stdout; an exit status other than 0 is an error carrying its stderr.
type Runner func(ctx context.Context, args ...string) ([]byte, error)

// Exec runs the mtx on PATH.
func Exec(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "mtx", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("mtx %s: %w: %s", strings.Join(args, " "), err, clip(strings.TrimSpace(stderr.String())))
	}
	return out, nil
}

// Changer is a media changer at a device (/dev/sgN or /dev/changer).
type Changer struct {
	Device string
	Run    Runner // nil means Exec
}

func (c *Changer) run(ctx context.Context, args ...string) ([]byte, error) {
	run := c.Run
	if run == nil {
		run = Exec
	}
	return run(ctx, append([]string{"-f", c.Device}, args...)...)
}

// Status reads the changer's inventory.
func (c *Changer) Status(ctx context.Context) (Status, error) {
	out, err := c.run(ctx, "status")
	if err != nil {
		return Status{}, err
	}
	return ParseStatus(out)
}

// Load moves the tape in slot into drive, after checking on a fresh
// inventory that the slot holds a tape and the drive none.
func (c *Changer) Load(ctx context.Context, slot, drive int) error {
	s, err := c.Status(ctx)
	if err != nil {
		return err
	}
	sl, d, err := s.pair(slot, drive)
	if err != nil {
		return err
	}
	switch {
	case !sl.Full:
		return fmt.Errorf("load slot %d into drive %d: %w", slot, drive, ErrSlotEmpty)
	case d.Full:
		return fmt.Errorf("load slot %d into drive %d: %w (%s)", slot, drive, ErrDriveFull, d.VolumeTag)
	}
	_, err = c.run(ctx, "load", strconv.Itoa(slot), strconv.Itoa(drive))
	return err
}

// Unload moves the tape in drive to slot (0: the slot it came from), after
// checking that the drive holds a tape and the slot none. The drive must
// have ejected the tape (`mt -f /dev/nstN offline`) first on most
// libraries.
func (c *Changer) Unload(ctx context.Context, slot, drive int) error {
	s, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if drive < 0 || drive >= len(s.Drives) {
		return fmt.Errorf("unload drive %d: %w", drive, ErrNoSuchElement)
	}
	if slot == 0 {
		slot = s.Drives[drive].Source
	}
	sl, d, err := s.pair(slot, drive)
	if err != nil {
		return err
	}
	switch {
	case !d.Full:
		return fmt.Errorf("unload drive %d: %w", drive, ErrDriveEmpty)
	case sl.Full:
		return fmt.Errorf("unload drive %d into slot %d: %w (%s)", drive, slot, ErrSlotFull, sl.VolumeTag)
	}
	_, err = c.run(ctx, "unload", strconv.Itoa(slot), strconv.Itoa(drive))
	return err
}

// Transfer moves a tape from one slot to another (to a mail slot to export
// it, from one to import it).
func (c *Changer) Transfer(ctx context.Context, from, to int) error {
	s, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if from < 1 || from > len(s.Slots) || to < 1 || to > len(s.Slots) {
		return fmt.Errorf("transfer slot %d to %d: %w", from, to, ErrNoSuchElement)
	}
	switch {
	case !s.Slots[from-1].Full:
		return fmt.Errorf("transfer slot %d to %d: %w", from, to, ErrSlotEmpty)
	case s.Slots[to-1].Full:
		return fmt.Errorf("transfer slot %d to %d: %w", from, to, ErrSlotFull)
	}
	_, err = c.run(ctx, "transfer", strconv.Itoa(from), strconv.Itoa(to))
	return err
}

func (s Status) pair(slot, drive int) (Slot, Drive, error) {
	if slot < 1 || slot > len(s.Slots) {
		return Slot{}, Drive{}, fmt.Errorf("slot %d of %d: %w", slot, len(s.Slots), ErrNoSuchElement)
	}
	if drive < 0 || drive >= len(s.Drives) {
		return Slot{}, Drive{}, fmt.Errorf("drive %d of %d: %w", drive, len(s.Drives), ErrNoSuchElement)
	}
	return s.Slots[slot-1], s.Drives[drive], nil
}

// Find returns where the tape with a barcode is: in a drive (drive ≥ 0) or
// a slot (slot ≥ 1); both -1 and 0 when it is not in the changer.
func (s Status) Find(barcode string) (drive, slot int) {
	for _, d := range s.Drives {
		if d.Full && d.VolumeTag == barcode {
			return d.Number, 0
		}
	}
	for _, sl := range s.Slots {
		if sl.Full && sl.VolumeTag == barcode {
			return -1, sl.Number
		}
	}
	return -1, 0
}
