package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
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

// jobSink records the events of the jobs a test runs, and calls its hook
// (when set) with each as it is sent, from the job's goroutine.
type jobSink struct {
	monitor.Recorder
	mu   sync.Mutex
	hook func(monitor.Event)
}

func (s *jobSink) Event(ev monitor.Event) {
	s.Recorder.Event(ev)
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(ev)
	}
}

func (s *jobSink) setHook(hook func(monitor.Event)) {
	s.mu.Lock()
	s.hook = hook
	s.mu.Unlock()
}

// impliedState is the state a job's row must end in after the error its
// run returned: what the CLI turns into its exit code.
func impliedState(err error) string {
	switch {
	case err == nil:
		return catalog.StateSucceeded
	case errors.Is(err, context.Canceled):
		return catalog.StateCanceled
	case errors.Is(err, engine.ErrWarnings):
		return catalog.StateWarnings
	}
	return catalog.StateFailed
}

// jobContract checks the common end of every job kind, on the newest job
// row, after its run returned err: its kind; the state err implies, and
// want (so that every outcome is met); Started and Finished set; its lease
// released; and on the event sink, JobStarted its first event and JobEnded,
// naming its state, its last. It returns the row.
func jobContract(t *testing.T, env *engine.Env, sink *jobSink, kind string, err error, want string) *catalog.Job {
	t.Helper()
	j := lastJob(t, env)
	what := fmt.Sprintf("%s job %d (%s, run error %v)", kind, j.ID, j.State, err)
	if j.Kind != kind {
		t.Fatalf("%s: the newest job is a %s", what, j.Kind)
	}
	if got := impliedState(err); j.State != got || j.State != want {
		t.Errorf("%s: ended %s; its error implies %s, the test wants %s", what, j.State, got, want)
	}
	if j.State != catalog.StateSucceeded && j.State != catalog.StateWarnings && j.Error == "" {
		t.Errorf("%s: ended %s without an error in its row", what, j.State)
	}
	if j.Started.IsZero() || j.Finished.IsZero() || j.Finished.Before(j.Started) {
		t.Errorf("%s: started %v, finished %v", what, j.Started, j.Finished)
	}
	if l, lerr := env.Catalog.JobLease(j.ID); !errors.Is(lerr, catalog.ErrNotFound) {
		t.Errorf("%s: its lease after its end: %+v (%v); want it released", what, l, lerr)
	}
	var evs []monitor.Event
	for _, ev := range sink.Events() {
		if ev.JobID == j.ID {
			evs = append(evs, ev)
		}
	}
	if len(evs) < 2 || evs[0].Kind != monitor.JobStarted || evs[len(evs)-1].Kind != monitor.JobEnded || evs[len(evs)-1].Message != j.State {
		var kinds []string
		for _, ev := range evs {
			kinds = append(kinds, string(ev.Kind)+" "+ev.Message)
		}
		t.Errorf("%s: events %q; want JobStarted first and JobEnded %s last", what, kinds, j.State)
	}
	for i, ev := range evs {
		if i > 0 && ev.Kind == monitor.JobStarted || i < len(evs)-1 && ev.Kind == monitor.JobEnded {
			t.Errorf("%s: %s as event %d of %d", what, ev.Kind, i+1, len(evs))
		}
	}
	return j
}

