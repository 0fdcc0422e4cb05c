package library

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/mtx"
	"github.com/kura-backup/kura/internal/tape/mtx/mtxtest"
	"github.com/kura-backup/kura/internal/tape/sttape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

var robotDrives = []string{"/dev/nst0", "/dev/nst1"}

// newRobot is an emulated changer /dev/sg7 with two drives, 6 storage
// slots and one mail slot (element 7), cartridges A00001L8… in the first n
// slots: 4 MiB to early warning, 8 MiB to the end.
func newRobot(n int) *mtxtest.Robot {
	r := mtxtest.New("/dev/sg7", robotDrives, 6, 1)
	for i := 1; i <= n; i++ {
		r.Insert(i, fmt.Sprintf("A%05dL8", i), sttape.NewMedia(4<<20, 8<<20))
	}
	return r
}

func robotConfig(dir string) Config {
	return Config{Name: "robot", Dir: dir, BlockSize: 32 << 10, BufferSize: 256 << 10,
		Media: &MediaConfig{Kind: MediaChanger, Changer: "/dev/sg7", DriveDevices: robotDrives}}
}

func hw(r *mtxtest.Robot) *Hardware { return &Hardware{Run: r.Run, OpenDrive: r.OpenDrive} }

func newTapeLibrary(t *testing.T, r *mtxtest.Robot) *TapeLibrary {
	t.Helper()
	l, err := CreateTapeLibrary(robotConfig(filepath.Join(t.TempDir(), "robot")), hw(r))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func states(t *testing.T, c Changer) map[string]TapeState {
	t.Helper()
	ts, err := c.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]TapeState{}
	for _, s := range ts {
		out[s.Barcode] = s.State
	}
	return out
}

// TestTapeLibraryCreate: the library takes the changer's slots and mail
// slots, lists its cartridges as unread without loading any, opens again
// as a Changer (and not as a virtual library), and a cleaning cartridge is
// no tape.
func TestTapeLibraryCreate(t *testing.T) {
	r := newRobot(3)
	r.Insert(5, "CLN001L1", sttape.NewMedia(1<<20, 2<<20))
	l := newTapeLibrary(t, r)
	c := l.Config()
	if c.Slots != 6 || c.MailSlots != 1 || c.Drives != 2 || c.TapeSize != MaxTapeSize {
		t.Errorf("config %v, want 6 slots, 1 mail slot, 2 drives, tape size %d", c, MaxTapeSize)
	}
	if r.Moves() != 0 {
		t.Errorf("creating the library moved %d cartridges", r.Moves())
	}
	want := map[string]TapeState{"A00001L8": StateUnread, "A00002L8": StateUnread, "A00003L8": StateUnread}
	if got := states(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tapes %v, want %v", got, want)
	}
	again, err := OpenChanger(c.Dir, hw(r))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.(*TapeLibrary); !ok {
		t.Fatalf("OpenChanger gave a %T", again)
	}
	if _, err := Open(c.Dir); !errors.Is(err, ErrTapeLibrary) {
		t.Errorf("Open of a tape library: %v, want ErrTapeLibrary", err)
	}
	st, err := again.Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Slots) != 6 || len(st.MailSlots) != 1 || st.MailSlots[0].Number != 7 || st.Slots[4].Barcode != "CLN001L1" {
		t.Errorf("status %+v", st)
	}
}

// TestTapeLibraryCreateRefuses: a missing drive device, a changer that
// fails, or more drives than the changer has are clear errors, and no
// library folder is left.
func TestTapeLibraryCreateRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		mod  func(*Config, *mtxtest.Robot)
		want error
	}{
		"missing drive": {func(c *Config, _ *mtxtest.Robot) {
			c.Media.DriveDevices = []string{"/dev/nst0", "/dev/nst9"}
		}, ErrNoDevice},
		"changer fails": {func(_ *Config, r *mtxtest.Robot) { r.FailNext("status") }, ErrChanger},
		"wrong changer": {func(c *Config, _ *mtxtest.Robot) { c.Media.Changer = "/dev/sg9" }, ErrChanger},
		"too many drives": {func(c *Config, _ *mtxtest.Robot) {
			c.Media.DriveDevices = []string{"/dev/nst0", "/dev/nst1", "/dev/nst2"}
		}, ErrInvalidConfig},
		"relative device": {func(c *Config, _ *mtxtest.Robot) { c.Media.Changer = "sg7" }, ErrInvalidConfig},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRobot(1)
			cfg := robotConfig(filepath.Join(t.TempDir(), "robot"))
			c.mod(&cfg, r)
			_, err := CreateTapeLibrary(cfg, hw(r))
			if !errors.Is(err, c.want) {
				t.Fatalf("create: %v, want %v", err, c.want)
			}
			if _, serr := os.Stat(cfg.Dir); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("a failed create left %s (%v)", cfg.Dir, serr)
			}
		})
	}
}

