package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/monitor"
)

const childEnv = "KURA_ENGINE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "backup":
		childBackup(monitor.PhaseStarted)
		return
	case "backup-on-tape":
		childBackup(monitor.Progress)
		return
	}
	os.Exit(m.Run())
}

// childBackup runs a backup that stops in the middle: at its first event
// of kind stop (a phase started, or progress once its drive and tape are
// taken) it says so on stdout and waits to be killed.
func childBackup(stop monitor.EventKind) {
	env, err := engine.Open(os.Getenv("KURA_HOME"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	env.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind == stop {
			fmt.Println("in the middle")
			select {} // killed here, mid-job
		}
	})
	_, err = env.Backup(context.Background(), engine.BackupOptions{Paths: []string{os.Getenv("KURA_SRC")}})
	fmt.Println("error: the backup ended:", err)
	os.Exit(1)
}

// A backup whose process is killed: the next process finds the job
// interrupted and its saveset incomplete, the drive and tape usable, and
// the earlier saveset restorable.
func TestKilledBackupIsInterrupted(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte(strings.Repeat("a", 100_000)), 0o644))
	first := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	env.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=backup", "KURA_HOME="+home, "KURA_SRC="+src)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "in the middle" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q", line)
	}
	must(t, cmd.Process.Kill())
	cmd.Wait()

	env, err = engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	jobs, err := env.Catalog.Jobs(0)
	if err != nil {
		t.Fatal(err)
	}
	killed := jobs[0]
	if killed.State != "interrupted" || killed.Error == "" {
		t.Fatalf("the killed job is %q (%q), want interrupted with a reason", killed.State, killed.Error)
	}
	// Found at once, not after its lease expired: its holder was a process
	// of this host that is gone.
	if !strings.HasPrefix(killed.Error, catalog.ReasonHolderGone) || !strings.Contains(killed.Error, fmt.Sprintf("process %d ", cmd.Process.Pid)) {
		t.Errorf("the killed job's error: %q; want its holder, process %d, gone", killed.Error, cmd.Process.Pid)
	}
	if _, err := env.Catalog.JobLease(killed.ID); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("the killed job's lease: %v; want released", err)
	}
	ss, err := env.Catalog.Saveset(killed.SavesetID)
	if err != nil || ss.Status != "incomplete" {
		t.Fatalf("the killed job's saveset: %+v, %v; want incomplete", ss, err)
	}
	// The drive lock died with the process; the next backup and a restore
	// of the earlier saveset work.
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: first.Figures.SavesetID, To: to})
	if b, err := os.ReadFile(filepath.Join(restored(to, src), "a")); err != nil || len(b) != 100_000 {
		t.Fatalf("earlier saveset after the kill: %d bytes, %v", len(b), err)
	}
}

// startChildBackup starts a child process whose backup stops on its first
// event of the kind mode names, and returns it once it has.
func startChildBackup(t *testing.T, mode, home, src string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "KURA_HOME="+home, "KURA_SRC="+src)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "in the middle" {
		t.Fatalf("child said %q", line)
	}
	return cmd
}

// A backup of another process that is alive, its lease live, is left
// running by every process that opens the home or reclaims, and its drive
// is not taken: a local backup takes the other drive. Once that process
// is killed, its job is reclaimed and its drive freed.
func TestLiveJobOfAnotherProcessIsLeftAlone(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte(strings.Repeat("a", 100_000)), 0o644))
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	env.Close()

	child := startChildBackup(t, "backup-on-tape", home, src)
	env, err = engine.Open(home) // reclaims the dead: not the child's job
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	jobs, err := env.Catalog.Jobs(0)
	if err != nil {
		t.Fatal(err)
	}
	running := jobs[0]
	if running.State != catalog.StateRunning {
		t.Fatalf("the live child's job is %s (%q); want running", running.State, running.Error)
	}
	l, err := env.Catalog.JobLease(running.ID)
	if err != nil {
		t.Fatalf("the live child's job has no lease: %v", err)
	}
	if h, ok := job.ParseHolder(l.Holder); !ok || h.PID != child.Process.Pid || running.Owner != l.Holder {
		t.Errorf("the lease's holder %q (job owner %q); want the child, process %d", l.Holder, running.Owner, child.Process.Pid)
	}
	if ids, err := env.ReclaimDeadJobs(); err != nil || len(ids) != 0 {
		t.Fatalf("reclaim with the child alive: %v, %v", ids, err)
	}
	drives, err := env.Catalog.LiveDriveLeases(time.Now())
	if err != nil || len(drives) != 1 || drives[0].JobID != running.ID || drives[0].Drive != 1 {
		t.Fatalf("drive leases with the child on tape: %+v, %v; want the child's drive 1", drives, err)
	}

	// A local backup meanwhile takes the other drive.
	mine := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	if j, err := env.Catalog.Job(mine.Figures.JobID); err != nil || j.State != catalog.StateSucceeded {
		t.Fatalf("the local backup beside the child: %+v, %v", j, err)
	}
	if j, _ := env.Catalog.Job(running.ID); j.State != catalog.StateRunning {
		t.Errorf("the child's job after the local backup: %s", j.State)
	}

	must(t, child.Process.Kill())
	child.Wait()
	ids, err := env.ReclaimDeadJobs()
	if err != nil || len(ids) != 1 || ids[0] != running.ID {
		t.Fatalf("reclaim once the child is dead: %v, %v; want [%d]", ids, err, running.ID)
	}
	if drives, _ := env.Catalog.LiveDriveLeases(time.Now()); len(drives) != 0 {
		t.Errorf("drive leases after the reclaim: %+v", drives)
	}
}

