package catalog

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"
)

const ttl = 30 * time.Second

func queuedJob(t *testing.T, c *Catalog) *Job {
	t.Helper()
	j := &Job{Kind: KindBackup, State: StateQueued, Client: "db1", Reason: "waiting for a drive"}
	must(t, c.CreateJob(j))
	return j
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func TestJobLeaseLifecycle(t *testing.T) { onBoth(t, testJobLeaseLifecycle) }

func testJobLeaseLifecycle(t *testing.T) {
	c, _ := openTemp(t)
	j := queuedJob(t, c)

	got, l, err := c.AcquireJobLease(j.ID, "a", t0, ttl)
	must(t, err)
	if got.State != StateRunning || !got.Started.Equal(t0) || got.Reason != "" {
		t.Errorf("taken job: state %s, started %v, reason %q", got.State, got.Started, got.Reason)
	}
	if l.Holder != "a" || !l.Acquired.Equal(t0) || !l.Expires.Equal(t0.Add(ttl)) {
		t.Errorf("lease = %+v", l)
	}
	row, err := c.Job(j.ID)
	must(t, err)
	if row.State != StateRunning {
		t.Errorf("job row is %s after the lease was taken, want running", row.State)
	}

	// Another holder cannot take it while the lease lives, nor once it has
	// expired: the job has started, so it must be reclaimed, never run again.
	_, _, err = c.AcquireJobLease(j.ID, "b", t0.Add(ttl-time.Nanosecond), ttl)
	wantErr(t, "b takes a live lease", err, ErrLeaseHeld)
	_, _, err = c.AcquireJobLease(j.ID, "b", t0.Add(ttl), ttl)
	wantErr(t, "b takes an expired lease of a running job", err, ErrNotQueued)
	_, _, err = c.AcquireJobLease(j.ID, "a", t0, ttl)
	wantErr(t, "a takes its own running job again", err, ErrNotQueued)

	// A heartbeat moves the expiry.
	l, err = c.RenewJobLease(j.ID, "a", t0.Add(10*time.Second), ttl)
	must(t, err)
	if !l.Heartbeat.Equal(t0.Add(10*time.Second)) || !l.Expires.Equal(t0.Add(40*time.Second)) || !l.Acquired.Equal(t0) {
		t.Errorf("renewed lease = %+v", l)
	}
	_, err = c.RenewJobLease(j.ID, "b", t0.Add(10*time.Second), ttl)
	wantErr(t, "b renews a's lease", err, ErrLeaseLost)

	live, err := c.LiveJobLeases(t0.Add(39 * time.Second))
	must(t, err)
	if len(live) != 1 || live[0].JobID != j.ID || live[0].Holder != "a" {
		t.Errorf("live leases before expiry = %+v", live)
	}
	if ids, err := c.ReclaimExpiredJobs(t0.Add(39 * time.Second)); err != nil || len(ids) != 0 {
		t.Fatalf("reclaim before expiry = %v, %v", ids, err)
	}

	// a dies: at the expiry its job is reclaimed, once.
	at := t0.Add(40 * time.Second)
	if live, _ := c.LiveJobLeases(at); len(live) != 0 {
		t.Errorf("live leases at expiry = %+v", live)
	}
	if exp, _ := c.ExpiredJobLeases(at); len(exp) != 1 || exp[0].JobID != j.ID {
		t.Errorf("expired leases at expiry = %+v", exp)
	}
	ids, err := c.ReclaimExpiredJobs(at)
	must(t, err)
	if len(ids) != 1 || ids[0] != j.ID {
		t.Fatalf("reclaimed %v, want [%d]", ids, j.ID)
	}
	row, err = c.Job(j.ID)
	must(t, err)
	if row.State != StateInterrupted || !strings.HasPrefix(row.Error, ReasonLeaseExpired) ||
		!strings.Contains(row.Error, "holder a ") || !row.Finished.Equal(at) || len(row.Log) != 1 {
		t.Errorf("reclaimed job: %s, %q, finished %v, log %q", row.State, row.Error, row.Finished, row.Log)
	}
	if ids, err := c.ReclaimExpiredJobs(at.Add(time.Hour)); err != nil || len(ids) != 0 {
		t.Errorf("second reclaim = %v, %v", ids, err)
	}
	_, err = c.JobLease(j.ID)
	wantErr(t, "lease of a reclaimed job", err, ErrNotFound)

	// a wakes up: it can neither renew nor record an end over the reclaim.
	_, err = c.RenewJobLease(j.ID, "a", at, ttl)
	wantErr(t, "renew after reclaim", err, ErrLeaseLost)
	row.State, row.Error = StateSucceeded, ""
	wantErr(t, "finish after reclaim", c.FinishLeasedJob(row, "a"), ErrLeaseLost)
	row.State = StateRunning
	wantErr(t, "update after reclaim", c.UpdateLeasedJob(row, "a"), ErrLeaseLost)
	if row, _ := c.Job(j.ID); row.State != StateInterrupted {
		t.Errorf("the holder overwrote the reclaim: %s", row.State)
	}
}

// A holder that was only slow keeps its job if nobody reclaimed it first.
func TestExpiredLeaseRenewedBeforeReclaim(t *testing.T) {
	onBoth(t, testExpiredLeaseRenewedBeforeReclaim)
}

func testExpiredLeaseRenewedBeforeReclaim(t *testing.T) {
	c, _ := openTemp(t)
	j := queuedJob(t, c)
	_, _, err := c.AcquireJobLease(j.ID, "a", t0, ttl)
	must(t, err)
	late := t0.Add(ttl + time.Minute)
	_, err = c.RenewJobLease(j.ID, "a", late, ttl)
	must(t, err)
	if ids, err := c.ReclaimExpiredJobs(late); err != nil || len(ids) != 0 {
		t.Fatalf("reclaimed %v, %v after the renewal", ids, err)
	}
}

func TestFinishAndReleaseJobLease(t *testing.T) { onBoth(t, testFinishAndReleaseJobLease) }

func testFinishAndReleaseJobLease(t *testing.T) {
	c, _ := openTemp(t)
	j := queuedJob(t, c)
	_, _, err := c.AcquireJobLease(j.ID, "a", t0, ttl)
	must(t, err)

	// Handed back: waiting again, and b may take it at once.
	wantErr(t, "release as running", c.ReleaseJobLease(j.ID, "a", StateRunning, ""), ErrInvalid)
	wantErr(t, "release by b", c.ReleaseJobLease(j.ID, "b", StateWaiting, "x"), ErrLeaseLost)
	must(t, c.ReleaseJobLease(j.ID, "a", StateWaiting, "waiting for a tape"))
	row, err := c.Job(j.ID)
	must(t, err)
	if row.State != StateWaiting || row.Reason != "waiting for a tape" {
		t.Errorf("released job: %s %q", row.State, row.Reason)
	}
	row, _, err = c.AcquireJobLease(j.ID, "b", t0.Add(time.Second), ttl)
	must(t, err)
	_, err = c.AcquireDriveLease("lib", 1, "b", j.ID, t0.Add(time.Second), ttl)
	must(t, err)

	row.Files = 42
	row.Log = []string{"writing"}
	must(t, c.UpdateLeasedJob(row, "b"))
	row.State = StateSucceeded
	wantErr(t, "update to a final state", c.UpdateLeasedJob(row, "b"), ErrInvalid)
	row.State = StateRunning
	wantErr(t, "finish as running", c.FinishLeasedJob(row, "b"), ErrInvalid)
	row.State, row.Finished = StateSucceeded, t0.Add(time.Minute)
	wantErr(t, "finish by a", c.FinishLeasedJob(row, "a"), ErrLeaseLost)
	must(t, c.FinishLeasedJob(row, "b"))

	got, err := c.Job(j.ID)
	must(t, err)
	if got.State != StateSucceeded || got.Files != 42 || len(got.Log) != 1 {
		t.Errorf("finished job: %s, %d files, log %q", got.State, got.Files, got.Log)
	}
	_, err = c.JobLease(j.ID)
	wantErr(t, "lease of a finished job", err, ErrNotFound)
	if ds, _ := c.LiveDriveLeases(t0); len(ds) != 0 {
		t.Errorf("drive leases after the job finished: %+v", ds)
	}
	_, _, err = c.AcquireJobLease(j.ID, "a", t0.Add(time.Hour), ttl)
	wantErr(t, "take a finished job", err, ErrNotQueued)
}

func TestCreateLeasedJob(t *testing.T) { onBoth(t, testCreateLeasedJob) }

func testCreateLeasedJob(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{Kind: KindVerify}
	l, err := c.CreateLeasedJob(j, "a", t0, ttl)
	must(t, err)
	if j.ID == 0 || l.JobID != j.ID || j.State != StateRunning || !j.Started.Equal(t0) {
		t.Fatalf("job %+v, lease %+v", j, l)
	}
	// Running from the start: the server's queue never sees it.
	if q, _ := c.QueuedJobs(); len(q) != 0 {
		t.Errorf("queued jobs: %d", len(q))
	}
	_, err = c.CreateLeasedJob(&Job{ID: j.ID, Kind: KindVerify}, "b", t0, ttl)
	wantErr(t, "create with a taken ID", err, ErrExists)
	if l, _ := c.JobLease(j.ID); l == nil || l.Holder != "a" {
		t.Errorf("lease after a failed create: %+v", l)
	}
	for _, kind := range []string{KindPrune, KindErase, KindCatalog, KindScan} {
		_, err := c.CreateLeasedJob(&Job{Kind: kind}, "a", t0, ttl)
		must(t, err)
	}
}

func TestLeaseArgumentsChecked(t *testing.T) { onBoth(t, testLeaseArgumentsChecked) }

func testLeaseArgumentsChecked(t *testing.T) {
	c, _ := openTemp(t)
	j := queuedJob(t, c)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no holder", func() error { _, _, err := c.AcquireJobLease(j.ID, "", t0, ttl); return err }()},
		{"zero ttl", func() error { _, _, err := c.AcquireJobLease(j.ID, "a", t0, 0); return err }()},
		{"zero time", func() error { _, _, err := c.AcquireJobLease(j.ID, "a", time.Time{}, ttl); return err }()},
		{"drive 0", func() error { _, err := c.AcquireDriveLease("lib", 0, "a", 0, t0, ttl); return err }()},
		{"no library", func() error { _, err := c.AcquireDriveLease("", 1, "a", 0, t0, ttl); return err }()},
		{"bad kind", func() error { _, err := c.CreateLeasedJob(&Job{Kind: "dance"}, "a", t0, ttl); return err }()},
	} {
		if !errors.Is(tc.err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, tc.err)
		}
	}
	_, _, err := c.AcquireJobLease(999, "a", t0, ttl)
	wantErr(t, "no such job", err, ErrNotFound)
	if row, _ := c.Job(j.ID); row.State != StateQueued {
		t.Errorf("a refused acquire changed the job: %s", row.State)
	}
}

