package server

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
)

// A stream of a split backup starts only once the stream before it has its
// saveset (or has ended), so the split's savesets are numbered in stream
// order whichever job wins a drive first.
func TestStreamWaitsForThePreviousStreamsSaveset(t *testing.T) {
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	q := &queue{s: &Server{env: env}}
	req := api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{"/srv"}, Streams: 3}
	var jobs []*catalog.Job
	var parent int64
	for k := 1; k <= 3; k++ {
		j := &catalog.Job{Kind: api.KindBackup, State: catalog.StateQueued, Client: "c1", ParentID: parent}
		if err := env.Catalog.CreateJob(j); err != nil {
			t.Fatal(err)
		}
		if k == 1 {
			parent = j.ID
		}
		jobs = append(jobs, j)
	}
	turn := func(k int) string {
		r := req
		r.Stream = k
		return q.streamTurn(jobs[k-1], r)
	}
	set := func(k int, state string, saveset int64) {
		j := jobs[k-1]
		j.State, j.SavesetID = state, saveset
		if err := env.Catalog.UpdateJob(j); err != nil {
			t.Fatal(err)
		}
	}
	if got := turn(1); got != "" {
		t.Errorf("stream 1 waits: %q", got)
	}
	if got := turn(2); !strings.Contains(got, "stream 1 of 3") {
		t.Errorf("stream 2 with stream 1 queued: %q, want it to wait for stream 1", got)
	}
	set(1, catalog.StateRunning, 0)
	if got := turn(2); got == "" {
		t.Error("stream 2 starts while stream 1 runs without a saveset yet")
	}
	set(1, catalog.StateRunning, 7)
	if got := turn(2); got != "" {
		t.Errorf("stream 2 with stream 1's saveset made: %q", got)
	}
	if got := turn(3); !strings.Contains(got, "stream 2 of 3") {
		t.Errorf("stream 3 with stream 2 queued: %q", got)
	}
	set(2, catalog.StateFailed, 0)
	if got := turn(3); got != "" {
		t.Errorf("stream 3 after stream 2 failed: %q", got)
	}
	// A backup that is not split never waits.
	if got := q.streamTurn(jobs[1], api.JobRequest{Kind: api.KindBackup}); got != "" {
		t.Errorf("a lone backup waits: %q", got)
	}
}
