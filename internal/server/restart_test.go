package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// backupAndCheck runs a backup to its end and fails the test unless it
// succeeded.
func (r *rig) backupAndCheck(req api.JobRequest) *api.Job {
	r.t.Helper()
	j := r.wait(r.submit(req)[0])
	if j.State != catalog.StateSucceeded {
		r.t.Fatalf("backup job %d: %s (%s)", j.ID, j.State, j.Error)
	}
	return j
}

// restoreAndCheck restores a saveset of client into a new folder and
// compares it with src.
func (r *rig) restoreAndCheck(client string, saveset int64, src string) {
	r.t.Helper()
	to := r.t.TempDir()
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: client, Saveset: saveset, To: to})[0])
	if j.State != catalog.StateSucceeded {
		r.t.Fatalf("restore of saveset %d: %s (%s)", saveset, j.State, j.Error)
	}
	sameTree(r.t, src, filepath.Join(to, src))
}

// Jobs queued while their agent is away survive server restarts and run
// once the agent connects; earlier savesets stay restorable.
func TestQueuedJobsSurviveRestart(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := startServer(t, home, "")
	ahome, stopAgent := r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 12, 5)
	first := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	stopAgent()
	r.stop()

	// A new server, no agent: the jobs wait for it.
	r = startServer(t, home, r.addr)
	req := api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Level: "incr"}
	ids := []int64{r.submit(req)[0], r.submit(req)[0]}
	for _, id := range ids {
		r.pollJob(id, 10*time.Second, "waited for its agent", func(j *api.Job) bool {
			return j.State == catalog.StateWaiting && strings.HasPrefix(j.Reason, "waiting for agent c1")
		})
	}
	r.stop()

	r = startServer(t, home, r.addr)
	for _, id := range ids {
		j, err := r.admin.Job(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != catalog.StateWaiting && j.State != catalog.StateQueued {
			t.Fatalf("after the restart job %d is %s (%s); want still queued", id, j.State, j.Error)
		}
	}
	r.startAgent(ahome, "c1")
	for _, id := range ids {
		if j := r.wait(id); j.State != catalog.StateSucceeded {
			t.Errorf("queued job %d: %s (%s)", id, j.State, j.Error)
		}
	}
	r.restoreAndCheck("c1", first.SavesetID, src)
}

// A job running when the server stops does not stay "running": stopped
// cleanly, the server cancels it and records that before it closes; its
// saveset is not complete. The next server runs backups as before.
func TestRunningJobWhenServerStops(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := startServer(t, home, "")
	ahome, stopAgent := r.runAgent("c1")
	small, big := t.TempDir(), t.TempDir()
	makeTree(t, small, 12, 6)
	randomFiles(t, big, 4, 1<<20, 6)
	first := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}})

	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{big}, Compress: "none", BWLimit: 512 << 10, FrameSize: 64 << 10})[0]
	r.waitProgress(id)
	r.stop()
	stopAgent()

	r = startServer(t, home, r.addr)
	j, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != catalog.StateCanceled || !strings.Contains(j.Error, "server is stopping") {
		t.Errorf("the job running at shutdown: %s (%q); want canceled because the server stopped", j.State, j.Error)
	}
	if st := savesetStatus(t, r, j.SavesetID); st == catalog.StatusComplete || st == catalog.StatusRunning {
		t.Errorf("its saveset %d is %q", j.SavesetID, st)
	}
	r.startAgent(ahome, "c1")
	r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}})
	r.restoreAndCheck("c1", first.SavesetID, small)
}

// A server killed in the middle of a backup leaves the job "running" in
// the catalog; the next server finds its process gone and marks it
// interrupted, its saveset incomplete. Backups and restores work as before.
func TestServerKilledMidBackup(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	child, kill := startChildServer(t, home)
	ahome := child.enroll("c1", "")
	stopAgent, _ := launchAgent(t, ahome, "c1")
	child.waitOnline("c1", true)
	small, big := t.TempDir(), t.TempDir()
	makeTree(t, small, 12, 8)
	randomFiles(t, big, 4, 1<<20, 8)
	first := child.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}})
	id := child.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{big}, Compress: "none", BWLimit: 512 << 10, FrameSize: 64 << 10})[0]
	child.waitProgress(id)
	kill()
	child.admin.Close()

	// The agent keeps dialling the same address: a new server takes it.
	r := startServer(t, home, child.addr)
	j, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != catalog.StateInterrupted {
		t.Errorf("the job running when the server was killed: %s (%q); want interrupted", j.State, j.Error)
	}
	if st := savesetStatus(t, r, j.SavesetID); st != catalog.StatusIncomplete {
		t.Errorf("its saveset %d is %q; want incomplete", j.SavesetID, st)
	}
	// Found at once: the dead server was a process of this host.
	if !strings.HasPrefix(j.Error, catalog.ReasonHolderGone) {
		t.Errorf("the interrupted job's error: %q; want its holder gone", j.Error)
	}
	if drives, err := r.srv.Env().Catalog.LiveDriveLeases(time.Now()); err != nil || len(drives) != 0 {
		t.Errorf("drive leases after the restart: %+v, %v; want the dead job's freed", drives, err)
	}
	r.waitOnline("c1", true)
	next := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}})
	// On the drive the killed job held, drive 1 (the first free one).
	if line := logLine(r.log.String(), "job starting", fmt.Sprintf(" job=%d ", next.ID)); !strings.Contains(line, " drive=1") {
		t.Errorf("the next backup did not run on drive 1: %q", line)
	}
	r.restoreAndCheck("c1", first.SavesetID, small)
	stopAgent()
}

// A job waiting for its agent to start streaming when the server stops
// (no request of the agent's is open to hold the shutdown back) is still
// recorded as canceled before the catalog closes.
func TestJobAwaitingAgentWhenServerStops(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	opts := fastOpts
	opts.OnlineGrace = time.Minute // the cut-off agent still counts as connected
	r := startServerWith(t, home, "", opts)
	px := startProxy(t, r.addr)
	stopAgent := r.startAgent(r.enroll("c1", px.url()), "c1")
	px.close() // its network goes: no goodbye (which would show it offline at once)
	stopAgent()
	src := t.TempDir()
	makeTree(t, src, 4, 9)
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})[0]
	r.pollJob(id, 10*time.Second, "started", func(j *api.Job) bool { return j.State == catalog.StateRunning })
	r.stop()

	r = startServer(t, home, r.addr)
	j, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != catalog.StateCanceled || !strings.Contains(j.Error, "server is stopping") {
		t.Errorf("the job at shutdown: %s (%q); want canceled because the server stopped", j.State, j.Error)
	}
	if st := savesetStatus(t, r, j.SavesetID); st == catalog.StatusComplete || st == catalog.StatusRunning {
		t.Errorf("its saveset %d is %q", j.SavesetID, st)
	}
}

// logLine returns the first line of log holding every one of subs, or "".
func logLine(log string, subs ...string) string {
	for _, line := range strings.Split(log, "\n") {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(line, sub)
		}
		if ok {
			return line
		}
	}
	return ""
}