func TestReclaimMarksBackupSavesetIncomplete(t *testing.T) {
	onBoth(t, testReclaimMarksBackupSavesetIncomplete)
}

func testReclaimMarksBackupSavesetIncomplete(t *testing.T) {
	c, _ := openTemp(t)
	ss := fullSaveset()
	must(t, c.CreateSaveset(ss))
	j := &Job{Kind: KindBackup, SavesetID: ss.ID}
	_, err := c.CreateLeasedJob(j, "a", t0, ttl)
	must(t, err)
	_, err = c.ReclaimExpiredJobs(t0.Add(ttl))
	must(t, err)
	got, err := c.Saveset(ss.ID)
	must(t, err)
	if got.Status != StatusIncomplete {
		t.Errorf("saveset of a reclaimed backup is %s, want incomplete", got.Status)
	}
}

func TestDriveLeasesExclusive(t *testing.T) { onBoth(t, testDriveLeasesExclusive) }

func testDriveLeasesExclusive(t *testing.T) {
	c, _ := openTemp(t)
	_, err := c.AcquireDriveLease("lib", 1, "a", 7, t0, ttl)
	must(t, err)
	_, err = c.AcquireDriveLease("lib", 1, "b", 8, t0, ttl)
	wantErr(t, "b takes a's drive", err, ErrLeaseHeld)
	_, err = c.AcquireDriveLease("lib", 1, "a", 9, t0, ttl)
	wantErr(t, "another job of a takes the drive", err, ErrLeaseHeld)
	_, err = c.AcquireDriveLease("lib", 2, "b", 8, t0, ttl)
	must(t, err)
	_, err = c.AcquireDriveLease("other", 1, "b", 8, t0, ttl)
	must(t, err)

	// Taking it again renews it, keeping when it was first taken.
	l, err := c.AcquireDriveLease("lib", 1, "a", 7, t0.Add(20*time.Second), ttl)
	must(t, err)
	if !l.Acquired.Equal(t0) || !l.Expires.Equal(t0.Add(50*time.Second)) {
		t.Errorf("re-taken lease = %+v", l)
	}
	must(t, c.RenewDriveLease("lib", 1, "a", 7, t0.Add(30*time.Second), ttl))
	wantErr(t, "b renews a's drive", c.RenewDriveLease("lib", 1, "b", 8, t0, ttl), ErrLeaseLost)

	live, err := c.LiveDriveLeases(t0.Add(59 * time.Second))
	must(t, err)
	if len(live) != 1 || live[0].Library != "lib" || live[0].Drive != 1 || live[0].Holder != "a" || live[0].JobID != 7 {
		t.Errorf("live drive leases = %+v", live)
	}

	// Expired: b may take it; a has lost it.
	_, err = c.AcquireDriveLease("lib", 1, "b", 8, t0.Add(60*time.Second), ttl)
	must(t, err)
	wantErr(t, "a renews a lost drive", c.RenewDriveLease("lib", 1, "a", 7, t0.Add(60*time.Second), ttl), ErrLeaseLost)
	wantErr(t, "a releases a lost drive", c.ReleaseDriveLease("lib", 1, "a", 7), ErrLeaseLost)
	must(t, c.ReleaseDriveLease("lib", 1, "b", 8))
	_, err = c.AcquireDriveLease("lib", 1, "a", 7, t0.Add(61*time.Second), ttl)
	must(t, err)
}

