package server_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// A remote restore's progress names the tape in use, as a local one's
// does: the server reads the tapes the agent's data comes from.
func TestRemoteRestoreProgressCarriesTheTape(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	randomFiles(t, src, 6, 1<<20, 5)
	b := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none"})[0])
	if b.State != catalog.StateSucceeded || len(b.Figures.Tapes) == 0 {
		t.Fatalf("backup: %s (%s), tapes %v", b.State, b.Error, b.Figures.Tapes)
	}
	// Limited to about 3 s, so that the agent reports progress on the way.
	id := r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b.SavesetID, To: t.TempDir(), BWLimit: 2 << 20})[0]
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var seen int
	err := r.admin.Follow(ctx, id, func(ev api.Event) error {
		if ev.Kind != api.EventProgress || ev.Bytes == 0 {
			return nil
		}
		seen++
		if !slices.Contains(b.Figures.Tapes, ev.Tape) {
			t.Errorf("restore progress at %d bytes names tape %q; the saveset is on %v", ev.Bytes, ev.Tape, b.Figures.Tapes)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("following the restore: %v", err)
	}
	if seen == 0 {
		t.Fatal("the restore reported no progress")
	}
	if j := r.wait(id); j.State != catalog.StateSucceeded {
		t.Fatalf("restore: %s (%s)", j.State, j.Error)
	}
}
