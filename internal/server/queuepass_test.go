package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
)

// countingChanger counts how often the library's tapes are listed.
type countingChanger struct {
	library.Changer
	tapes *atomic.Int64
}

func (c countingChanger) Tapes() ([]library.TapeStatus, error) {
	c.tapes.Add(1)
	return c.Changer.Tapes()
}

// One look at the queue reads a library's tapes once, however many jobs
// wait on it: a burst of queued backups cost a listing of every tape (and
// a drive lease written and given back) per job, on every look.
func TestAQueuePassReadsTheTapesOnce(t *testing.T) {
	const jobs = 12
	s, names := newHubServer(t, jobs)
	lib, err := s.env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	tapes, err := lib.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tapes {
		if err := lib.MarkFull(tp.Barcode); err != nil { // no writable tape: every job waits
			t.Fatal(err)
		}
	}
	var listed atomic.Int64
	s.env.OpenChanger = func(rec catalog.Library) (library.Changer, error) {
		l, err := library.Open(rec.Dir)
		if err != nil {
			return nil, err
		}
		return countingChanger{Changer: l, tapes: &listed}, nil
	}
	var ids []int64
	for _, name := range names {
		s.hub.mu.Lock()
		s.hub.session(name).polls = 1 // online
		s.hub.mu.Unlock()
		req, _ := json.Marshal(api.JobRequest{Kind: api.KindBackup, Client: name, Paths: []string{"/srv"}})
		j := &catalog.Job{Kind: api.KindBackup, State: catalog.StateQueued, Client: name, Request: req, Reason: "queued"}
		if err := s.env.Catalog.CreateJob(j); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	s.q.schedule(context.Background())
	if n := listed.Load(); n != 1 {
		t.Errorf("one look at %d queued backups listed the library's tapes %d times, want 1", jobs, n)
	}
	for _, id := range ids {
		j, err := s.env.Catalog.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != catalog.StateWaiting || !strings.HasPrefix(j.Reason, "waiting for a tape") {
			t.Errorf("job %d: %s, %q; want waiting for a tape", id, j.State, j.Reason)
		}
	}
	leases, err := s.env.Catalog.LiveDriveLeases(s.env.Jobs.Options().Clock.Now())
	if err != nil || len(leases) != 0 {
		t.Errorf("jobs waiting for a tape hold drive leases: %v, %v", leases, err)
	}
}

// The drives of the jobs one look at the queue starts are leased in one
// catalog transaction (one commit, all at the same time), not a commit
// per job: under a burst of jobs each commit waits behind the running
// jobs' own, and the last job of the burst started seconds late.
func TestAQueuePassLeasesItsDrivesTogether(t *testing.T) {
	const jobs = 2 // the default library's drives
	s, names := newHubServer(t, jobs)
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	defer func() { s.cancel(errStopping); s.wg.Wait() }()
	for _, name := range names {
		s.hub.mu.Lock()
		s.hub.session(name).polls = 1 // online
		s.hub.mu.Unlock()
		req, _ := json.Marshal(api.JobRequest{Kind: api.KindBackup, Client: name, Paths: []string{t.TempDir()}})
		if err := s.env.Catalog.CreateJob(&catalog.Job{Kind: api.KindBackup, State: catalog.StateQueued, Client: name, Request: req}); err != nil {
			t.Fatal(err)
		}
	}
	s.q.schedule(s.ctx)
	// The jobs now wait for their agents (which never answer), holding
	// their drives.
	leases, err := s.env.Catalog.LiveDriveLeases(s.env.Jobs.Options().Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != jobs {
		t.Fatalf("%d drive leases after one look at %d queued backups, want %d: %+v", len(leases), jobs, jobs, leases)
	}
	for _, l := range leases[1:] {
		if !l.Acquired.Equal(leases[0].Acquired) {
			t.Errorf("drive %d leased at %s, drive %d at %s: one transaction per job, not one for the look",
				leases[0].Drive, leases[0].Acquired.Format("15:04:05.000000000"), l.Drive, l.Acquired.Format("15:04:05.000000000"))
		}
	}
}
