package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
)

// A policy's backup takes an appendable tape of its pool, then a blank one
// from scratch; with neither it waits and says so, and adding a tape lets
// it run. An ad-hoc backup never writes to a policy's tape.
func TestPoolWaitsForATapeUntilOneIsAdded(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	env := r.srv.Env()
	if _, err := env.CreateLibrary(library.Config{Name: "tiny", Slots: 1, Drives: 1, TapeSize: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	makeTree(t, src, 5, 3)
	// An ad-hoc backup takes the only tape (it stays in no pool).
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "tiny"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("ad-hoc backup: %s %s", j.State, j.Error)
	}
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "tiny", Pool: "weekly", Policy: "weekly"})[0]
	r.pollJob(id, 20*time.Second, "waits for a tape", func(j *api.Job) bool {
		return j.State == catalog.StateWaiting && strings.Contains(j.Reason, "waiting for a tape") && strings.Contains(j.Reason, "weekly")
	})
	codes, err := env.AddTapes("tiny", 1)
	if err != nil {
		t.Fatal(err)
	}
	done := r.wait(id)
	if done.State != catalog.StateSucceeded {
		t.Fatalf("pool backup after tape add: %s %s", done.State, done.Error)
	}
	if len(done.Tapes) != 1 || done.Tapes[0] != codes[0] {
		t.Fatalf("pool backup wrote to %v, want the new tape %v", done.Tapes, codes)
	}
	if pool, _ := env.Catalog.TapePool(codes[0]); pool != "weekly" {
		t.Fatalf("the new tape joined pool %q", pool)
	}
	// The next backup of the pool appends to the pool's tape.
	again := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "tiny", Pool: "weekly"})[0])
	if again.State != catalog.StateSucceeded || again.Tapes[0] != codes[0] {
		t.Fatalf("second pool backup: %s %v", again.State, again.Tapes)
	}
}
