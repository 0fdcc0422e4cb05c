package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/library"
)

// tapeOf decodes one tape of `tape ... --json`.
func tapeOf(t *testing.T, r result) api.Tape {
	t.Helper()
	var tp api.Tape
	if err := json.Unmarshal([]byte(r.stdout), &tp); err != nil {
		t.Fatalf("%v:\n%s", err, r)
	}
	return tp
}

// The tape and drive verbs print the same and exit the same through a
// server as locally on the server's home; a change made through the server
// is seen locally; load and unload are refused (conflict, exit 1) while a
// job or another process holds the drive, and the error names the job.
func TestTapeVerbsSameThroughServerAndLocally(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)
	src := filepath.Join(local.dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("hello tapes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The test's own library, which the server's own work (a catalog
	// backup to the default library at start) leaves alone. A local backup
	// on the server's home: LBT001 holds saveset 1 and stays in drive 1.
	admin.ok("vtl", "create", "lib2", "--slots", "6", "--drives", "2", "--tape-size", "64MiB", "--barcode-prefix", "LBT")
	local.ok("backup", "--vtl", "lib2", "--drive", "1", src)

	// Changes through the server, seen locally.
	if r := admin.ok("tape", "add", "--vtl", "lib2", "--count", "2"); r.stdout != "Added LBT007, LBT008\n" {
		t.Fatalf("tape add through the server:\n%s", r)
	}
	if r := admin.ok("tape", "export", "LBT008"); r.stdout != "Tape LBT008 is in the mail slot (offline).\n" {
		t.Fatalf("tape export through the server:\n%s", r)
	}
	if tp := tapeOf(t, local.ok("tape", "import", "LBT008", "--json")); tp.Slot == 0 || tp.MailSlot != 0 || tp.Barcode != "LBT008" {
		t.Fatalf("tape import --json: %+v", tp)
	}
	if tp := tapeOf(t, admin.ok("tape", "export", "LBT008", "--json")); tp.MailSlot == 0 || tp.Location != "mail slot 1" {
		t.Fatalf("tape export --json through the server: %+v", tp)
	}
	if r := local.ok("tape", "list"); !strings.Contains(r.stdout, "LBT008") || !strings.Contains(r.stdout, "mail slot") {
		t.Errorf("a tape exported through the server is not in a mail slot locally:\n%s", r)
	}
	if r := admin.ok("drive", "set", "lib2/2", "--block-size", "128KiB"); r.stdout != "Drive lib2/2: block 128 KiB, buffer 8193 KiB\n" {
		t.Errorf("drive set through the server:\n%s", r)
	}
	if r := admin.ok("tape", "unload", "LBT001"); r.stdout != "Tape LBT001 is back in slot 1.\n" {
		t.Errorf("tape unload through the server:\n%s", r)
	}
	if r := admin.ok("tape", "load", "LBT002", "--drive", "2"); r.stdout != "Tape LBT002 is in drive 2 of library lib2.\n" {
		t.Errorf("tape load through the server:\n%s", r)
	}

	if r := admin.ok("tape", "label", "LBT006", "--pool", "offsite"); r.stdout != "Tape LBT006 is in pool offsite.\n" {
		t.Errorf("tape label through the server:\n%s", r)
	}
	if tp := tapeOf(t, local.ok("tape", "label", "LBT007", "--pool", "offsite", "--json")); tp.Pool != "offsite" {
		t.Errorf("tape label --json: %+v", tp)
	}
	admin.ok("tape", "label", "LBT007", "--pool", "scratch")

	for _, c := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{[]string{"tape", "list", "--vtl", "lib2"}, 0, "drive 2"},
		{[]string{"tape", "list", "--vtl", "lib2", "--json"}, 0, `"location": "drive 2"`},
		{[]string{"tape", "list", "--vtl", "lib2"}, 0, "LBT008"},
		{[]string{"tape", "list", "--vtl", "nolib"}, exitUsage, "no library named \"nolib\" (see `kura vtl list`)"},
		{[]string{"tape", "show", "LBT001"}, 0, "file 1: complete"},
		{[]string{"tape", "show", "LBT001", "--json"}, 0, `"tag": "saveset 1`},
		{[]string{"tape", "show", "NOPE01"}, exitUsage, "no tape NOPE01 (see `kura tape list`)"},
		{[]string{"tape", "export", "NOPE01"}, exitUsage, "no tape NOPE01"},
		{[]string{"tape", "list", "--vtl", "lib2"}, 0, "offsite"},
		{[]string{"tape", "list", "--vtl", "lib2", "--pool", "offsite", "--json"}, 0, `"barcode": "LBT006"`},
		{[]string{"tape", "label", "LBT006", "--pool", "offsite"}, 0, "Tape LBT006 is in pool offsite."},
		{[]string{"tape", "label", "LBT007", "--pool", "scratch"}, 0, "Tape LBT007 is in pool scratch."},
		{[]string{"tape", "label", "LBT001", "--pool", "offsite"}, exitFailure, "tape LBT001 holds unexpired savesets [1] of pool scratch"},
		{[]string{"tape", "label", "LBT006"}, exitUsage, "--pool NAME"},
		{[]string{"tape", "label", "LBT006", "--pool", "off\x01site"}, exitUsage, "pool: \"off\\x01site\" contains a control character"},
		{[]string{"tape", "label", "NOPE01", "--pool", "offsite"}, exitUsage, "no tape NOPE01 (see `kura tape list`)"},
		{[]string{"tape", "export", "LBT008"}, exitFailure, "exported"},
		{[]string{"tape", "import", "LBT003"}, exitFailure, "not in a mail slot"},
		{[]string{"tape", "load", "LBT008"}, exitFailure, "exported"},
		{[]string{"tape", "load", "LBT002", "--drive", "2"}, 0, "Tape LBT002 is in drive 2 of library lib2."},
		{[]string{"tape", "load", "LBT003", "--drive", "9"}, exitUsage, "no drive 9 in library lib2"},
		{[]string{"tape", "unload", "LBT003"}, exitFailure, "tape LBT003: it is in slot 3"},
		{[]string{"tape", "unload", "NOPE01"}, exitUsage, "no tape NOPE01"},
		{[]string{"drive", "list", "--vtl", "lib2"}, 0, "128 KiB"},
		{[]string{"drive", "list", "--vtl", "lib2", "--json"}, 0, `"block_size_bytes": 131072`},
		{[]string{"drive", "list", "--vtl", "nolib"}, exitUsage, "no library named \"nolib\" (see `kura vtl list`)"},
		{[]string{"drive", "set", "lib2/2", "--block-size", "128KiB"}, 0, "Drive lib2/2: block 128 KiB"},
		{[]string{"drive", "set", "lib2/9", "--block-size", "128KiB"}, exitUsage, "no drive 9 in library lib2"},
		{[]string{"drive", "set", "nolib/1", "--block-size", "128KiB"}, exitUsage, "no library named \"nolib\""},
		{[]string{"drive", "set", "lib2/1", "--block-size", "4KiB", "--buffer", "8KiB"}, 0, "block 4 KiB, buffer 8 KiB"},
	} {
		r := sameBothWays(t, local, admin, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("want exit %d and %q:\n%s", c.code, c.want, r)
		}
	}

	// A job holds drive 1 (a lease in the catalog, as every job takes its
	// drives) with LBT003 in it: load and unload on it are refused, naming
	// the job.
	admin.ok("tape", "load", "LBT003", "--drive", "1")
	cat, err := catalog.Open(home.CatalogPath(local.home))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	reg, err := job.NewRegistry(cat, job.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	took, finish := make(chan error, 1), make(chan struct{})
	h, err := reg.Start(context.Background(), job.Spec{Kind: job.Backup}, func(ctx context.Context, r *job.Run) error {
		took <- r.TakeDrive("lib2", 1)
		<-finish
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-took; err != nil {
		t.Fatal(err)
	}
	held := fmt.Sprintf("drive 1 of library lib2 is in use by job %d (backup)", h.ID())
	for _, args := range [][]string{
		{"tape", "load", "LBT004", "--drive", "1"},
		{"tape", "load", "LBT003", "--drive", "2"}, // taken from the held drive
		{"tape", "unload", "LBT003"},
		{"tape", "export", "LBT003"},
	} {
		if r := sameBothWays(t, local, admin, args...); r.code != exitFailure || !strings.Contains(r.stderr, held) {
			t.Errorf("want exit 1 and %q:\n%s", held, r)
		}
	}
	// Drive 2 is free: tapes move in and out of it.
	admin.ok("tape", "load", "LBT004", "--drive", "2")
	admin.ok("tape", "unload", "LBT004")
	close(finish)
	if res := h.Wait(); res.State != job.Succeeded {
		t.Fatalf("the holding job: %+v", res)
	}
	admin.ok("tape", "unload", "LBT003")
	if r := sameBothWays(t, local, admin, "tape", "load", "LBT004", "--drive", "1"); r.code != 0 {
		t.Errorf("a drive its job gave back is refused:\n%s", r)
	}

	// Another process holds drive 2's lock without a lease: refused too.
	rec, err := cat.Library("lib2")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := library.Open(rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := lib.Acquire(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if r := sameBothWays(t, local, admin, "tape", "load", "LBT005", "--drive", "2"); r.code != exitFailure ||
		!strings.Contains(r.stderr, "drive 2 of library lib2 is in use by another process") {
		t.Errorf("a drive another process holds:\n%s", r)
	}
	if err := d.Release(); err != nil {
		t.Fatal(err)
	}
	var tapes []api.Tape
	local.json(0, &tapes, "tape", "list", "--json")
	where := map[string]string{}
	for _, tp := range tapes {
		where[tp.Barcode] = tp.Location
	}
	var offsite, scratch []api.Tape
	admin.json(0, &offsite, "tape", "list", "--pool", "offsite", "--json")
	admin.json(0, &scratch, "tape", "list", "--vtl", "lib2", "--pool", "scratch", "--json")
	if len(offsite) != 1 || offsite[0].Barcode != "LBT006" || len(scratch) != 7 {
		t.Errorf("tape list --pool: offsite %v, %d in scratch (want LBT006, and the 7 others)", offsite, len(scratch))
	}
	pools := map[string]string{}
	for _, tp := range tapes {
		pools[tp.Barcode] = tp.Pool
	}
	if pools["LBT006"] != "offsite" || pools["LBT007"] != "" || pools["LBT001"] != "" {
		t.Errorf("the pools are not what the labels left: %v", pools)
	}
	if where["LBT003"] != "slot 3" || where["LBT004"] != "drive 1" || where["LBT005"] != "slot 5" || where["LBT002"] != "slot 2" {
		t.Errorf("the tapes are not where the moves left them: %v", where)
	}
}
