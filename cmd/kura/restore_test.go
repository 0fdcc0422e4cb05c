package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIncrementalThenRestore(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{
		"a.txt": "version 1\n", "b.txt": "bee\n", "sub/c.txt": "sea\n", "gone.txt": "bye\n",
	})
	before := readTree(t, src)
	full := k.backup(src)

	// Change one file (size and mtime), add one, delete one.
	a2 := "version 2, longer\n"
	writeTree(t, src, map[string]string{"a.txt": a2, "new.txt": "new\n"})
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(src, "a.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(src, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, src)

	incr := k.backup("--level", "incr", src)
	if incr.Level != "incr" || incr.Note != "" || incr.SavesetID <= full.SavesetID {
		t.Errorf("incremental: level %q note %q saveset %d (full was %d)", incr.Level, incr.Note, incr.SavesetID, full.SavesetID)
	}
	if want := int64(len(a2) + len("new\n")); incr.SourceBytes != want {
		t.Errorf("incremental read %d bytes, want %d: only the changed and new files", incr.SourceBytes, want)
	}

	// --latest: the incremental's moment, with the unchanged files read from the full.
	out := filepath.Join(k.dir, "latest")
	k.ok("restore", "--latest", "--to", out)
	sameTree(t, after, readTree(t, restoredAt(out, src)))

	// The full's own moment: the old a.txt and gone.txt, no new.txt.
	out = filepath.Join(k.dir, "full")
	k.ok("restore", itoa64(full.SavesetID), "--to", out)
	sameTree(t, before, readTree(t, restoredAt(out, src)))

	// One file of the incremental.
	out = filepath.Join(k.dir, "one")
	k.ok("restore", itoa64(incr.SavesetID), "--include", indexPath(filepath.Join(src, "new.txt")), "--to", out)
	sameTree(t, map[string]string{"new.txt": "new\n"}, readTree(t, restoredAt(out, src)))

	// A folder of the incremental whose file lives in the full.
	out = filepath.Join(k.dir, "folder")
	k.ok("restore", itoa64(incr.SavesetID), "--include", indexPath(filepath.Join(src, "sub")), "--to", out)
	sameTree(t, map[string]string{"sub/": "", "sub/c.txt": "sea\n"}, readTree(t, restoredAt(out, src)))

	// The same folder as an exact path, as the console sends ticks; a
	// --path that is not clean is a usage error.
	out = filepath.Join(k.dir, "exact")
	k.ok("restore", itoa64(incr.SavesetID), "--path", filepath.Join(src, "sub"), "--to", out)
	sameTree(t, map[string]string{"sub/": "", "sub/c.txt": "sea\n"}, readTree(t, restoredAt(out, src)))
	if r := k.expect(exitUsage, "restore", itoa64(incr.SavesetID), "--path", src+"/../etc", "--to", out); !strings.Contains(r.stderr, "not a clean path") {
		t.Errorf("restore --path with '..' should say it is not clean:\n%s", r)
	}

	// --at before any backup: a clear error, nothing restored.
	out = filepath.Join(k.dir, "at")
	r := k.expect(exitUsage, "restore", "--at", "2000-01-01 00:00", "--to", out) // names no saveset
	if !strings.Contains(r.stderr, "no complete saveset") {
		t.Errorf("restore --at before any backup should say no saveset matches:\n%s", r)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("a failed restore wrote %d entries into %s", len(ents), out)
	}

	// An incremental with no full before it runs a full and says so.
	other := filepath.Join(k.dir, "other")
	writeTree(t, other, map[string]string{"x.txt": "x\n"})
	f := k.backup("--level", "incr", other)
	if f.Level != "full" || f.Note == "" {
		t.Errorf("incr without a full: level %q note %q, want full and a note", f.Level, f.Note)
	}
}

func TestRestoreFromExportedTapeNamesTheBarcode(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	f := k.backup(src)
	barcode := f.Tapes[0]

	k.ok("tape", "export", barcode)
	out := filepath.Join(k.dir, "out")
	r := k.expect(exitFailure, "restore", itoa64(f.SavesetID), "--to", out)
	if !strings.Contains(r.stderr, barcode) || !strings.Contains(r.stderr, "import") {
		t.Errorf("the error should name tape %s and say to import it:\n%s", barcode, r)
	}

	k.ok("tape", "import", barcode)
	k.ok("restore", itoa64(f.SavesetID), "--to", out)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(out, src)))
}

// TestDisasterRecovery: the home (catalog, cached indexes) is lost; the
// library folder alone brings the files back.
func TestDisasterRecovery(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	libDir := filepath.Join(k.dir, "offsite", "dr")

	k.ok("vtl", "create", "dr", "--dir", libDir, "--slots", "2", "--drives", "1", "--tape-size", "64MiB")
	f := k.backup("--vtl", "dr", src)
	if len(f.Tapes) != 1 {
		t.Fatalf("tapes %v, want one", f.Tapes)
	}
	barcode := f.Tapes[0]

	if err := os.RemoveAll(k.home); err != nil {
		t.Fatal(err)
	}
	r := k.ok("tape", "scan", barcode, "--dir", libDir)
	if !strings.Contains(r.stdout, "1 saveset records rebuilt from tape "+barcode) {
		t.Errorf("scan should report one saveset rebuilt:\n%s", r)
	}
	out := filepath.Join(k.dir, "out")
	k.ok("restore", itoa64(f.SavesetID), "--to", out)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(out, src)))
}

// TestRestoreNeverOverwritesSilently: `kura restore ID` alone is a usage
// error that writes nothing; the original files are written over only with
// --in-place, and then as --overwrite says.
func TestRestoreNeverOverwritesSilently(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "backed up\n"})
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(src, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	f := k.backup(src)
	writeTree(t, src, map[string]string{"a.txt": "live edit\n"})
	live := readTree(t, src)
	id := itoa64(f.SavesetID)

	for _, args := range [][]string{{"restore", id}, {"restore", "--latest"}, {"restore", id, "--in-place", "--to", k.dir + "/x"}} {
		r := k.expect(exitUsage, args...)
		if !strings.Contains(r.stderr, "--to") || !strings.Contains(r.stderr, "--in-place") {
			t.Errorf("the error should name --to and --in-place:\n%s", r)
		}
	}
	if h := k.ok("restore", "--help"); !strings.Contains(h.stdout, "there is no default") || !strings.Contains(h.stdout, "default always") {
		t.Errorf("restore --help should say there is no default target and what --overwrite defaults to:\n%s", h.stdout)
	}
	sameTree(t, live, readTree(t, src))

	k.ok("restore", id, "--in-place", "--overwrite", "older")
	sameTree(t, live, readTree(t, src)) // the live file is newer
	k.ok("restore", id, "--in-place")
	sameTree(t, map[string]string{"a.txt": "backed up\n"}, readTree(t, src))
}