// A backup asking for a drive another job holds in the catalog (a server's
// job, say) waits, says so, and runs once the drive is released; it never
// writes with the drive meanwhile.
func TestBackupWaitsForALeasedDrive(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.OpenLibrary(""); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))

	// The other job: recorded and leased as a server's backup would be.
	other := &catalog.Job{Kind: catalog.KindBackup}
	held, _, err := env.Jobs.Hold(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	must(t, held.TakeDrive(engine.DefaultLibrary, 1))

	var waited []string
	env.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind != monitor.Queued {
			return
		}
		waited = append(waited, ev.Message)
		if loaded, _ := env.Catalog.LiveDriveLeases(time.Now()); len(loaded) != 1 || loaded[0].JobID != other.ID {
			t.Errorf("drive leases while the backup waits: %+v", loaded)
		}
		other.State = catalog.StateSucceeded
		must(t, held.Finish(other)) // frees the drive
	})
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Drive: 1})
	if len(waited) != 1 || !strings.Contains(waited[0], "waiting for a drive") || !strings.Contains(waited[0], fmt.Sprintf("job %d", other.ID)) {
		t.Errorf("the backup's waits: %q; want one, for the drive job %d holds", waited, other.ID)
	}
	j, err := env.Catalog.Job(res.Figures.JobID)
	if err != nil || j.State != catalog.StateSucceeded || !strings.Contains(strings.Join(j.Log, "\n"), "waiting for a drive") {
		t.Errorf("the backup job: %+v, %v", j, err)
	}
	if drives, _ := env.Catalog.LiveDriveLeases(time.Now()); len(drives) != 0 {
		t.Errorf("drive leases after the backup: %+v", drives)
	}
}

// A tape scan or erase asking for a drive another job holds in the
// catalog waits for it like a backup does, and leaves no drive lease
// behind.
func TestScanAndEraseWaitForALeasedDrive(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	barcode := res.Figures.Tapes[0]
	for _, c := range []struct {
		kind string
		run  func() error
	}{
		{"scan", func() error { _, err := env.ScanTape(t.Context(), barcode, engine.ScanOptions{Drive: 1}); return err }},
		{"erase", func() error {
			_, err := env.EraseTapeJob(t.Context(), barcode, engine.EraseOptions{Drive: 1, Force: true})
			return err
		}},
	} {
		other := &catalog.Job{Kind: catalog.KindBackup}
		held, _, err := env.Jobs.Hold(context.Background(), other)
		if err != nil {
			t.Fatal(err)
		}
		must(t, held.TakeDrive(engine.DefaultLibrary, 1))
		var waited []string
		env.Events = monitor.SinkFunc(func(ev monitor.Event) {
			if ev.Kind != monitor.Queued {
				return
			}
			waited = append(waited, ev.Message)
			other.State = catalog.StateSucceeded
			must(t, held.Finish(other)) // frees the drive
		})
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		env.Events = nil
		if len(waited) != 1 || !strings.Contains(waited[0], fmt.Sprintf("job %d", other.ID)) {
			t.Errorf("the %s's waits: %q; want one, for the drive job %d holds", c.kind, waited, other.ID)
		}
		if drives, _ := env.Catalog.LiveDriveLeases(time.Now()); len(drives) != 0 {
			t.Errorf("drive leases after the %s: %+v", c.kind, drives)
		}
	}
}
