package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	kib = 1024
	mib = 1024 * kib
)

type libRow struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Tapes  int    `json:"tapes"`
	Error  string `json:"error"`
	Config struct {
		Slots         int    `json:"slots"`
		Drives        int    `json:"drives"`
		TapeSize      int64  `json:"tape_size_bytes"`
		BlockSize     int    `json:"block_size_bytes"`
		BufferSize    int    `json:"buffer_size_bytes"`
		BarcodePrefix string `json:"barcode_prefix"`
	} `json:"config"`
}

type driveRow struct {
	Library    string `json:"library"`
	Number     int    `json:"number"`
	BlockSize  int    `json:"block_size_bytes"`
	BufferSize int    `json:"buffer_size_bytes"`
}

func (k *kura) libraries() map[string]libRow {
	k.t.Helper()
	var rows []libRow
	k.json(0, &rows, "vtl", "list", "--json")
	m := map[string]libRow{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}

func TestLibraryTapeAndDriveVerbs(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)

	k.ok("vtl", "create", "lib2", "--slots", "3", "--drives", "2", "--tape-size", "64MiB",
		"--block-size", "32KiB", "--buffer", "257KiB", "--barcode-prefix", "TST")
	lib, ok := k.libraries()["lib2"]
	if !ok {
		t.Fatal("vtl list --json does not show lib2")
	}
	c := lib.Config
	if c.Slots != 3 || c.Drives != 2 || c.TapeSize != 64*mib || c.BlockSize != 32*kib || c.BufferSize != 257*kib ||
		c.BarcodePrefix != "TST" || lib.Tapes != 3 || lib.Error != "" {
		t.Errorf("lib2 as listed: %+v", lib)
	}
	k.expect(exitFailure, "vtl", "create", "lib2")

	tapes := k.tapes("--vtl", "lib2")
	if len(tapes) != 3 {
		t.Errorf("tape list --vtl lib2: %d tapes, want 3: %+v", len(tapes), tapes)
	}
	for _, bc := range []string{"TST001", "TST002", "TST003"} {
		tp, ok := tapes[bc]
		if !ok || tp.State != "blank" || tp.Library != "lib2" || tp.Capacity != 64*mib || len(tp.Savesets) != 0 {
			t.Errorf("tape %s: %+v (present %v), want a blank 64 MiB tape of lib2", bc, tp, ok)
		}
	}

	// Drive tuning persists.
	k.ok("drive", "set", "lib2/1", "--block-size", "1MiB", "--buffer", "32769KiB")
	var drives []driveRow
	k.json(0, &drives, "drive", "list", "--vtl", "lib2", "--json")
	want := []driveRow{{"lib2", 1, 1 * mib, 32769 * kib}, {"lib2", 2, 32 * kib, 257 * kib}}
	if !slices.Equal(drives, want) {
		t.Errorf("drive list --json after drive set:\n got %+v\nwant %+v", drives, want)
	}
	k.expect(exitUsage, "drive", "set", "lib2/3", "--buffer", "1MiB") // no such drive

	// More tapes.
	r := k.ok("tape", "add", "--vtl", "lib2", "--count", "2")
	if !strings.Contains(r.stdout, "TST004") || !strings.Contains(r.stdout, "TST005") {
		t.Errorf("tape add should name the new tapes:\n%s", r)
	}
	tapes = k.tapes("--vtl", "lib2")
	for _, bc := range []string{"TST004", "TST005"} {
		if tp := tapes[bc]; tp.State != "blank" || !strings.HasPrefix(tp.Location, "slot ") {
			t.Errorf("added tape %s: %+v, want blank in a slot", bc, tp)
		}
	}
	if len(tapes) != 5 {
		t.Errorf("%d tapes after adding 2 to 3", len(tapes))
	}

	// Export and import move a tape to the mail slot and back.
	home := tapes["TST002"].Location
	k.ok("tape", "export", "TST002")
	if tp := k.tapes("--vtl", "lib2")["TST002"]; tp.State != "exported" || !strings.HasPrefix(tp.Location, "mail slot") {
		t.Errorf("after export: %+v, want exported in a mail slot", tp)
	}
	k.expect(exitFailure, "tape", "export", "TST002")
	k.ok("tape", "import", "TST002")
	if tp := k.tapes("--vtl", "lib2")["TST002"]; tp.State != "blank" || tp.Location != home {
		t.Errorf("after import: %+v, want blank in %s", tp, home)
	}
	k.expect(exitFailure, "tape", "import", "TST002")

	// Back up to lib2.
	f := k.backup("--vtl", "lib2", src)
	if len(f.Tapes) != 1 || !strings.HasPrefix(f.Tapes[0], "TST") {
		t.Fatalf("backup --vtl lib2 wrote to %v", f.Tapes)
	}
	bc := f.Tapes[0]

	show := k.ok("tape", "show", bc)
	for _, s := range []string{"tape " + bc, "label", "file 1", "file 2", "filemark", "end of data"} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("tape show should draw %q:\n%s", s, show)
		}
	}
	var shown struct {
		Label map[string]any `json:"label"`
		Files []any          `json:"files"`
		Used  int64          `json:"used_bytes"`
	}
	k.json(0, &shown, "tape", "show", bc, "--json")
	if len(shown.Files) != 2 || shown.Used <= 0 || shown.Label == nil {
		t.Errorf("tape show --json: %+v, want a label, 2 tape files (data, index) and used > 0", shown)
	}

	// A tape or library holding an unexpired saveset is not destroyed by accident.
	r = k.expect(exitFailure, "tape", "erase", bc)
	if !strings.Contains(r.stderr, "unexpired") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("erase should refuse and mention --force:\n%s", r)
	}
	r = k.expect(exitFailure, "vtl", "rm", "lib2")
	if !strings.Contains(r.stderr, "unexpired") {
		t.Errorf("vtl rm should refuse while savesets live on it:\n%s", r)
	}
	if tp := k.tapes("--vtl", "lib2")[bc]; !slices.Contains(tp.Savesets, f.SavesetID) {
		t.Fatalf("after refusals, tape %s: %+v, want it to still hold saveset %d", bc, tp, f.SavesetID)
	}
	out := filepath.Join(k.dir, "out")
	k.ok("restore", itoa64(f.SavesetID), "--to", out)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(out, src)))

	r = k.ok("tape", "erase", bc, "--force")
	if !strings.Contains(r.stdout, "expired") {
		t.Errorf("erase --force should say which savesets expired:\n%s", r)
	}
	if tp := k.tapes("--vtl", "lib2")[bc]; tp.State != "blank" || len(tp.Savesets) != 0 {
		t.Errorf("after erase --force: %+v, want blank with no savesets", tp)
	}
	r = k.expect(exitFailure, "restore", itoa64(f.SavesetID), "--to", filepath.Join(k.dir, "out2"))
	if !strings.Contains(r.stderr, "expired") {
		t.Errorf("restoring an erased saveset should say it expired:\n%s", r)
	}

	// Nothing unexpired left: now the library can go.
	k.ok("vtl", "rm", "lib2")
	if _, ok := k.libraries()["lib2"]; ok {
		t.Error("vtl list still shows lib2 after vtl rm")
	}
	if _, err := os.Stat(lib.Dir); !os.IsNotExist(err) {
		t.Errorf("library folder %s after vtl rm: %v", lib.Dir, err)
	}
}

