package server_test

import (
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// restoreRig backs up 4 MiB of incompressible files of c1 and returns the
// rig, the source folder and the saveset.
func restoreRig(t *testing.T, r *rig, seed uint64) (string, int64) {
	t.Helper()
	src := t.TempDir()
	randomFiles(t, src, 4, 1<<20, seed)
	j := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none"})
	return src, j.SavesetID
}

// slowRestore submits a restore held to 256 KiB/s (some 16 s for the
// saveset) and waits until its data flows.
func slowRestore(r *rig, saveset int64) (id int64, to string) {
	r.t.Helper()
	to = r.t.TempDir()
	id = r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: saveset, To: to, BWLimit: 256 << 10})[0]
	r.waitProgress(id)
	return id, to
}

// A restore canceled mid-run ends canceled, the saveset it read stays
// complete, and a restore of it afterwards gives back every file.
func TestCancelDuringRestore(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src, ss := restoreRig(t, r, 61)
	id, _ := slowRestore(r, ss)
	if _, err := r.admin.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if j := r.wait(id); j.State != catalog.StateCanceled {
		t.Errorf("the canceled restore: %s (%s)", j.State, j.Error)
	}
	if st := savesetStatus(t, r, ss); st != catalog.StatusComplete {
		t.Errorf("the saveset read by the canceled restore is %q", st)
	}
	r.restoreAndCheck("c1", ss, src)
}

// A restore running when the server stops is recorded as canceled (not
// left running), and the next server restores the saveset in full.
func TestServerStopsMidRestore(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := startServer(t, home, "")
	ahome, stopAgent := r.runAgent("c1")
	src, ss := restoreRig(t, r, 62)
	id, _ := slowRestore(r, ss)
	r.stop()
	stopAgent()

	r = startServer(t, home, r.addr)
	j, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != catalog.StateCanceled || !strings.Contains(j.Error, "server is stopping") {
		t.Errorf("the restore running at shutdown: %s (%q); want canceled because the server stopped", j.State, j.Error)
	}
	r.startAgent(ahome, "c1")
	r.restoreAndCheck("c1", ss, src)
}

// A server killed mid-restore leaves the job running in the catalog; the
// next server marks it interrupted, the saveset stays complete, and a new
// restore gives back every file.
func TestServerKilledMidRestore(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	child, kill := startChildServer(t, home)
	ahome := child.enroll("c1", "")
	stopAgent, _ := launchAgent(t, ahome, "c1")
	child.waitOnline("c1", true)
	src, ss := restoreRig(t, child, 63)
	id, _ := slowRestore(child, ss)
	kill()
	child.admin.Close()

	r := startServer(t, home, child.addr)
	j, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != catalog.StateInterrupted {
		t.Errorf("the restore running when the server was killed: %s (%q); want interrupted", j.State, j.Error)
	}
	if st := savesetStatus(t, r, ss); st != catalog.StatusComplete {
		t.Errorf("its saveset %d is %q; want complete", ss, st)
	}
	r.waitOnline("c1", true)
	r.restoreAndCheck("c1", ss, src)
	stopAgent()
}