// TestTapeLibraryWriteRead: a backup's drive labels the first unread blank
// cartridge and writes on it; the inventory then knows it without loading
// it; it reads back through OpenTape; Erase empties it with its generation
// grown.
func TestTapeLibraryWriteRead(t *testing.T) {
	r := newRobot(2)
	l := newTapeLibrary(t, r)
	d, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, bc, err := d.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	if bc != "A00001L8" || dev.Label().Barcode != bc || dev.Label().Library != "robot" {
		t.Fatalf("LoadWritable gave %s labelled %+v", bc, dev.Label())
	}
	data := tapetest.Payload(1, 300<<10)
	tapetest.WriteFile(t, dev, "saveset 1 data part 1", data, 0)
	if err := d.Release(); err != nil {
		t.Fatal(err)
	}
	ts, err := l.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].State != StateAppendable || ts[0].Files != 1 || ts[0].Used != int64(len(data)) || ts[0].Drive != 1 || ts[0].Slot != 1 {
		t.Errorf("after the write: %+v", ts[0])
	}
	if ts[1].State != StateUnread {
		t.Errorf("the other cartridge: %+v", ts[1])
	}
	rd, err := l.OpenTape(bc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tapetest.ReadFile(t, rd, 1), data) {
		t.Fatal("read back differs")
	}
	// The reader holds a drive: an erase needs the other one and gets it.
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
	gen := ts[0].Generation
	if err := l.Erase(bc); err != nil {
		t.Fatal(err)
	}
	ts, _ = l.Tapes()
	if ts[0].State != StateBlank || ts[0].Files != 0 || ts[0].Generation != gen+1 {
		t.Errorf("after erase: %+v, want blank, generation %d", ts[0], gen+1)
	}
}

// TestTapeLibraryExportImport: a tape in a drive is ejected, unloaded and
// moved to the mail slot; it reads as exported; a second export finds the
// mail slot full; import puts it into a free slot.
func TestTapeLibraryExportImport(t *testing.T) {
	r := newRobot(2)
	l := newTapeLibrary(t, r)
	d, _ := l.Acquire(context.Background(), 1)
	if _, err := d.Load("A00002L8"); err != nil {
		t.Fatal(err)
	}
	if err := l.Export("A00002L8"); !errors.Is(err, ErrDriveBusy) {
		t.Fatalf("export of a tape in a leased drive: %v, want ErrDriveBusy", err)
	}
	d.Release()
	if err := l.Export("A00002L8"); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); !s.Slots[6].Full || s.Slots[6].VolumeTag != "A00002L8" || s.Drives[0].Full {
		t.Fatalf("after export the changer holds %s", s)
	}
	if got := states(t, l)["A00002L8"]; got != StateExported {
		t.Errorf("exported tape is %s", got)
	}
	if _, err := l.OpenTape("A00002L8"); !errors.Is(err, ErrExported) {
		t.Errorf("OpenTape of an exported tape: %v", err)
	}
	if err := l.Export("A00001L8"); !errors.Is(err, ErrMailSlotsFull) {
		t.Errorf("export with the mail slot full: %v", err)
	}
	if err := l.Import("A00001L8"); !errors.Is(err, ErrNotExported) {
		t.Errorf("import of a tape in a slot: %v", err)
	}
	if err := l.Import("A00002L8"); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); s.Slots[6].Full || !s.Slots[1].Full {
		t.Errorf("after import the changer holds %s", s)
	}
	if err := l.Export("NOSUCH"); !errors.Is(err, ErrUnknownTape) {
		t.Errorf("export of a tape the changer does not hold: %v", err)
	}
}