// TestEveryListAndShowVerbPrintsJSON: --json output parses, has the right
// shape, and empty lists are [] rather than null.
func TestEveryListAndShowVerbPrintsJSON(t *testing.T) {
	t.Parallel()
	k := newKura(t)

	for _, args := range [][]string{
		{"jobs", "list"}, {"savesets"}, {"selection", "list"}, {"find", "anything"}, {"vtl", "list"}, {"drive", "list"},
	} {
		var v []json.RawMessage
		r := k.json(0, &v, append(args, "--json")...)
		if strings.TrimSpace(r.stdout) != "[]" {
			t.Errorf("empty list should print []:\n%s", r)
		}
	}

	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	f := k.backup(src)
	id := itoa64(f.SavesetID)
	k.ok("selection", "create", "s", src)
	bc := f.Tapes[0]

	lists := [][]string{
		{"jobs", "list"}, {"savesets"}, {"savesets", "--tape", bc}, {"selection", "list"}, {"find", "a.txt"},
		{"vtl", "list"}, {"tape", "list"}, {"tape", "list", "--vtl", "default"}, {"drive", "list"},
		{"ls", id}, {"ls", id, indexPath(src)}, {"tape", "scan", bc},
	}
	for _, args := range lists {
		var v []json.RawMessage
		k.json(0, &v, append(args, "--json")...)
		if len(v) == 0 {
			t.Errorf("kura %s --json: empty list", strings.Join(args, " "))
		}
	}
	shows := [][]string{
		{"jobs", "show", itoa64(f.JobID)}, {"selection", "show", "s"}, {"vtl", "show", "default"},
		{"tape", "show", bc}, {"verify", id}, {"restore", id, "--to", filepath.Join(k.dir, "out")},
		{"backup", "--level", "incr", src},
	}
	for _, args := range shows {
		var v map[string]json.RawMessage
		k.json(0, &v, append(args, "--json")...)
		if len(v) == 0 {
			t.Errorf("kura %s --json: empty object", strings.Join(args, " "))
		}
	}
}

