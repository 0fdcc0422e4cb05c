package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// A policy with a copy step writes a second copy to another library; with
// the first copy's tapes exported, a restore through an agent reads the
// second copy.
func TestPolicyCopyStepAndRestoreFromCopyThroughAgent(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	env := r.srv.Env()
	if _, err := env.CreateLibrary(library.Config{Name: "offsite", Slots: 2, Drives: 1, TapeSize: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	makeTree(t, src, 8, 5)
	if err := env.Catalog.CreateSelection(catalog.Selection{Client: "c1", Name: "data", Paths: []string{src}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Catalog.CreatePolicy(&catalog.Policy{Name: "p", Client: "c1", Selection: "data", KeepGenerations: 2,
		Pool: "p", CopyTo: "offsite"}); err != nil {
		t.Fatal(err)
	}
	ids, err := r.admin.RunPolicy(t.Context(), "p", engine.LevelFull)
	if err != nil {
		t.Fatal(err)
	}
	b := r.wait(ids[0])
	if b.State != catalog.StateSucceeded {
		t.Fatalf("policy backup: %s %s", b.State, b.Error)
	}
	// The copy step is a job of its own, after the backup.
	var copyJob int64
	deadline := time.Now().Add(30 * time.Second)
	for copyJob == 0 && time.Now().Before(deadline) {
		jobs, err := env.Catalog.Jobs(100)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.Kind == catalog.KindCopy && j.SavesetID == b.SavesetID {
				copyJob = j.ID
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the catalog for the job the server starts
	}
	if copyJob == 0 {
		t.Fatal("no copy job after the policy's backup")
	}
	if cj := r.wait(copyJob); cj.State != catalog.StateSucceeded {
		t.Fatalf("copy job: %s %s", cj.State, cj.Error)
	} else if len(cj.Request) == 0 {
		// Queued, it takes the copy library's drive through the queue and
		// can be cancelled like any job.
		t.Errorf("the policy's copy job %d did not go through the queue", cj.ID)
	}
	ss, err := env.Catalog.Saveset(b.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Copies) != 1 || ss.Copies[0].Library != "offsite" {
		t.Fatalf("the policy's copy step made copies %+v", ss.Copies)
	}
	lib, err := env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Export(ss.Parts[0].Barcode); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	rs := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: ss.ID, To: to})[0])
	if rs.State != catalog.StateSucceeded {
		t.Fatalf("restore from the copy: %s %s", rs.State, rs.Error)
	}
	sameTree(t, src, filepath.Join(to, src))
}

// A restore order carries the admin's choice of target to the agent: with
// in_place it writes over the original files (as --overwrite says), with
// to it writes only into that folder and leaves the originals alone.
func TestRestoreInPlaceThroughAgent(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	f := filepath.Join(src, "f.txt")
	if err := os.WriteFile(f, []byte("backed up"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})[0])
	if b.State != catalog.StateSucceeded {
		t.Fatalf("backup: %s %s", b.State, b.Error)
	}
	if err := os.WriteFile(f, []byte("live"), 0o644); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, To: to})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("restore --to: %s %s", j.State, j.Error)
	}
	if got, _ := os.ReadFile(f); string(got) != "live" {
		t.Fatalf("a restore into %s changed the original: %q", to, got)
	}
	if got, _ := os.ReadFile(filepath.Join(to, f)); string(got) != "backed up" {
		t.Fatalf("restored copy: %q", got)
	}
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, InPlace: true, Overwrite: engine.OverwriteAlways})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("restore in place: %s %s", j.State, j.Error)
	}
	if got, _ := os.ReadFile(f); string(got) != "backed up" {
		t.Fatalf("in-place restore left %q", got)
	}
}

// Through an agent too: a missing path among others is a warning (job
// state warnings, the rest backed up); missing paths only fail the job.
func TestBackupOfMissingPathsThroughAgent(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	good := t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{good, missing}})[0])
	if j.State != catalog.StateWarnings || j.Files < 1 || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], missing) {
		t.Fatalf("backup GOOD MISSING through an agent: %s (%s), %d files, warnings %q", j.State, j.Error, j.Files, j.Warnings)
	}
	j = r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{missing}})[0])
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "nothing to back up") {
		t.Fatalf("backup of a missing path through an agent: %s (%s), want failed, nothing to back up", j.State, j.Error)
	}
}
