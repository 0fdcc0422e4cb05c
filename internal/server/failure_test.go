package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// An agent stopped in the middle of a backup fails the job at once, with
// a reason that names the agent; the drive is free for the next backup
// and earlier savesets stay restorable.
func TestAgentStoppedMidBackup(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home, stop := r.runAgent("c1")
	small, big := t.TempDir(), t.TempDir()
	makeTree(t, small, 12, 21)
	randomFiles(t, big, 4, 1<<20, 21)
	first := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}, Drive: 1})

	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{big}, Compress: "none",
		BWLimit: 512 << 10, FrameSize: 64 << 10, Drive: 1})[0]
	r.waitProgress(id)
	stopped := time.Now()
	stop()
	j := r.wait(id)
	took := time.Since(stopped)
	t.Logf("the job ended %s after the agent stopped: %s", took.Round(time.Millisecond), j.Error)
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "agent c1") {
		t.Errorf("the backup whose agent stopped: %s (%q); want failed, naming agent c1", j.State, j.Error)
	}
	if limit := fastOpts.IdleTimeout + 2*time.Second; took > limit {
		t.Errorf("the job took %s to fail; want at most %s", took, limit)
	}
	if st := savesetStatus(t, r, j.SavesetID); st == catalog.StatusComplete {
		t.Errorf("its saveset is %q", st)
	}

	r.startAgent(home, "c1")
	r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}, Drive: 1})
	r.restoreAndCheck("c1", first.SavesetID, small)
}

// An agent whose network goes dead (no reset, no bytes) in the middle of a
// backup fails the job after the idle timeout; once the network is back
// the agent reconnects and the same drive takes the next backup.
func TestAgentDisconnectedMidBackup(t *testing.T) {
	t.Parallel()
	opts := fastOpts
	opts.IdleTimeout = 1500 * time.Millisecond
	r := startServerWith(t, t.TempDir(), "", opts)
	px := startProxy(t, r.addr)
	home := r.enroll("c1", px.url())
	launchAgent(t, home, "c1")
	r.waitOnline("c1", true)
	small, big := t.TempDir(), t.TempDir()
	makeTree(t, small, 12, 22)
	randomFiles(t, big, 4, 1<<20, 22)
	first := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}, Drive: 1})

	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{big}, Compress: "none",
		BWLimit: 512 << 10, FrameSize: 64 << 10, Drive: 1})[0]
	r.waitProgress(id)
	frozen := time.Now()
	px.freeze()
	j := r.wait(id)
	took := time.Since(frozen)
	t.Logf("the job ended %s after the network died: %s", took.Round(time.Millisecond), j.Error)
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "agent c1") {
		t.Errorf("the backup whose agent vanished: %s (%q); want failed, naming agent c1", j.State, j.Error)
	}
	if took < opts.IdleTimeout*7/8 || took > opts.IdleTimeout+3*time.Second {
		t.Errorf("the job took %s to fail; want about the idle timeout, %s", took, opts.IdleTimeout)
	}
	if st := savesetStatus(t, r, j.SavesetID); st == catalog.StatusComplete {
		t.Errorf("its saveset is %q", st)
	}

	px.cut() // the network comes back; the old connections are gone
	r.waitOnline("c1", true)
	r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}, Drive: 1})
	r.restoreAndCheck("c1", first.SavesetID, small)
}

// A slow but steady agent is not taken for a silent one: at a bandwidth
// limit under which one frame takes longer than the idle timeout to
// arrive, the backup still succeeds.
func TestSlowAgentIsNotIdle(t *testing.T) {
	t.Parallel()
	opts := fastOpts
	opts.IdleTimeout = time.Second
	r := startServerWith(t, t.TempDir(), "", opts)
	r.runAgent("c1")
	src := t.TempDir()
	randomFiles(t, src, 1, 1<<20, 23)
	// A 1 MiB frame at 512 KiB/s takes 2 s.
	j := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", BWLimit: 512 << 10})
	if el := j.Finished.Sub(j.Started); el < 2*opts.IdleTimeout {
		t.Fatalf("the backup took %s; the test needs frames slower than the idle timeout", el)
	}
	r.restoreAndCheck("c1", j.SavesetID, src)
}
