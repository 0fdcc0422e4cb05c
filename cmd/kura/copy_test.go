package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyToAnotherLibrary(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	want := readTree(t, src)
	f := k.backup(src)
	id := itoa64(f.SavesetID)
	k.ok("vtl", "create", "offsite")

	r := k.expect(exitUsage, "copy", id)
	if !strings.Contains(r.stderr, "--to-vtl") {
		t.Errorf("copy without --to-vtl should say what is missing:\n%s", r)
	}

	var c figures
	k.json(0, &c, "copy", id, "--to-vtl", "offsite", "--json")
	if c.Kind != "copy" || c.SavesetID != f.SavesetID || c.Status != "completed" || len(c.Tapes) != 1 || c.SourceBytes == 0 {
		t.Fatalf("copy --json figures: %+v", c)
	}
	if !strings.Contains(c.Note, "copy 1 of saveset "+id+" on library offsite") {
		t.Errorf("copy --json note %q", c.Note)
	}

	var sets []struct {
		ID     int64                      `json:"id"`
		Parts  []struct{ Barcode string } `json:"parts"`
		Copies []struct {
			Copy    int    `json:"copy"`
			Library string `json:"library"`
			Parts   []struct {
				Barcode string `json:"barcode"`
			} `json:"parts"`
			IndexPart struct {
				Barcode string `json:"barcode"`
			} `json:"index_part"`
		} `json:"copies"`
	}
	k.json(0, &sets, "savesets", "--json")
	if len(sets) != 1 || len(sets[0].Copies) != 1 {
		t.Fatalf("savesets --json after a copy: %+v", sets)
	}
	cp := sets[0].Copies[0]
	if cp.Copy != 1 || cp.Library != "offsite" || len(cp.Parts) != 1 || cp.Parts[0].Barcode != c.Tapes[0] || cp.IndexPart.Barcode == "" {
		t.Errorf("the copy in savesets --json: %+v (job tapes %v)", cp, c.Tapes)
	}

	r = k.expect(exitFailure, "copy", id, "--to-vtl", "offsite")
	if !strings.Contains(r.stderr, "already has a copy on library offsite") {
		t.Errorf("a second copy to the same library:\n%s", r)
	}

	// With the saveset's own tape offline, the restore reads the copy.
	k.ok("tape", "export", sets[0].Parts[0].Barcode)
	out := filepath.Join(k.dir, "out")
	k.ok("restore", id, "--to", out)
	sameTree(t, want, readTree(t, restoredAt(out, src)))
	// The copy verifies on its own, and browsing reads its index.
	if r := k.ok("verify", id, "--copy", "1"); !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("verify --copy 1:\n%s", r)
	}
	// Without the cached index and with the saveset's own tape exported,
	// ls and find read the copy's index.
	if err := os.Remove(filepath.Join(k.home, "index", itoa64(sets[0].ID)+".idx")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if r := k.ok("find", "*"); !strings.Contains(r.stdout, strings.TrimPrefix(src, "/")) {
		t.Fatalf("find with the saveset's own tape exported:\n%s", r)
	}
	if err := os.Remove(filepath.Join(k.home, "index", itoa64(sets[0].ID)+".idx")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if names := k.lsNames(sets[0].ID, strings.TrimPrefix(src, "/")); len(names) == 0 {
		t.Fatal("ls of a saveset whose own tape is exported lists nothing")
	}
	k.expect(exitUsage, "verify", id, "--copy", "7") // no such copy
}