// TestTapeLibraryForeign: a cartridge of another library and one holding
// data that is not Kura's are passed over (and shown as errors) for the
// blank one after them; nothing is written on them.
func TestTapeLibraryForeign(t *testing.T) {
	r := newRobot(3)
	other, _ := r.Media("A00001L8").Load(true)
	od, err := sttape.Format(other, tape.Label{Barcode: "A00001L8", Library: "elsewhere", BlockSize: 32 << 10, Capacity: 4 << 20}, sttape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tapetest.WriteFile(t, od, "theirs", []byte("theirs"), 0)
	od.Close()
	junk, _ := r.Media("A00002L8").Load(true)
	junk.Op(20, 0) // variable blocks
	junk.Write([]byte("tar archive written by someone else"))
	junk.Close()
	before1, before2 := r.Media("A00001L8").Records(), r.Media("A00002L8").Records()

	l := newTapeLibrary(t, r)
	d, _ := l.Acquire(context.Background(), 0)
	_, bc, err := d.LoadWritable()
	if err != nil || bc != "A00003L8" {
		t.Fatalf("LoadWritable: %s, %v; want A00003L8", bc, err)
	}
	d.Release()
	if r.Media("A00001L8").Records() != before1 || r.Media("A00002L8").Records() != before2 {
		t.Error("a foreign cartridge was written on")
	}
	got := states(t, l)
	if got["A00001L8"] != StateError || got["A00002L8"] != StateError || got["A00003L8"] != StateBlank {
		t.Errorf("states %v", got)
	}
	// Erasing takes it for this library.
	if err := l.Erase("A00001L8"); err != nil {
		t.Fatal(err)
	}
	if got := states(t, l)["A00001L8"]; got != StateBlank {
		t.Errorf("erased foreign tape is %s", got)
	}
}

// TestTapeLibraryChangerFails: a move the changer reports an error for is
// an ErrChanger naming the move; nothing moved, and the next try works.
func TestTapeLibraryChangerFails(t *testing.T) {
	r := newRobot(2)
	l := newTapeLibrary(t, r)
	d, _ := l.Acquire(context.Background(), 0)
	defer d.Release()
	r.FailNext("load")
	if _, err := d.Load("A00002L8"); !errors.Is(err, ErrChanger) {
		t.Fatalf("load with the changer failing: %v, want ErrChanger", err)
	}
	if s := r.Status(); s.Drives[0].Full || !s.Slots[1].Full {
		t.Fatalf("a failed load moved something: %s", s)
	}
	if _, err := d.Load("A00002L8"); err != nil {
		t.Fatal(err)
	}
}

// TestRobotRefuses: the emulated changer refuses what a real one does: a
// load into a full drive, from an empty slot, and pulling a tape the drive
// has not ejected.
func TestRobotRefuses(t *testing.T) {
	r := newRobot(2)
	c := &mtx.Changer{Device: "/dev/sg7", Run: r.Run}
	ctx := context.Background()
	if err := c.Load(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "-f", "/dev/sg7", "load", "2", "0"); err == nil {
		t.Error("loaded into a full drive")
	}
	if _, err := r.Run(ctx, "-f", "/dev/sg7", "load", "5", "1"); err == nil {
		t.Error("loaded from an empty slot")
	}
	if err := c.Unload(ctx, 0, 0); err == nil {
		t.Error("unloaded a tape the drive had not ejected")
	}
	drv, _ := r.OpenDrive("/dev/nst0", false)
	if err := sttape.Offline(drv); err != nil {
		t.Fatal(err)
	}
	drv.Close()
	if err := c.Unload(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
}

// TestTapeLibraryReadingANewCartridge: reading a new, blank cartridge (a
// catalog search goes through every tape) fails as blank but does not
// mark it foreign: a writer still takes and labels it. A Kura tape whose
// label has gone is marked.
func TestTapeLibraryReadingANewCartridge(t *testing.T) {
	r := newRobot(2)
	l := newTapeLibrary(t, r)
	if _, err := l.OpenTape("A00001L8"); !errors.Is(err, tape.ErrBlank) {
		t.Fatalf("reading a blank cartridge: %v, want ErrBlank", err)
	}
	if got := states(t, l)["A00001L8"]; got != StateUnread {
		t.Fatalf("after a read, the blank cartridge is %s, want unread", got)
	}
	d, _ := l.Acquire(context.Background(), 0)
	if _, bc, err := d.LoadWritable(); err != nil || bc != "A00001L8" {
		t.Fatalf("LoadWritable: %s, %v; want A00001L8", bc, err)
	}
	d.Release()
	// Its label wiped behind Kura's back (a filemark at the beginning).
	drv, _ := r.Media("A00001L8").Load(true)
	drv.Op(6, 1) // rewind
	drv.Op(5, 1) // write a filemark
	drv.Close()
	if _, err := l.OpenTape("A00001L8"); !errors.Is(err, tape.ErrBlank) {
		t.Fatalf("reading the wiped tape: %v", err)
	}
	if got := states(t, l)["A00001L8"]; got != StateError {
		t.Errorf("a Kura tape whose label is gone is %s, want error", got)
	}
}
