package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// smallBackup backs up a few files and returns the saveset.
func smallBackup(t *testing.T, env *engine.Env) *catalog.Saveset {
	t.Helper()
	src := t.TempDir()
	for i, name := range []string{"a.txt", "b.txt", "c.txt"} {
		must(t, os.WriteFile(filepath.Join(src, name), []byte(name+string(rune('0'+i))), 0o644))
	}
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelFull})
	return saveset(t, env, res.Figures.SavesetID)
}

// lastJob is the newest job row.
func lastJob(t *testing.T, env *engine.Env) *catalog.Job {
	t.Helper()
	jobs, err := env.Catalog.Jobs(1)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("no job recorded: %v", err)
	}
	return jobs[0]
}

// Verify, copy, prune, catalog backup, tape scan and tape erase each leave
// a job row: its kind, its end state, a phase, and its result, which reads
// back as the kind's record.
func TestEveryJobKindRecordsItsRowAndResult(t *testing.T) {
	env := newEnv(t)
	ctx := context.Background()
	ss := smallBackup(t, env)
	createLibrary(t, env, library.Config{Name: "offsite", Slots: 2, Drives: 1, TapeSize: 64 << 20})
	barcode := ss.Parts[0].Barcode

	check := func(kind string, into any) *catalog.Job {
		t.Helper()
		j := lastJob(t, env)
		if j.Kind != kind || j.State != catalog.StateSucceeded || len(j.Phases) != 1 || j.Finished.IsZero() {
			t.Fatalf("%s job: kind %q state %q (%s), %d phases", kind, j.Kind, j.State, j.Error, len(j.Phases))
		}
		if err := json.Unmarshal(j.Result, into); err != nil {
			t.Fatalf("%s job result %q: %v", kind, j.Result, err)
		}
		return j
	}
	if _, err := env.Verify(ctx, ss.ID, engine.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	var vr engine.VerifyRecord
	if j := check(catalog.KindVerify, &vr); vr.Checked == 0 || vr.Level != engine.VerifyData || j.SavesetID != ss.ID {
		t.Errorf("verify result %+v of job for saveset %d", vr, j.SavesetID)
	}
	copySaveset(t, env, ss.ID, engine.CopyOptions{Library: "offsite"})
	j := lastJob(t, env)
	var cr engine.CopyRecord
	if err := json.Unmarshal(j.Result, &cr); err != nil || j.Kind != catalog.KindCopy || cr.Copy != 1 || cr.Library != "offsite" || cr.Note == "" {
		t.Errorf("copy job %s %s, result %+v (%v)", j.Kind, j.State, cr, err)
	}
	if _, err := env.Prune(ctx, engine.PruneOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if lastJob(t, env).Kind == catalog.KindPrune {
		t.Error("a dry run of prune recorded a job; it is a query")
	}
	if _, err := env.Prune(ctx, engine.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	var pr engine.PruneResult
	check(catalog.KindPrune, &pr)
	if _, err := env.BackupCatalog(ctx, engine.CatalogBackupOptions{}); err != nil {
		t.Fatal(err)
	}
	var cb engine.CatalogBackupResult
	if j := check(catalog.KindCatalog, &cb); cb.Barcode == "" || j.MediaBytes != cb.TapeBytes || len(j.Tapes) != 1 {
		t.Errorf("catalog backup result %+v, job media bytes %d tapes %v", cb, j.MediaBytes, j.Tapes)
	}
	if _, err := env.ScanTape(ctx, barcode, engine.ScanOptions{}); err != nil {
		t.Fatal(err)
	}
	var sr engine.ScanRecord
	if j := check(catalog.KindScan, &sr); sr.Barcode != barcode || len(sr.Found) == 0 || j.Files != int64(len(sr.Found)) {
		t.Errorf("scan result %+v, job files %d", sr, j.Files)
	}
	if _, err := env.EraseTapeJob(ctx, barcode, engine.EraseOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	var er engine.EraseRecord
	if check(catalog.KindErase, &er); !er.Erased || len(er.Expired) != 1 || er.Expired[0] != ss.ID {
		t.Errorf("erase result %+v", er)
	}
}

// A job cancelled before it starts changes nothing and ends canceled: a
// copy records no copy, an erase erases nothing, a prune expires nothing,
// a catalog backup writes no tape file.
func TestJobsCanceledBeforeTheyStartChangeNothing(t *testing.T) {
	env := newEnv(t)
	ss := smallBackup(t, env)
	createLibrary(t, env, library.Config{Name: "offsite", Slots: 2, Drives: 1, TapeSize: 64 << 20})
	barcode := ss.Parts[0].Barcode
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantCanceled := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v; want canceled", what, err)
		}
		if j := lastJob(t, env); j.State != catalog.StateCanceled {
			t.Errorf("%s job: %s (%s); want canceled", what, j.State, j.Error)
		}
	}
	_, err := env.Copy(ctx, ss.ID, engine.CopyOptions{Library: "offsite"})
	wantCanceled("copy", err)
	_, err = env.EraseTapeJob(ctx, barcode, engine.EraseOptions{Force: true})
	wantCanceled("erase", err)
	_, err = env.Prune(ctx, engine.PruneOptions{})
	wantCanceled("prune", err)
	_, err = env.BackupCatalog(ctx, engine.CatalogBackupOptions{Library: "offsite"})
	wantCanceled("catalog backup", err)
	_, err = env.Verify(ctx, ss.ID, engine.VerifyOptions{})
	wantCanceled("verify", err)

	if got := saveset(t, env, ss.ID); got.Expired || len(got.Copies) != 0 {
		t.Errorf("after the cancelled jobs the saveset is expired %v, copies %+v", got.Expired, got.Copies)
	}
	for _, lib := range []string{"", "offsite"} {
		tapes, err := env.Tapes(lib)
		must(t, err)
		for _, tp := range tapes {
			if tp.Barcode == barcode && tp.Files == 0 {
				t.Errorf("tape %s was erased", barcode)
			}
			if tp.Library == "offsite" && tp.Files != 0 {
				t.Errorf("tape %s of offsite has %d tape files; want none", tp.Barcode, tp.Files)
			}
		}
	}
	if _, err := env.Verify(context.Background(), ss.ID, engine.VerifyOptions{}); err != nil {
		t.Errorf("the saveset after the cancelled jobs: %v", err)
	}
}