// Every kind of job — backup, restore, copy, verify, prune, catalog backup,
// tape scan and tape erase — leaves a job row with its kind and its result,
// which reads back as the kind's record, and ends by one contract whatever
// its outcome (jobContract): the state its error implies (succeeded,
// warnings, failed, canceled), its times, its lease released, JobStarted
// first and JobEnded last. A backup whose verify phase is cancelled ends
// canceled, as its error says, not failed.
func TestEveryJobKindRecordsItsRowAndResult(t *testing.T) {
	env := newEnv(t)
	sink := &jobSink{}
	env.Events = sink
	ctx := context.Background()
	canceledCtx, cancel := context.WithCancel(ctx)
	cancel()

	src := t.TempDir()
	for i, name := range []string{"a.txt", "b.txt", "c.txt"} {
		must(t, os.WriteFile(filepath.Join(src, name), []byte(name+string(rune('0'+i))), 0o644))
	}
	res, err := env.Backup(ctx, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelFull})
	jobContract(t, env, sink, catalog.KindBackup, err, catalog.StateSucceeded)
	ss := saveset(t, env, res.Figures.SavesetID)
	createLibrary(t, env, library.Config{Name: "offsite", Slots: 2, Drives: 1, TapeSize: 64 << 20})
	createLibrary(t, env, library.Config{Name: "vault", Slots: 2, Drives: 1, TapeSize: 64 << 20})
	barcode := ss.Parts[0].Barcode

	check := func(kind string, err error, into any) *catalog.Job {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		j := jobContract(t, env, sink, kind, err, catalog.StateSucceeded)
		if len(j.Phases) != 1 {
			t.Errorf("%s job: %d phases", kind, len(j.Phases))
		}
		if err := json.Unmarshal(j.Result, into); err != nil {
			t.Fatalf("%s job result %q: %v", kind, j.Result, err)
		}
		return j
	}
	_, err = env.Restore(ctx, engine.RestoreOptions{SavesetID: ss.ID, To: t.TempDir()})
	if j := jobContract(t, env, sink, catalog.KindRestore, err, catalog.StateSucceeded); j.Files == 0 || j.SavesetID != ss.ID {
		t.Errorf("restore job: %d files of saveset %d", j.Files, j.SavesetID)
	}
	_, err = env.Verify(ctx, ss.ID, engine.VerifyOptions{})
	var vr engine.VerifyRecord
	if j := check(catalog.KindVerify, err, &vr); vr.Checked == 0 || vr.Level != engine.VerifyData || j.SavesetID != ss.ID {
		t.Errorf("verify result %+v of job for saveset %d", vr, j.SavesetID)
	}
	_, err = env.Copy(ctx, ss.ID, engine.CopyOptions{Library: "offsite"})
	var cr engine.CopyRecord
	if check(catalog.KindCopy, err, &cr); cr.Copy != 1 || cr.Library != "offsite" || cr.Note == "" {
		t.Errorf("copy result %+v", cr)
	}
	if _, err := env.Prune(ctx, engine.PruneOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if lastJob(t, env).Kind == catalog.KindPrune {
		t.Error("a dry run of prune recorded a job; it is a query")
	}
	_, err = env.Prune(ctx, engine.PruneOptions{})
	var pr engine.PruneResult
	check(catalog.KindPrune, err, &pr)
	_, err = env.BackupCatalog(ctx, engine.CatalogBackupOptions{})
	var cb engine.CatalogBackupResult
	if j := check(catalog.KindCatalog, err, &cb); cb.Barcode == "" || j.MediaBytes != cb.TapeBytes || len(j.Tapes) != 1 {
		t.Errorf("catalog backup result %+v, job media bytes %d tapes %v", cb, j.MediaBytes, j.Tapes)
	}
	_, err = env.ScanTape(ctx, barcode, engine.ScanOptions{})
	var sr engine.ScanRecord
	if j := check(catalog.KindScan, err, &sr); sr.Barcode != barcode || len(sr.Found) == 0 || j.Files != int64(len(sr.Found)) {
		t.Errorf("scan result %+v, job files %d", sr, j.Files)
	}

	// Warnings: a path that is not there, an include that matches nothing.
	_, err = env.Backup(ctx, engine.BackupOptions{Paths: []string{src, filepath.Join(src, "gone")}, Level: engine.LevelFull})
	jobContract(t, env, sink, catalog.KindBackup, err, catalog.StateWarnings)
	_, err = env.Restore(ctx, engine.RestoreOptions{SavesetID: ss.ID, To: t.TempDir(),
		Includes: []string{filepath.Join(src, "a.txt"), filepath.Join(src, "gone")}})
	jobContract(t, env, sink, catalog.KindRestore, err, catalog.StateWarnings)

	// Cancelled: before they start, or a backup in its verify phase.
	_, err = env.Backup(canceledCtx, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelFull})
	jobContract(t, env, sink, catalog.KindBackup, err, catalog.StateCanceled)
	verifyCtx, cancelVerify := context.WithCancel(ctx)
	sink.setHook(func(ev monitor.Event) {
		if ev.Kind == monitor.PhaseStarted && ev.Phase == "verify" {
			cancelVerify()
		}
	})
	_, err = env.Backup(verifyCtx, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelFull, Verify: true})
	sink.setHook(nil)
	cancelVerify()
	jobContract(t, env, sink, catalog.KindBackup, err, catalog.StateCanceled)
	_, err = env.Restore(canceledCtx, engine.RestoreOptions{SavesetID: ss.ID, To: t.TempDir()})
	jobContract(t, env, sink, catalog.KindRestore, err, catalog.StateCanceled)
	for _, c := range []struct {
		kind string
		run  func() error
	}{
		{catalog.KindCopy, func() error { _, err := env.Copy(canceledCtx, ss.ID, engine.CopyOptions{Library: "vault"}); return err }},
		{catalog.KindVerify, func() error { _, err := env.Verify(canceledCtx, ss.ID, engine.VerifyOptions{}); return err }},
		{catalog.KindPrune, func() error { _, err := env.Prune(canceledCtx, engine.PruneOptions{}); return err }},
		{catalog.KindCatalog, func() error { _, err := env.BackupCatalog(canceledCtx, engine.CatalogBackupOptions{}); return err }},
		{catalog.KindErase, func() error {
			_, err := env.EraseTapeJob(canceledCtx, barcode, engine.EraseOptions{Force: true})
			return err
		}},
	} {
		jobContract(t, env, sink, c.kind, c.run(), catalog.StateCanceled)
	}

	// Failed: damage on tape, an erase of a tape that holds savesets.
	big := t.TempDir()
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(big, "f"+string(rune('a'+i))), []byte(strings.Repeat(string(rune('a'+i)), 300_000)), 0o644))
	}
	res, err = env.Backup(ctx, engine.BackupOptions{Paths: []string{big}, Compress: compress.LevelNone})
	jobContract(t, env, sink, catalog.KindBackup, err, catalog.StateSucceeded)
	damaged := res.Figures.SavesetID
	flipByte(t, env, damaged, 3_000_000)
	_, err = env.Verify(ctx, damaged, engine.VerifyOptions{})
	jobContract(t, env, sink, catalog.KindVerify, err, catalog.StateFailed)
	_, err = env.Restore(ctx, engine.RestoreOptions{SavesetID: damaged, To: t.TempDir()})
	jobContract(t, env, sink, catalog.KindRestore, err, catalog.StateFailed)
	_, err = env.EraseTapeJob(ctx, barcode, engine.EraseOptions{})
	jobContract(t, env, sink, catalog.KindErase, err, catalog.StateFailed)

	_, err = env.EraseTapeJob(ctx, barcode, engine.EraseOptions{Force: true})
	var er engine.EraseRecord
	if check(catalog.KindErase, err, &er); !er.Erased || len(er.Expired) == 0 {
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