// A job's heartbeat renews the drives it holds; the reclaim frees them.
func TestJobHeartbeatRenewsItsDrives(t *testing.T) { onBoth(t, testJobHeartbeatRenewsItsDrives) }

func testJobHeartbeatRenewsItsDrives(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{Kind: KindBackup}
	_, err := c.CreateLeasedJob(j, "a", t0, ttl)
	must(t, err)
	_, err = c.AcquireDriveLease("lib", 1, "a", j.ID, t0, ttl)
	must(t, err)
	_, err = c.RenewJobLease(j.ID, "a", t0.Add(25*time.Second), ttl)
	must(t, err)
	_, err = c.AcquireDriveLease("lib", 1, "b", 0, t0.Add(ttl), ttl)
	wantErr(t, "b takes the drive of a renewed job", err, ErrLeaseHeld)

	_, err = c.ReclaimExpiredJobs(t0.Add(25*time.Second + ttl))
	must(t, err)
	if ds, _ := c.LiveDriveLeases(t0); len(ds) != 0 {
		t.Errorf("drive leases of a reclaimed job: %+v", ds)
	}
}

// Two processes (two handles on one file) race to take one queued job:
// exactly one of them gets it.
func TestAcquireJobLeaseTwoProcesses(t *testing.T) { onBoth(t, testAcquireJobLeaseTwoProcesses) }

