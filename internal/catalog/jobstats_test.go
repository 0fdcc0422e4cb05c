package catalog

import (
	"testing"
	"time"
)

// The tallies, durations and last successes are what the job records say.
func TestJobStats(t *testing.T) { onBoth(t, testJobStats) }

func testJobStats(t *testing.T) {
	c, _ := openTemp(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	add := func(kind, state, client string, secs int, files, bytes int64) {
		j := &Job{Kind: kind, State: state, Client: client, Files: files, SourceBytes: bytes, MediaBytes: bytes / 2}
		if state != StateQueued {
			j.Started = t0
		}
		if state != StateQueued && state != StateRunning {
			j.Finished = t0.Add(time.Duration(secs) * time.Second)
		}
		must(t, c.CreateJob(j))
	}
	add(KindBackup, StateSucceeded, "a", 5, 10, 1000)
	add(KindBackup, StateSucceeded, "a", 50, 20, 2000) // a's newest success ends at t0+50s
	add(KindBackup, StateWarnings, "b", 500, 1, 100)
	add(KindBackup, StateFailed, "c", 1, 0, 0)
	add(KindBackup, StateRunning, "a", 0, 3, 30)
	add(KindRestore, StateQueued, "a", 0, 0, 0)

	tallies, err := c.JobTallies()
	must(t, err)
	want := map[[2]string]JobTally{
		{KindBackup, StateSucceeded}: {Count: 2, Files: 30, SourceBytes: 3000, MediaBytes: 1500},
		{KindBackup, StateWarnings}:  {Count: 1, Files: 1, SourceBytes: 100, MediaBytes: 50},
		{KindBackup, StateFailed}:    {Count: 1},
		{KindBackup, StateRunning}:   {Count: 1, Files: 3, SourceBytes: 30, MediaBytes: 15},
		{KindRestore, StateQueued}:   {Count: 1},
	}
	if len(tallies) != len(want) {
		t.Fatalf("tallies %+v; want %d of them", tallies, len(want))
	}
	for _, got := range tallies {
		w := want[[2]string{got.Kind, got.State}]
		w.Kind, w.State = got.Kind, got.State
		if got != w {
			t.Errorf("tally %+v; want %+v", got, w)
		}
	}

	ds, err := c.EndedJobDurations([]float64{1, 10, 100})
	must(t, err)
	if len(ds) != 1 || ds[0].Kind != KindBackup || ds[0].Count != 4 || ds[0].Sum != 556 {
		t.Fatalf("durations %+v; want 4 ended backups of 556 s in all", ds)
	}
	if b := ds[0].Buckets; b[0] != 1 || b[1] != 2 || b[2] != 3 {
		t.Errorf("buckets ≤1s, ≤10s, ≤100s: %v; want [1 2 3]", b)
	}

	last, err := c.LastSuccessfulBackups()
	must(t, err)
	if len(last) != 2 || !last["a"].Equal(t0.Add(50*time.Second)) || !last["b"].Equal(t0.Add(500*time.Second)) {
		t.Errorf("last successes %v; want a at +50s and b (warnings) at +500s, c (failed) left out", last)
	}

	for i, st := range []string{StatusComplete, StatusComplete, StatusFailed} {
		ss := &Saveset{JobID: 1, Client: "a", Selection: "home", Level: "full", Status: st, Policy: "nightly",
			Created: t0, Finished: t0.Add(time.Duration(i+1) * time.Hour)}
		must(t, c.CreateSaveset(ss))
	}
	must(t, c.CreateSaveset(&Saveset{JobID: 1, Client: "a", Selection: "adhoc", Level: "full", Status: StatusComplete,
		Created: t0, Finished: t0.Add(5 * time.Hour)}))
	pol, err := c.LastPolicyBackups()
	must(t, err)
	if len(pol) != 1 || !pol["nightly"].Equal(t0.Add(2*time.Hour)) {
		t.Errorf("last policy backups %v; want nightly at +2h (the failed saveset and the ad-hoc one left out)", pol)
	}
}

// TestDatabaseSize: a PostgreSQL catalog reports its database's size (the
// metrics' kura_catalog_size_bytes has no file to stat there); a SQLite
// one leaves it to its files.
func TestDatabaseSize(t *testing.T) { onBoth(t, testDatabaseSize) }

func testDatabaseSize(t *testing.T) {
	c, _ := openTemp(t)
	size, ok, err := c.DatabaseSize()
	must(t, err)
	if pg := backendOf(t) == "postgres"; ok != pg || (pg && size <= 0) {
		t.Fatalf("DatabaseSize = %d, %v on %s", size, ok, backendOf(t))
	}
}
