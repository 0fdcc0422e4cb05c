package engine_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/job"
)

// A backup still running while a thousand other jobs came and went after
// it started still holds back tape recycling, and one whose process died
// is still reclaimed: running jobs are found by their leases, not among the
// newest jobs.
func TestRunningJobsFoundBehindAThousandOthers(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	self := job.Self()
	gone := job.Holder{Host: self.Host, PID: 4194303, Start: 1, Random: "gone"} // no such process
	live := &catalog.Job{Kind: catalog.KindBackup}
	dead := &catalog.Job{Kind: catalog.KindBackup}
	for _, c := range []struct {
		j      *catalog.Job
		holder job.Holder
	}{{live, self}, {dead, gone}} {
		if _, err := env.Catalog.CreateLeasedJob(c.j, c.holder.String(), time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 {
		if err := env.Catalog.CreateJob(&catalog.Job{Kind: catalog.KindVerify, State: catalog.StateSucceeded}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := env.Prune(t.Context(), engine.PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "1 backup running") {
		t.Errorf("prune notes %q: want the running backup to hold back recycling", res.Notes)
	}
	if j, err := env.Catalog.Job(dead.ID); err != nil || j.State != catalog.StateInterrupted {
		t.Errorf("the dead job: %+v, %v; want interrupted", j, err)
	}
	if j, err := env.Catalog.Job(live.ID); err != nil || j.State != catalog.StateRunning {
		t.Errorf("the live job: %+v, %v; want running", j, err)
	}
}