func testAcquireJobLeaseTwoProcesses(t *testing.T) {
	c1, path := openTemp(t)
	c2, err := Open(path)
	must(t, err)
	defer c2.Close()
	for round := range 5 {
		j := queuedJob(t, c1)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			cat := []*Catalog{c1, c2}[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = cat.AcquireJobLease(j.ID, string(rune('a'+i)), t0, ttl)
			}()
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrLeaseHeld):
				t.Errorf("round %d, taker %d: %v", round, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d processes took the job, want 1 (%v)", round, won, errs)
		}
	}
}

// A holder known to be dead loses its jobs at once, before their leases
// expire, with their savesets and drives; a holder that may be alive keeps
// its live jobs; an expired lease is reclaimed whatever gone says.
func TestReclaimJobsOfGoneHolders(t *testing.T) { onBoth(t, testReclaimJobsOfGoneHolders) }

func testReclaimJobsOfGoneHolders(t *testing.T) {
	c, _ := openTemp(t)
	dead := &Job{Kind: KindBackup}
	_, err := c.CreateLeasedJob(dead, "dead", t0, ttl)
	must(t, err)
	ss := &Saveset{JobID: dead.ID, Level: LevelFull, Status: StatusRunning}
	must(t, c.CreateSaveset(ss))
	dead.SavesetID = ss.ID
	must(t, c.UpdateLeasedJob(dead, "dead"))
	_, err = c.AcquireDriveLease("lib", 1, "dead", dead.ID, t0, ttl)
	must(t, err)
	live := &Job{Kind: KindBackup}
	_, err = c.CreateLeasedJob(live, "live", t0, ttl)
	must(t, err)
	_, err = c.AcquireDriveLease("lib", 2, "live", live.ID, t0, ttl)
	must(t, err)

	var asked []string
	gone := func(h string) string {
		asked = append(asked, h)
		if h == "dead" {
			return "is gone (process 7 no longer runs)"
		}
		return ""
	}
	ids, err := c.ReclaimJobs(t0.Add(time.Second), gone)
	must(t, err)
	if len(ids) != 1 || ids[0] != dead.ID {
		t.Fatalf("reclaimed %v, want [%d]", ids, dead.ID)
	}
	row, err := c.Job(dead.ID)
	must(t, err)
	if row.State != StateInterrupted || !strings.HasPrefix(row.Error, ReasonHolderGone) || !strings.Contains(row.Error, "process 7") {
		t.Errorf("the dead holder's job: %s (%q)", row.State, row.Error)
	}
	if got, _ := c.Saveset(ss.ID); got.Status != StatusIncomplete {
		t.Errorf("its saveset is %s, want incomplete", got.Status)
	}
	if row, _ := c.Job(live.ID); row.State != StateRunning {
		t.Errorf("the live holder's job is %s, want running", row.State)
	}
	drives, err := c.LiveDriveLeases(t0.Add(time.Second))
	must(t, err)
	if len(drives) != 1 || drives[0].Holder != "live" || drives[0].Drive != 2 {
		t.Errorf("drive leases after the reclaim: %+v; want only the live holder's drive 2", drives)
	}
	if len(asked) != 2 {
		t.Errorf("gone was asked about %q; want each holder once", asked)
	}

	// Expired, the live holder's job goes too, without asking.
	asked = nil
	ids, err = c.ReclaimJobs(t0.Add(ttl), gone)
	must(t, err)
	if len(ids) != 1 || ids[0] != live.ID || len(asked) != 0 {
		t.Errorf("reclaim at expiry: %v (asked %q), want [%d] without asking", ids, asked, live.ID)
	}
}

