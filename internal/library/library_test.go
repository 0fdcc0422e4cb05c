package library

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
)

// testConfig is a small library: 16 MiB tapes (early warning at 8 MiB),
// 4 KiB blocks and a 64 KiB buffer.
func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		Name:       "test",
		Dir:        filepath.Join(t.TempDir(), "vtl"),
		Slots:      4,
		Drives:     2,
		MailSlots:  1,
		TapeSize:   MinTapeSize,
		BlockSize:  4 << 10,
		BufferSize: 64 << 10,
	}
}

func newLibrary(t *testing.T, mod func(*Config)) *Library {
	t.Helper()
	cfg := testConfig(t)
	if mod != nil {
		mod(&cfg)
	}
	l, err := Create(cfg)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return l
}

// writeFile appends one tape file of n bytes to the tape in dev.
func writeFile(t testing.TB, dev tape.Device, n int) tape.FileInfo {
	t.Helper()
	fw, err := dev.Append("test")
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte{0xA5}, n)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	info, err := fw.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return info
}

// writeTo writes one tape file of n bytes to the library tape bc.
func writeTo(t testing.TB, l *Library, bc string, n int) {
	t.Helper()
	tp, err := l.OpenTape(bc)
	if err != nil {
		t.Fatalf("OpenTape(%s): %v", bc, err)
	}
	defer tp.Close()
	writeFile(t, tp, n)
}

