package engine_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
)

// A backup still running while a thousand other jobs came and went after
// it started still holds back tape recycling, and one whose process died
// is still reaped: running jobs are found by their state, not among the
// newest jobs.
func TestRunningJobsFoundBehindAThousandOthers(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	live := &catalog.Job{Kind: catalog.KindBackup, State: catalog.StateRunning} // no owner: never taken for dead
	dead := &catalog.Job{Kind: catalog.KindBackup, State: catalog.StateRunning, Owner: "job-gone.lock"}
	for _, j := range []*catalog.Job{live, dead} {
		if err := env.Catalog.CreateJob(j); err != nil {
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
	reaped, err := env.ReapDeadJobs()
	if err != nil || !reflect.DeepEqual(reaped, []int64{dead.ID}) {
		t.Errorf("reaped %v, %v; want job %d", reaped, err, dead.ID)
	}
	if j, err := env.Catalog.Job(dead.ID); err != nil || j.State != catalog.StateInterrupted {
		t.Errorf("the dead job: %+v, %v; want interrupted", j, err)
	}
}
