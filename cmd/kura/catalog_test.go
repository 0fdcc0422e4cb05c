package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// catalogBackup is `kura catalog backup --json`.
type catalogBackup struct {
	JobID         int64  `json:"job_id"`
	Library       string `json:"library"`
	Barcode       string `json:"barcode"`
	File          int    `json:"file"`
	Savesets      int    `json:"savesets"`
	LastSavesetID int64  `json:"last_saveset_id"`
	SHA256        string `json:"sha256"`
}

// The disaster-recovery steps of docs/operations.md as a user runs them:
// back up the catalog, lose it, restore it; the savesets made before the
// catalog backup come from it, the one made after from the tape scan.
func TestCatalogDisasterRecovery(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	full := k.backup(src)
	want1 := readTree(t, src)

	var rec catalogBackup
	k.json(0, &rec, "catalog", "backup", "--json")
	if rec.Barcode == "" || rec.File < 1 || rec.Savesets != 1 || rec.LastSavesetID != full.SavesetID || len(rec.SHA256) != 64 {
		t.Fatalf("catalog backup --json: %+v", rec)
	}
	r := k.ok("catalog", "backup")
	if !strings.Contains(r.stdout, "Catalog backed up to tape "+rec.Barcode) {
		t.Errorf("catalog backup says:\n%s", r)
	}
	writeTree(t, src, map[string]string{"later.txt": "written after the catalog backup\n"})
	incr := k.backup(src, "--level", "incr")
	want2 := readTree(t, src)

	r = k.expect(exitFailure, "catalog", "restore")
	if !strings.Contains(r.stderr, "--force") {
		t.Errorf("restore over a catalog with savesets should point at --force:\n%s", r)
	}
	k.expect(exitUsage, "catalog", "restore", "--file", "3")

	// The server is lost: its catalog and its index cache; the library
	// folder survives.
	for _, p := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm", "index"} {
		if err := os.RemoveAll(filepath.Join(k.home, p)); err != nil {
			t.Fatal(err)
		}
	}
	r = k.ok("catalog", "list")
	if strings.Count(r.stdout, rec.Barcode) != 2 || !strings.Contains(r.stdout, "label ok") {
		t.Errorf("catalog list should show both catalog backups:\n%s", r)
	}
	r = k.ok("catalog", "restore")
	for _, s := range []string{"Catalog restored from tape " + rec.Barcode, "1 saveset (last ID 1)", "rebuilt saveset " + itoa64(incr.SavesetID)} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("catalog restore should say %q:\n%s", s, r)
		}
	}
	var sets []struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	k.json(0, &sets, "savesets", "--json")
	if len(sets) != 2 || sets[0].ID != full.SavesetID || sets[1].ID != incr.SavesetID || sets[0].Status != "complete" || sets[1].Status != "complete" {
		t.Fatalf("savesets after the restore: %+v", sets)
	}
	r = k.ok("savesets")
	if !strings.Contains(r.stdout, "complete") {
		t.Errorf("kura savesets:\n%s", r)
	}
	out := filepath.Join(k.dir, "out1")
	k.ok("restore", itoa64(full.SavesetID), "--to", out)
	sameTree(t, want1, readTree(t, restoredAt(out, src)))
	out = filepath.Join(k.dir, "out2")
	k.ok("restore", itoa64(incr.SavesetID), "--to", out)
	sameTree(t, want2, readTree(t, restoredAt(out, src)))

	r = k.ok("tape", "scan", rec.Barcode)
	if !strings.Contains(r.stdout, "catalog backup of ") || strings.Contains(r.stdout, "unknown") {
		t.Errorf("tape scan should list the catalog backups as such:\n%s", r)
	}
	r = k.ok("jobs", "list")
	if !strings.Contains(r.stdout, "catalog") {
		t.Errorf("jobs list should show the catalog backup jobs:\n%s", r)
	}
}

// With --no-scan the restore names the tapes to scan, and `kura tape scan`
// brings the later saveset back; --json says the same.
func TestCatalogRestoreNoScanJSON(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	k.backup(src)
	var rec catalogBackup
	k.json(0, &rec, "catalog", "backup", "--json")
	later := k.backup(src)
	for _, p := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm", "index"} {
		if err := os.RemoveAll(filepath.Join(k.home, p)); err != nil {
			t.Fatal(err)
		}
	}
	var res struct {
		From struct {
			Barcode string `json:"barcode"`
			File    int    `json:"file"`
		} `json:"from"`
		Rescan  []string `json:"rescan"`
		Rebuilt []int64  `json:"rebuilt"`
	}
	k.json(0, &res, "catalog", "restore", "--no-scan", "--tape", rec.Barcode, "--file", itoa64(int64(rec.File)), "--json")
	if res.From.Barcode != rec.Barcode || res.From.File != rec.File || len(res.Rescan) != 1 || res.Rescan[0] != rec.Barcode || len(res.Rebuilt) != 0 {
		t.Fatalf("catalog restore --no-scan --json: %+v", res)
	}
	k.expect(exitUsage, "saveset", "recipe", itoa64(later.SavesetID)) // not in the restored catalog: no such saveset
	r := k.ok("tape", "scan", rec.Barcode)
	if !strings.Contains(r.stdout, "1 saveset records rebuilt") {
		t.Errorf("tape scan:\n%s", r)
	}
	k.ok("saveset", "recipe", itoa64(later.SavesetID))
}