// A job left running by a Kura from before leases (an owner, no lease) is
// reclaimed when gone reports its owner dead, and only then; a running job
// with neither is left alone.
func TestReclaimJobsFromBeforeLeases(t *testing.T) { onBoth(t, testReclaimJobsFromBeforeLeases) }

func testReclaimJobsFromBeforeLeases(t *testing.T) {
	c, _ := openTemp(t)
	dead := &Job{Kind: KindBackup, State: StateRunning, Owner: "101-aa.lock", Started: t0}
	live := &Job{Kind: KindBackup, State: StateRunning, Owner: "102-bb.lock", Started: t0}
	bare := &Job{Kind: KindBackup, State: StateRunning, Started: t0}
	for _, j := range []*Job{dead, live, bare} {
		must(t, c.CreateJob(j))
	}
	ss := &Saveset{JobID: dead.ID, Level: LevelFull, Status: StatusRunning}
	must(t, c.CreateSaveset(ss))
	dead.SavesetID = ss.ID
	must(t, c.UpdateJob(dead))

	if ids, err := c.ReclaimExpiredJobs(t0.Add(time.Hour)); err != nil || len(ids) != 0 {
		t.Fatalf("reclaim of expired leases: %v, %v; want none", ids, err)
	}
	gone := func(h string) string {
		if h == "101-aa.lock" {
			return "is gone (process 101 no longer runs)"
		}
		return ""
	}
	ids, err := c.ReclaimJobs(t0.Add(time.Hour), gone)
	must(t, err)
	if len(ids) != 1 || ids[0] != dead.ID {
		t.Fatalf("reclaimed %v, want [%d]", ids, dead.ID)
	}
	got, err := c.Job(dead.ID)
	must(t, err)
	if got.State != StateInterrupted || !strings.HasPrefix(got.Error, ReasonHolderGone) || !strings.Contains(got.Error, "101-aa.lock") {
		t.Errorf("the dead owner's job: %s (%q)", got.State, got.Error)
	}
	if got, _ := c.Saveset(ss.ID); got.Status != StatusIncomplete {
		t.Errorf("its saveset is %s, want incomplete", got.Status)
	}
	for _, j := range []*Job{live, bare} {
		if got, _ := c.Job(j.ID); got.State != StateRunning {
			t.Errorf("job %d (owner %q) is %s, want running", j.ID, j.Owner, got.State)
		}
	}
}

