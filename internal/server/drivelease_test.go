package server_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
)

// openLocal opens the server's home as a CLI on the same machine would.
func openLocal(t *testing.T, home string) *engine.Env {
	t.Helper()
	env, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// Drives held by a CLI's job on the server's home (leased in the catalog)
// keep the server's backup waiting for a drive; once the CLI's job ends,
// the server's runs.
func TestServerJobWaitsForDrivesACLIJobHolds(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := startServer(t, home, "")
	_, stopAgent := r.runAgent("c1")
	defer stopAgent()
	src := t.TempDir()
	makeTree(t, src, 4, 21)

	local := openLocal(t, home)
	lib, err := local.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	cli := &catalog.Job{Kind: catalog.KindCopy}
	held, _, err := local.Jobs.Hold(t.Context(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for n := 1; n <= lib.Config().Drives; n++ {
		if err := held.TakeDrive(lib.Config().Name, n); err != nil {
			t.Fatal(err)
		}
	}

	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})[0]
	r.pollJob(id, 30*time.Second, "waited for a drive", func(j *api.Job) bool {
		return j.State == catalog.StateWaiting && strings.Contains(j.Reason, "waiting for a drive")
	})
	cli.State = catalog.StateSucceeded
	if err := held.Finish(cli); err != nil {
		t.Fatal(err)
	}
	if j := r.wait(id); j.State != catalog.StateSucceeded {
		t.Fatalf("the server's backup once the drives were free: %s (%s)", j.State, j.Error)
	}
}

// A CLI backup on the server's home asking for the drive the server's
// running backup holds waits for it and says so; it never writes with it.
// Another drive it takes at once.
func TestCLIBackupWaitsForTheServersDrive(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := startServer(t, home, "")
	_, stopAgent := r.runAgent("c1")
	defer stopAgent()
	big, small := t.TempDir(), t.TempDir()
	randomFiles(t, big, 2, 1<<20, 22)
	makeTree(t, small, 4, 23)

	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{big}, Compress: "none", BWLimit: 512 << 10, FrameSize: 64 << 10})[0]
	r.waitProgress(id)
	local := openLocal(t, home)
	leases, err := local.Catalog.LiveDriveLeases(time.Now())
	if err != nil || len(leases) != 1 || leases[0].JobID != id {
		t.Fatalf("drive leases with the server's backup running: %+v, %v", leases, err)
	}
	busy := leases[0].Drive

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var waited []string
	local.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind == monitor.Queued {
			waited = append(waited, ev.Message)
			cancel() // seen waiting: enough
		}
	})
	_, err = local.Backup(ctx, engine.BackupOptions{Paths: []string{small}, Drive: busy})
	if !errors.Is(err, library.ErrDriveBusy) || len(waited) != 1 || !strings.Contains(waited[0], "waiting for a drive") {
		t.Fatalf("CLI backup on the server's drive %d: %v (waits %q); want it to wait for the drive", busy, err, waited)
	}
	jobs, err := local.Catalog.Jobs(1)
	if err != nil || jobs[0].State != catalog.StateCanceled {
		t.Errorf("the CLI's backup job: %+v, %v; want canceled", jobs, err)
	}

	local.Events = monitor.Nop{}
	res, err := local.Backup(t.Context(), engine.BackupOptions{Paths: []string{small}})
	if err != nil {
		t.Fatalf("CLI backup on a free drive beside the server's: %v", err)
	}
	if j := r.wait(id); j.State != catalog.StateSucceeded {
		t.Errorf("the server's backup: %s (%s)", j.State, j.Error)
	}
	to := t.TempDir()
	if _, err := local.Restore(t.Context(), engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, small, filepath.Join(to, small))
}