// A home that other users can read is named on stderr when a command
// starts; the command still works.
func TestOpenHomeWarnsWhenOthersCanRead(t *testing.T) {
	k := newKura(t)
	if r := k.ok("vtl", "list"); strings.Contains(r.stderr, "warning") {
		t.Fatalf("a private home warned:\n%s", r)
	}
	if err := os.Chmod(k.home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := k.ok("vtl", "list")
	if !strings.Contains(r.stderr, "warning: Kura home "+k.home+" is open to other users (mode 0755)") {
		t.Fatalf("no warning:\n%s", r)
	}
}

// TestVtlCreateChangerChecksDevices: `kura vtl create --changer --drive`
// checks the devices before registering anything: a missing changer or
// drive, or a changer mtx cannot read (or no mtx at all), is an error
// naming it (exit 1) and leaves no library; a drive without a changer, or
// slots for a changer, is a usage error (exit 2).
func TestVtlCreateChangerChecksDevices(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	notChanger := filepath.Join(k.dir, "not-a-changer")
	if err := os.WriteFile(notChanger, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(k.dir, "sg99")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--changer", missing, "--drive", "/dev/null"}, 1, "changer " + missing + ": no such device"},
		{[]string{"--changer", notChanger, "--drive", filepath.Join(k.dir, "nst9")}, 1, "drive 1 (" + filepath.Join(k.dir, "nst9") + "): no such device"},
		{[]string{"--changer", notChanger, "--drive", "/dev/null"}, 1, "changer " + notChanger + ": tape changer failed"},
		{[]string{"--drive", "/dev/null"}, 2, "give its changer too"},
		{[]string{"--changer", notChanger, "--drive", "/dev/null", "--slots", "4"}, 2, "slots are its changer's"},
	} {
		r := k.expect(c.code, append([]string{"vtl", "create", "lto"}, c.args...)...)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("kura vtl create lto %q says %q, want %q", c.args, r.stderr, c.want)
		}
		if _, ok := k.libraries()["lto"]; ok {
			t.Fatalf("kura vtl create lto %q registered the library", c.args)
		}
		if _, err := os.Stat(filepath.Join(k.home, "vtl", "lto")); !os.IsNotExist(err) {
			t.Fatalf("kura vtl create lto %q left its folder (%v)", c.args, err)
		}
	}
}