// AcquireDriveLeases takes many drives in one transaction: a drive another
// holds is that claim's ErrLeaseHeld, and the others are taken all the same.
func TestAcquireDriveLeases(t *testing.T) { onBoth(t, testAcquireDriveLeases) }

func testAcquireDriveLeases(t *testing.T) {
	c, _ := openTemp(t)
	_, err := c.AcquireDriveLease("lib", 2, "b", 8, t0, ttl)
	must(t, err)
	errs, err := c.AcquireDriveLeases([]DriveClaim{{"lib", 1, 11}, {"lib", 2, 12}, {"other", 1, 13}}, "a", t0.Add(time.Second), ttl)
	must(t, err)
	if len(errs) != 3 || errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors of the claims: %v", errs)
	}
	wantErr(t, "a batch takes b's drive", errs[1], ErrLeaseHeld)
	live, err := c.LiveDriveLeases(t0.Add(2 * time.Second))
	must(t, err)
	got := map[string]int64{}
	for _, l := range live {
		got[fmt.Sprintf("%s/%d %s", l.Library, l.Drive, l.Holder)] = l.JobID
		if l.Holder == "a" && !l.Acquired.Equal(t0.Add(time.Second)) {
			t.Errorf("lease %+v: acquired at another time", l)
		}
	}
	want := map[string]int64{"lib/1 a": 11, "lib/2 b": 8, "other/1 a": 13}
	if !maps.Equal(got, want) {
		t.Errorf("live leases %v, want %v", got, want)
	}
	if _, err := c.AcquireDriveLeases([]DriveClaim{{"lib", 3, 1}, {"lib", 0, 2}}, "a", t0, ttl); !errors.Is(err, ErrInvalid) {
		t.Errorf("a claim of drive 0: %v, want ErrInvalid", err)
	}
	if live2, _ := c.LiveDriveLeases(t0.Add(2 * time.Second)); len(live2) != len(live) {
		t.Errorf("an invalid batch took drives: %+v", live2)
	}
}

