package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/server"
)

// Three weeks of a policy's schedules, driven by a fake clock: a full on
// Sundays and an incremental on the other days, one run per day; a run
// missed while the server was down happens once; the daily prune keeps two
// generations and says why for the rest.
func TestSchedulerRunsPoliciesAndPrunes(t *testing.T) {
	t.Parallel()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	// Sunday 2026-11-01 00:59 in Tokyo.
	clock := monitor.NewFakeClock(time.Date(2026, 11, 1, 0, 59, 0, 0, tokyo))
	opts := fastOpts
	opts.Clock, opts.SchedulerEvery = clock, -1
	r := startServerWith(t, t.TempDir(), "", opts)
	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 6, 1)
	cat := r.srv.Env().Catalog
	if err := cat.CreateSelection(catalog.Selection{Client: "c1", Name: "data", Paths: []string{src}}); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreatePolicy(&catalog.Policy{Name: "nightly", Client: "c1", Selection: "data", Zone: "Asia/Tokyo",
		FullCron: "0 1 * * 0", IncrCron: "0 1 * * 1-6", KeepGenerations: 2, Pool: "nightly", Compress: "low"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// tickAndWait runs the scheduler at the clock's time and waits for the
	// jobs it started; it returns them.
	seen := map[int64]bool{}
	tickAndWait := func() []*api.Job {
		t.Helper()
		r.srv.Tick(ctx)
		jobs, err := cat.Jobs(1000)
		if err != nil {
			t.Fatal(err)
		}
		var started []*api.Job
		for _, j := range jobs {
			if !seen[j.ID] && j.Kind == catalog.KindBackup {
				seen[j.ID] = true
				started = append(started, r.wait(j.ID))
			}
			if !seen[j.ID] && j.Kind == catalog.KindPrune {
				// The daily prune is a job of the queue.
				seen[j.ID] = true
				if p := r.wait(j.ID); p.State != catalog.StateSucceeded || len(p.Request) == 0 {
					t.Errorf("daily prune job %d: %s (%s), request %s", p.ID, p.State, p.Error, p.Request)
				}
			}
		}
		return started
	}
	// Before 01:00 nothing is due.
	if got := tickAndWait(); len(got) != 0 {
		t.Fatalf("before the first slot: %d jobs", len(got))
	}
	levels := map[string]int{}
	for day := range 21 {
		clock.Set(time.Date(2026, 11, 1+day, 1, 0, 30, 0, tokyo))
		got := tickAndWait()
		if len(got) != 1 {
			t.Fatalf("day %d: %d jobs started, want 1", day, len(got))
		}
		want := "incr"
		if day%7 == 0 {
			want = "full"
		}
		if got[0].Level != want || got[0].State != catalog.StateSucceeded {
			t.Fatalf("day %d: job %+v, want a succeeded %s", day, got[0], want)
		}
		levels[got[0].Level]++
		// A second tick in the same slot starts nothing.
		clock.Advance(5 * time.Minute)
		if again := tickAndWait(); len(again) != 0 {
			t.Fatalf("day %d: a second tick started %d jobs", day, len(again))
		}
	}
	if levels["full"] != 3 || levels["incr"] != 18 {
		t.Fatalf("levels: %v", levels)
	}
	// Down for three days: one run, not three.
	clock.Set(time.Date(2026, 11, 25, 9, 0, 0, 0, tokyo))
	if got := tickAndWait(); len(got) != 1 {
		t.Fatalf("after downtime: %d jobs, want 1", len(got))
	}
	// The daily prune ran during those days: two generations kept (the
	// newest full is of Nov 15), the first expired with a reason.
	sets, err := cat.Savesets(catalog.SavesetFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var expired, kept int
	for _, s := range sets {
		if s.Policy != "nightly" {
			t.Errorf("saveset %d has policy %q", s.ID, s.Policy)
		}
		if s.Expired {
			expired++
			if s.ExpireReason == "" {
				t.Errorf("saveset %d expired without a reason", s.ID)
			}
			if !s.Created.Before(time.Date(2026, 11, 8, 0, 0, 0, 0, tokyo)) {
				t.Errorf("saveset %d of %s expired; only the first week should", s.ID, s.Created)
			}
		} else {
			kept++
		}
	}
	if expired != 7 {
		t.Fatalf("%d savesets expired, want the first week's 7 (kept %d)", expired, kept)
	}
	// After each daily prune the catalog went to tape.
	var catalogJobs int
	jobs, err := cat.Jobs(1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Kind == catalog.KindCatalog {
			if j := r.wait(j.ID); j.State != catalog.StateSucceeded {
				t.Errorf("catalog backup job %d: %s %s", j.ID, j.State, j.Error)
			} else if len(j.Request) == 0 {
				t.Errorf("catalog backup job %d did not go through the queue", j.ID)
			}
			catalogJobs++
		}
	}
	// One per daily prune, a job of the queue; a day whose job still waits
	// for a drive at the next prune merges into it, so count at least half.
	if catalogJobs < 12 {
		t.Errorf("%d catalog backups in 24 days of daily prunes", catalogJobs)
	}
	if last, err := r.srv.Env().LastCatalogBackup(); err != nil || last == nil {
		t.Errorf("no last catalog backup recorded: %v", err)
	}
}

var _ = server.Options{}

// A run that is still going when its next slot comes is not started a
// second time; the slot after it runs normally.
func TestSchedulerNeverStartsARunTwice(t *testing.T) {
	t.Parallel()
	clock := monitor.NewFakeClock(time.Date(2026, 11, 2, 0, 59, 0, 0, time.UTC))
	opts := fastOpts
	opts.Clock, opts.SchedulerEvery = clock, -1
	r := startServerWith(t, t.TempDir(), "", opts)
	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 12, 9) // about 1 MB, a third of it incompressible
	cat := r.srv.Env().Catalog
	if err := cat.CreateSelection(catalog.Selection{Client: "c1", Name: "data", Paths: []string{src}}); err != nil {
		t.Fatal(err)
	}
	// 300 KB/s: the run takes a few seconds.
	if err := cat.CreatePolicy(&catalog.Policy{Name: "hourly", Client: "c1", Selection: "data", Zone: "UTC",
		IncrCron: "0 * * * *", KeepDays: 7, Pool: "hourly", Compress: "none", BWLimit: 300 << 10}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	backups := func() []*catalog.Job {
		jobs, err := cat.Jobs(100)
		if err != nil {
			t.Fatal(err)
		}
		var out []*catalog.Job
		for _, j := range jobs {
			if j.Kind == catalog.KindBackup {
				out = append(out, j)
			}
		}
		return out
	}
	clock.Set(time.Date(2026, 11, 2, 1, 0, 10, 0, time.UTC))
	r.srv.Tick(ctx)
	first := backups()
	if len(first) != 1 {
		t.Fatalf("first slot: %d jobs", len(first))
	}
	r.waitProgress(first[0].ID)
	// The next slot comes while the first run still sends.
	clock.Set(time.Date(2026, 11, 2, 2, 0, 10, 0, time.UTC))
	r.srv.Tick(ctx)
	if got := backups(); len(got) != 1 {
		t.Fatalf("a slot during a running run started %d jobs in all, want 1", len(got))
	}
	if j := r.wait(first[0].ID); j.State != catalog.StateSucceeded {
		t.Fatalf("first run: %s %s", j.State, j.Error)
	}
	clock.Set(time.Date(2026, 11, 2, 3, 0, 10, 0, time.UTC))
	r.srv.Tick(ctx)
	if got := backups(); len(got) != 2 {
		t.Fatalf("the slot after the long run started %d jobs in all, want 2", len(got))
	}
}