func tapeByBarcode(t *testing.T, l *Library, bc string) TapeStatus {
	t.Helper()
	ts, err := l.Tapes()
	if err != nil {
		t.Fatalf("Tapes: %v", err)
	}
	for _, s := range ts {
		if s.Barcode == bc {
			return s
		}
	}
	t.Fatalf("tape %s not in Tapes()", bc)
	return TapeStatus{}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{Dir: "/srv/vtl/main"}.WithDefaults()
	if c.Name != "main" || c.Slots != 8 || c.Drives != 2 || c.MailSlots != 1 || c.TapeSize != 64<<30 ||
		c.BlockSize != 256<<10 || c.BufferSize != 8193<<10 || c.BarcodePrefix != "KUR" {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("default config invalid: %v", err)
	}
	for _, tc := range []struct{ size, margin int64 }{
		{64 << 30, (64 << 30) / 100 * 2}, // 2%
		{1 << 30, 64 << 20},              // at least 64 MiB
		{16 << 20, 8 << 20},              // at most half the tape
	} {
		if got := DefaultEarlyWarningMargin(tc.size); got != tc.margin {
			t.Errorf("DefaultEarlyWarningMargin(%d) = %d, want %d", tc.size, got, tc.margin)
		}
	}
	if got := (Config{TapeSize: 100 << 20, EarlyWarningMargin: 10 << 20}).EarlyWarning(); got != 90<<20 {
		t.Errorf("EarlyWarning = %d", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"no dir":          func(c *Config) { c.Dir = "" },
		"bad name":        func(c *Config) { c.Name = "a/b" },
		"negative slots":  func(c *Config) { c.Slots = -1 },
		"too many drives": func(c *Config) { c.Drives = 1000 },
		"small tape":      func(c *Config) { c.TapeSize = 1 << 20 },
		"huge margin":     func(c *Config) { c.EarlyWarningMargin = c.TapeSize },
		"bad prefix":      func(c *Config) { c.BarcodePrefix = "ab" },
		"small block":     func(c *Config) { c.BlockSize = 2048 },
		"odd block":       func(c *Config) { c.BlockSize = 4096 + 100 },
		"big block":       func(c *Config) { c.BlockSize = 32 << 20 },
		"small buffer":    func(c *Config) { c.BufferSize = c.BlockSize },
	} {
		t.Run(name, func(t *testing.T) {
			c := testConfig(t)
			mod(&c)
			if _, err := Create(c.WithDefaults()); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Create: got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestCreateOpenRoundTrip(t *testing.T) {
	cfg := testConfig(t)
	cfg.BarcodePrefix = "AB"
	l, err := Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.WithDefaults()
	if got := l.Config(); got != want {
		t.Errorf("Config after Create:\n got %v\nwant %v", got, want)
	}
	l2, err := Open(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := l2.Config(); got != want {
		t.Errorf("Config after Open:\n got %v\nwant %v", got, want)
	}
	st, err := l2.Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Slots) != 4 || len(st.Drives) != 2 || len(st.MailSlots) != 1 || st.Name != "test" {
		t.Fatalf("status: %+v", st)
	}
	for i, s := range st.Slots {
		if wantBC := []string{"AB001", "AB002", "AB003", "AB004"}[i]; s.Barcode != wantBC || s.Number != i+1 {
			t.Errorf("slot %d: %+v, want %s", i+1, s, wantBC)
		}
	}
	ts, err := l2.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ts {
		if s.State != StateBlank || s.Capacity != 16<<20 || s.EarlyWarning != 8<<20 || s.Files != 0 || s.Used != 0 {
			t.Errorf("new tape: %+v", s)
		}
		lab, err := tape.ReadLabel(filepath.Join(cfg.Dir, "tapes", s.Barcode))
		if err != nil || lab.Library != "test" || lab.Barcode != s.Barcode || lab.BlockSize != 4<<10 {
			t.Errorf("label of %s: %+v, %v", s.Barcode, lab, err)
		}
	}
	if _, err := Create(cfg); !errors.Is(err, ErrExists) {
		t.Errorf("second Create: got %v, want ErrExists", err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(Config{Dir: other}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("Create in a folder with files: got %v, want ErrNotEmpty", err)
	}
	if _, err := Open(other); !errors.Is(err, ErrNotLibrary) {
		t.Errorf("Open of an empty folder: got %v, want ErrNotLibrary", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "inventory.json"), []byte(`{"version":1,"slots":4,"tapes":{"AB001":{"home":1},"AB002":{"home":1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg.Dir); !errors.Is(err, ErrBadInventory) {
		t.Errorf("Open with two tapes in one slot: got %v, want ErrBadInventory", err)
	}
}

func TestMoves(t *testing.T) {
	l := newLibrary(t, nil)
	d, err := l.Acquire(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()

	tp, err := d.Load("KUR002")
	if err != nil {
		t.Fatal(err)
	}
	if tp.Label().Barcode != "KUR002" {
		t.Errorf("loaded tape label %q", tp.Label().Barcode)
	}
	st, _ := l.Status()
	if st.Drives[0].Barcode != "KUR002" || !st.Drives[0].Busy || st.Slots[1].Barcode != "" || st.Slots[1].Reserved != "KUR002" {
		t.Errorf("after Load: drive %+v, slot 2 %+v", st.Drives[0], st.Slots[1])
	}
	if s := tapeByBarcode(t, l, "KUR002"); s.Location != "drive 1" || s.Slot != 2 {
		t.Errorf("KUR002 after Load: %+v", s)
	}

	// Loading another tape sends the first home.
	if _, err := d.Load("KUR003"); err != nil {
		t.Fatal(err)
	}
	st, _ = l.Status()
	if st.Drives[0].Barcode != "KUR003" || st.Slots[1].Barcode != "KUR002" || st.Slots[2].Reserved != "KUR003" {
		t.Errorf("after second Load: %+v", st)
	}
	if err := d.Unload(); err != nil {
		t.Fatal(err)
	}
	if s := tapeByBarcode(t, l, "KUR003"); s.Location != "slot 3" {
		t.Errorf("after Unload: %+v", s)
	}

	// Export: offline, slot freed, mail slot taken.
	if err := l.Export("KUR001"); err != nil {
		t.Fatal(err)
	}
	s := tapeByBarcode(t, l, "KUR001")
	if s.State != StateExported || s.Location != "mail slot 1" || s.Slot != 0 {
		t.Errorf("after Export: %+v", s)
	}
	_, err = l.OpenTape("KUR001")
	if !errors.Is(err, ErrExported) || err.Error() != "tape KUR001 is exported; import it" {
		t.Errorf("OpenTape of exported tape: %v", err)
	}
	if _, err := d.Load("KUR001"); !errors.Is(err, ErrExported) {
		t.Errorf("Load of exported tape: %v", err)
	}
	if err := l.Erase("KUR001"); !errors.Is(err, ErrExported) {
		t.Errorf("Erase of exported tape: %v", err)
	}
	if err := l.Export("KUR001"); !errors.Is(err, ErrExported) {
		t.Errorf("second Export: %v", err)
	}
	if err := l.Export("KUR002"); !errors.Is(err, ErrMailSlotsFull) {
		t.Errorf("Export with full mail slot: %v", err)
	}
	if err := l.Import("KUR002"); !errors.Is(err, ErrNotExported) {
		t.Errorf("Import of a tape in a slot: %v", err)
	}
	if err := l.Export("NOPE01"); !errors.Is(err, ErrUnknownTape) {
		t.Errorf("Export of unknown tape: %v", err)
	}

	// A tape in an acquired drive cannot be exported.
	if _, err := d.Load("KUR004"); err != nil {
		t.Fatal(err)
	}
	if err := l.Import("KUR001"); err != nil {
		t.Fatal(err)
	}
	if s := tapeByBarcode(t, l, "KUR001"); s.Location != "slot 1" || s.State != StateBlank {
		t.Errorf("after Import: %+v", s)
	}
	if err := l.Export("KUR004"); !errors.Is(err, ErrDriveBusy) {
		t.Errorf("Export of a tape in an acquired drive: %v", err)
	}
	if err := l.Erase("KUR004"); !errors.Is(err, ErrDriveBusy) {
		t.Errorf("Erase of a tape in an acquired drive: %v", err)
	}
	// Once the drive is released, the tape stays in it but can be taken.
	if err := d.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load("KUR001"); !errors.Is(err, ErrReleased) {
		t.Errorf("Load after Release: %v", err)
	}
	if s := tapeByBarcode(t, l, "KUR004"); s.Location != "drive 1" {
		t.Errorf("after Release: %+v", s)
	}
	if err := l.Export("KUR004"); err != nil {
		t.Errorf("Export of a tape in a free drive: %v", err)
	}
	st, _ = l.Status()
	if st.Drives[0].Barcode != "" || st.Drives[0].Busy || st.MailSlots[0].Barcode != "KUR004" || st.Slots[3] != (SlotStatus{Number: 4}) {
		t.Errorf("after Export from drive: %+v", st)
	}

	// Everything persisted.
	l2, err := Open(l.Config().Dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := tapeByBarcode(t, l2, "KUR004"); s.State != StateExported {
		t.Errorf("reopened: %+v", s)
	}
}

func TestTapeStates(t *testing.T) {
	l := newLibrary(t, func(c *Config) { c.Slots = 5 })
	writeTo(t, l, "KUR001", 10000)
	writeTo(t, l, "KUR002", 8<<20) // up to the early-warning point
	if err := l.MarkFull("KUR003"); err != nil {
		t.Fatal(err)
	}
	// KUR004 loses both copies of its label; KUR005 one of them.
	for _, f := range []string{"KUR004/label", "KUR004/label.copy", "KUR005/label"} {
		if err := os.WriteFile(filepath.Join(l.Config().Dir, "tapes", f), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]TapeState{"KUR001": StateAppendable, "KUR002": StateFull, "KUR003": StateFull, "KUR004": StateError, "KUR005": StateBlank}
	ts, err := l.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ts {
		if s.State != want[s.Barcode] {
			t.Errorf("%s: state %s, want %s (%+v)", s.Barcode, s.State, want[s.Barcode], s)
		}
	}
	if s := ts[0]; s.Used != 10000 || s.Files != 1 {
		t.Errorf("KUR001: %+v", s)
	}
	if ts[3].Error == "" {
		t.Errorf("KUR004: no error text: %+v", ts[3])
	}
	if !strings.Contains(ts[4].Error, "label") || ts[4].Generation != 1 || ts[4].Capacity != MinTapeSize {
		t.Errorf("KUR005 (one label copy damaged): %+v, want its label read from the copy and the damage named", ts[4])
	}
	// KUR004's label is lost, its tape files still read; erasing it labels
	// it again.
	tp, err := l.OpenTape("KUR004")
	if err != nil {
		t.Fatalf("OpenTape of a tape whose label is lost: %v", err)
	}
	if lr, ok := tp.(LabelReporter); !ok || !lr.LabelLost() || !errors.Is(lr.LabelDamage(), tape.ErrBadLabel) || tp.Label().Barcode != "KUR004" {
		t.Errorf("KUR004: label %+v, not reported lost as ErrBadLabel", tp.Label())
	}
	if _, err := tp.Append("x"); !errors.Is(err, tape.ErrBadLabel) {
		t.Errorf("Append to a tape whose label is lost: %v, want ErrBadLabel", err)
	}
	tp.Close()
	if err := l.Erase("KUR004"); err != nil {
		t.Fatalf("Erase of a tape whose label is lost: %v", err)
	}
	if s := tapeByBarcode(t, l, "KUR004"); s.State != StateBlank || s.Error != "" {
		t.Errorf("KUR004 after Erase: %+v", s)
	}
	if err := l.MarkFull("NOPE"); !errors.Is(err, ErrUnknownTape) {
		t.Errorf("MarkFull of unknown tape: %v", err)
	}

	// Erase: data gone, full mark cleared, generation up.
	for _, bc := range []string{"KUR001", "KUR003"} {
		before := tapeByBarcode(t, l, bc)
		if err := l.Erase(bc); err != nil {
			t.Fatal(err)
		}
		s := tapeByBarcode(t, l, bc)
		if s.State != StateBlank || s.Files != 0 || s.Used != 0 || s.MarkedFull || s.Generation != before.Generation+1 {
			t.Errorf("%s after Erase: %+v", bc, s)
		}
	}
}

func TestAddTapes(t *testing.T) {
	l := newLibrary(t, func(c *Config) { c.Slots = 2 })
	if err := l.Export("KUR001"); err != nil {
		t.Fatal(err)
	}
	got, err := l.AddTapes(3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"KUR003", "KUR004", "KUR005"}) {
		t.Errorf("AddTapes = %v", got)
	}
	if _, err := l.AddTapes(0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("AddTapes(0): %v", err)
	}
	l2, err := Open(l.Config().Dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := l2.Config().Slots; n != 4 {
		t.Errorf("slots after growing: %d, want 4", n)
	}
	st, _ := l2.Status()
	var slots []string
	for _, s := range st.Slots {
		slots = append(slots, s.Barcode)
	}
	// The free slot 1 is filled first, then the library grows.
	if !slices.Equal(slots, []string{"KUR003", "KUR002", "KUR004", "KUR005"}) {
		t.Errorf("slots: %v", slots)
	}
	if s := tapeByBarcode(t, l2, "KUR005"); s.State != StateBlank || s.Capacity != 16<<20 {
		t.Errorf("new tape: %+v", s)
	}
	// The exported tape cannot come back: no free slot.
	if err := l2.Import("KUR001"); !errors.Is(err, ErrNoFreeSlot) {
		t.Errorf("Import with no free slot: %v", err)
	}
}

func TestSetDrive(t *testing.T) {
	l := newLibrary(t, nil)
	for _, tc := range []struct{ n, block, buf int }{
		{1, 2048, 1 << 20},
		{1, 4096 + 256, 1 << 20},
		{1, 32 << 20, 64 << 20},
		{1, 64 << 10, 64 << 10},
		{0, 64 << 10, 1 << 20},
		{3, 64 << 10, 1 << 20},
	} {
		if err := l.SetDrive(tc.n, tc.block, tc.buf); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("SetDrive(%d, %d, %d): got %v, want ErrInvalidConfig", tc.n, tc.block, tc.buf, err)
		}
	}
	if err := l.SetDrive(2, 16<<10, 32<<10); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(l.Config().Dir)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := l2.Drives()
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].BlockSize != 4<<10 || ds[0].BufferSize != 64<<10 || ds[1].BlockSize != 16<<10 || ds[1].BufferSize != 32<<10 {
		t.Errorf("drives after reopen: %+v", ds)
	}
	// The drive writes with its block size.
	d, err := l2.Acquire(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	tp, err := d.Load("KUR001")
	if err != nil {
		t.Fatal(err)
	}
	if info := writeFile(t, tp, 100000); info.BlockSize != 16<<10 {
		t.Errorf("tape file block size %d, want %d", info.BlockSize, 16<<10)
	}
}

func TestRemove(t *testing.T) {
	l := newLibrary(t, nil)
	d, err := l.Acquire(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(); !errors.Is(err, ErrDriveBusy) {
		t.Errorf("Remove with an acquired drive: %v", err)
	}
	if err := d.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Config().Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("library folder still there: %v", err)
	}
}

func TestConcurrentInventoryUpdates(t *testing.T) {
	l := newLibrary(t, nil)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, 3*workers)
	added := make(chan []string, workers)
	for i := range workers {
		wg.Go(func() {
			// Each worker has its own handle, as another process would.
			li, err := Open(l.Config().Dir)
			if err != nil {
				errs <- err
				return
			}
			bcs, err := li.AddTapes(1)
			if err != nil {
				errs <- err
				return
			}
			added <- bcs
			errs <- li.MarkFull(bcs[0])
			errs <- li.SetDrive(1+i%2, 4096*(i+1), 4096*(i+1)*2)
		})
	}
	wg.Wait()
	close(errs)
	close(added)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for b := range added {
		all = append(all, b...)
	}
	ts, err := l.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 4+workers || len(all) != workers {
		t.Fatalf("%d tapes after %d concurrent AddTapes(1), %d returned", len(ts), workers, len(all))
	}
	slotsSeen := map[int]bool{}
	for _, s := range ts {
		if slotsSeen[s.Slot] {
			t.Errorf("two tapes in slot %d", s.Slot)
		}
		slotsSeen[s.Slot] = true
		if slices.Contains(all, s.Barcode) != s.MarkedFull {
			t.Errorf("%s: marked full %v", s.Barcode, s.MarkedFull)
		}
	}
	if n := l.Config().Slots; n != 4+workers {
		t.Errorf("slots = %d", n)
	}
	ds, _ := l.Drives()
	for _, d := range ds {
		if d.BlockSize%4096 != 0 || d.BufferSize != 2*d.BlockSize {
			t.Errorf("drive settings torn: %+v", d)
		}
	}
}

func TestLoadWritable(t *testing.T) {
	l := newLibrary(t, func(c *Config) { c.Slots = 5 })
	writeTo(t, l, "KUR001", 1000)
	writeTo(t, l, "KUR002", 5000)
	writeTo(t, l, "KUR005", 8<<20) // past early warning
	d, err := l.Acquire(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	d2, err := l.Acquire(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Release()

	pick := func(exclude ...string) string {
		t.Helper()
		tp, bc, err := d.LoadWritable(exclude...)
		if err != nil {
			t.Fatalf("LoadWritable(%v): %v", exclude, err)
		}
		if tp.Label().Barcode != bc {
			t.Fatalf("LoadWritable returned tape %s named %s", tp.Label().Barcode, bc)
		}
		return bc
	}
	// Fullest appendable tape first.
	if bc := pick(); bc != "KUR002" {
		t.Errorf("first pick %s, want KUR002 (fullest appendable)", bc)
	}
	// The appendable tape in the drive beats a fuller one in a slot.
	if _, err := d.Load("KUR001"); err != nil {
		t.Fatal(err)
	}
	if bc := pick(); bc != "KUR001" {
		t.Errorf("pick with KUR001 loaded: %s", bc)
	}
	if s := tapeByBarcode(t, l, "KUR001"); s.Location != "drive 1" {
		t.Errorf("KUR001: %+v", s)
	}
	// Excluded tapes are never picked; then blank tapes by barcode.
	if bc := pick("KUR001", "KUR002"); bc != "KUR003" {
		t.Errorf("pick excluding appendable tapes: %s, want KUR003", bc)
	}
	// Marked-full tapes and tapes in other drives are never picked.
	if err := l.MarkFull("KUR002"); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Load("KUR004"); err != nil {
		t.Fatal(err)
	}
	_, _, err = d.LoadWritable("KUR001", "KUR003")
	var nt *NoTapeError
	if !errors.Is(err, ErrNoTape) || !errors.As(err, &nt) || nt.Library != "test" || nt.Pool || err.Error() != "no writable tape in library test" {
		t.Errorf("LoadWritable with nothing writable: %v", err)
	}
	// Exported tapes are never picked.
	if err := d.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := l.Export("KUR003"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.LoadWritable("KUR001"); !errors.Is(err, ErrNoTape) {
		t.Errorf("LoadWritable with only an exported tape left: %v", err)
	}
	if bc := pick(); bc != "KUR001" {
		t.Errorf("last pick %s, want KUR001", bc)
	}
}