func TestAcquireJobLeaseAs(t *testing.T) { onBoth(t, testAcquireJobLeaseAs) }

// A job taken from the queue and written as its runner has it, in one
// transaction: the row is the runner's (running, its start kept), the lease
// is the holder's; a job that is not queued any more is refused and nothing
// of the row is written.
func testAcquireJobLeaseAs(t *testing.T) {
	c, _ := openTemp(t)
	j := queuedJob(t, c)
	started := t0.Add(-time.Second)
	row := &Job{ID: j.ID, Kind: KindBackup, State: StateQueued, Client: "db1", Selection: "home", Level: "full",
		Started: started, Owner: "a", Reason: "stale"}
	l, err := c.AcquireJobLeaseAs(row, "a", t0, ttl)
	must(t, err)
	if l.Holder != "a" || !l.Expires.Equal(t0.Add(ttl)) {
		t.Errorf("lease = %+v", l)
	}
	got, err := c.Job(j.ID)
	must(t, err)
	if got.State != StateRunning || !got.Started.Equal(started) || got.Selection != "home" || got.Level != "full" || got.Reason != "" || got.Owner != "a" {
		t.Errorf("job row after AcquireJobLeaseAs: %+v", got)
	}
	if err := c.UpdateLeasedJob(got, "b"); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("another holder writes the row: %v", err)
	}

	// Not queued any more: refused, nothing written.
	again := &Job{ID: j.ID, Kind: KindBackup, State: StateQueued, Client: "db1", Selection: "other"}
	_, err = c.AcquireJobLeaseAs(again, "b", t0.Add(ttl), ttl)
	wantErr(t, "taking a running job", err, ErrNotQueued)
	got, err = c.Job(j.ID)
	must(t, err)
	if got.Selection != "home" {
		t.Errorf("a refused AcquireJobLeaseAs wrote the row: selection %q", got.Selection)
	}
}

func TestCreateJobSaveset(t *testing.T) { onBoth(t, testCreateJobSaveset) }

// A running job's saveset and the job's record of it commit together, and
// only while the job's lease is the writer's: a holder that lost the job
// writes neither.
func testCreateJobSaveset(t *testing.T) {
	c, _ := openTemp(t)
	j := queuedJob(t, c)
	row := &Job{ID: j.ID, Kind: KindBackup, Client: "db1", Selection: "home"}
	_, err := c.AcquireJobLeaseAs(row, "a", t0, ttl)
	must(t, err)

	s := fullSaveset()
	s.JobID = j.ID
	if err := c.CreateJobSaveset(s, row, "b"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("another holder records the job's saveset: %v, want ErrLeaseLost", err)
	}
	if s.ID != 0 || row.SavesetID != 0 {
		t.Errorf("a refused CreateJobSaveset set saveset %d, job's saveset %d", s.ID, row.SavesetID)
	}
	if all, err := c.Savesets(SavesetFilter{}); err != nil || len(all) != 0 {
		t.Fatalf("savesets after a refused CreateJobSaveset: %d, %v", len(all), err)
	}

	must(t, c.CreateJobSaveset(s, row, "a"))
	if s.ID == 0 || row.SavesetID != s.ID {
		t.Fatalf("saveset %d, the job's saveset %d", s.ID, row.SavesetID)
	}
	got, err := c.Job(j.ID)
	must(t, err)
	if got.SavesetID != s.ID || got.State != StateRunning {
		t.Errorf("job row: saveset %d, state %s; want saveset %d, running", got.SavesetID, got.State, s.ID)
	}
	ss, err := c.Saveset(s.ID)
	must(t, err)
	if ss.JobID != j.ID || len(ss.Parts) != 2 {
		t.Errorf("saveset row: %+v", ss)
	}
}
