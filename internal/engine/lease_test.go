package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
)

// manualTicker ticks when the test says so.
type manualTicker chan time.Time

func (m manualTicker) C() <-chan time.Time { return m }
func (m manualTicker) Stop()               {}

// A running backup's lease is renewed by the heartbeat (the job registry's,
// on an injected clock and ticker), with its drive's, and released with the
// job's end.
func TestBackupLeaseRenewedByTheHeartbeat(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	clock := monitor.NewFakeClock(time.Now())
	ticks := make(manualTicker)
	beats := make(chan monitor.Event, 16)
	env.Jobs, err = job.NewRegistry(env.Catalog, job.Options{Clock: clock,
		NewTicker: func(time.Duration) job.Ticker { return ticks },
		Sink: monitor.SinkFunc(func(ev monitor.Event) {
			if ev.Kind == job.HeartbeatEvent {
				beats <- ev
			}
		})})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for i := range 3 {
		must(t, os.WriteFile(filepath.Join(src, string(rune('a'+i))), []byte(strings.Repeat("x", 1000)), 0o644))
	}
	ttl := env.Jobs.Options().LeaseTTL
	var renewed atomic.Bool // progress comes from the backup's workers
	env.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind != monitor.Progress || !renewed.CompareAndSwap(false, true) {
			return
		}
		before, err := env.Catalog.JobLease(ev.JobID)
		if err != nil {
			t.Errorf("the running backup has no lease: %v", err)
			return
		}
		clock.Advance(ttl - time.Second) // about to expire: the heartbeat comes
		ticks <- clock.Now()
		<-beats
		after, err := env.Catalog.JobLease(ev.JobID)
		if err != nil || !after.Expires.Equal(clock.Now().Add(ttl)) || !after.Expires.After(before.Expires) {
			t.Errorf("the lease after a heartbeat: %+v, %v (before %+v)", after, err, before)
		}
		drives, err := env.Catalog.LiveDriveLeases(clock.Now().Add(ttl - time.Nanosecond))
		if err != nil || len(drives) != 1 || drives[0].JobID != ev.JobID {
			t.Errorf("the backup's drive lease after the heartbeat: %+v, %v", drives, err)
		}
	})
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	if !renewed.Load() {
		t.Fatal("the backup made no progress event")
	}
	j, err := env.Catalog.Job(res.Figures.JobID)
	if err != nil || j.State != catalog.StateSucceeded || j.Owner != env.Jobs.Options().Holder {
		t.Errorf("the backup's job: %+v, %v", j, err)
	}
	if _, err := env.Catalog.JobLease(j.ID); err == nil {
		t.Error("the finished backup still has a lease")
	}
	if drives, _ := env.Catalog.LiveDriveLeases(clock.Now()); len(drives) != 0 {
		t.Errorf("drive leases after the backup: %+v", drives)
	}
}

// A backup whose job another process reclaimed while it ran (its holder
// taken for dead) does not mark its saveset complete at the end: the job
// stays interrupted, the saveset not complete, and the backup fails with
// job.ErrLeaseLost.
func TestReclaimedBackupDoesNotCompleteItsSaveset(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	// The heartbeat never ticks: the backup learns of the reclaim at its end.
	env.Jobs, err = job.NewRegistry(env.Catalog, job.Options{
		NewTicker: func(time.Duration) job.Ticker { return make(manualTicker) }})
	if err != nil {
		t.Fatal(err)
	}
	other, err := job.NewRegistry(env.Catalog, job.Options{Holder: "other",
		Gone: func(string) string { return "is taken for dead by the test" }})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	var reclaimed atomic.Bool
	env.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind == monitor.Progress && reclaimed.CompareAndSwap(false, true) {
			if ids, err := other.Reclaim(); err != nil || len(ids) != 1 || ids[0] != ev.JobID {
				t.Errorf("reclaim of the running backup: %v, %v", ids, err)
			}
		}
	})
	res, err := env.Backup(t.Context(), engine.BackupOptions{Paths: []string{src}})
	if !reclaimed.Load() {
		t.Fatal("the backup made no progress event")
	}
	if !errors.Is(err, job.ErrLeaseLost) {
		t.Errorf("the reclaimed backup returned %v; want job.ErrLeaseLost", err)
	}
	jobs, jerr := env.Catalog.Jobs(1)
	if jerr != nil || jobs[0].State != catalog.StateInterrupted {
		t.Fatalf("the reclaimed job: %+v, %v; want interrupted", jobs, jerr)
	}
	ss, serr := env.Catalog.Saveset(jobs[0].SavesetID)
	if serr != nil || ss.Status == catalog.StatusComplete || ss.Status == catalog.StatusRunning {
		t.Errorf("the reclaimed job's saveset: %+v, %v (result %+v); want it not complete", ss, serr, res)
	}
	// The next backup is good.
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
}

// The same for a copy and a catalog backup: reclaimed while they run, they
// record no copy and no catalog backup, and end with job.ErrLeaseLost.
func TestReclaimedCopyAndCatalogBackupRecordNothing(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	createLibrary(t, env, library.Config{Name: "offsite"})

	env.Jobs, err = job.NewRegistry(env.Catalog, job.Options{
		NewTicker: func(time.Duration) job.Ticker { return make(manualTicker) }})
	if err != nil {
		t.Fatal(err)
	}
	other, err := job.NewRegistry(env.Catalog, job.Options{Holder: "other",
		Gone: func(string) string { return "is taken for dead by the test" }})
	if err != nil {
		t.Fatal(err)
	}
	reclaimAt := func(kind monitor.EventKind) *atomic.Bool {
		var done atomic.Bool
		env.Events = monitor.SinkFunc(func(ev monitor.Event) {
			if ev.Kind == kind && ev.JobID != 0 && done.CompareAndSwap(false, true) {
				if ids, err := other.Reclaim(); err != nil || len(ids) != 1 || ids[0] != ev.JobID {
					t.Errorf("reclaim of the running job: %v, %v", ids, err)
				}
			}
		})
		return &done
	}

	done := reclaimAt(monitor.PhaseStarted)
	_, err = env.Copy(t.Context(), id, engine.CopyOptions{Library: "offsite"})
	if !done.Load() || !errors.Is(err, job.ErrLeaseLost) {
		t.Errorf("the reclaimed copy: %v (reclaimed: %v); want job.ErrLeaseLost", err, done.Load())
	}
	if ss := saveset(t, env, id); len(ss.Copies) != 0 {
		t.Errorf("the reclaimed copy was recorded: %+v", ss.Copies)
	}

	done = reclaimAt(monitor.JobStarted)
	_, err = env.BackupCatalog(t.Context(), engine.CatalogBackupOptions{})
	if !done.Load() || !errors.Is(err, job.ErrLeaseLost) {
		t.Errorf("the reclaimed catalog backup: %v (reclaimed: %v); want job.ErrLeaseLost", err, done.Load())
	}
	if last, err := env.LastCatalogBackup(); err == nil && last != nil {
		t.Errorf("the reclaimed catalog backup was recorded: %+v", last)
	}
	jobs, err := env.Catalog.Jobs(2)
	if err != nil || len(jobs) != 2 || jobs[0].State != catalog.StateInterrupted || jobs[1].State != catalog.StateInterrupted {
		t.Errorf("the reclaimed jobs: %+v, %v; want both interrupted", jobs, err)
	}
}
