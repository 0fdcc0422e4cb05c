package catalog

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// leaseModel is what the lease protocol promises for one job, in a few
// lines: the catalog must agree with it after every step.
type leaseModel struct {
	state   string // queued, running, waiting or a final state
	holder  string // "" without a lease
	expires time.Time
	runs    int // times the job went from queued or waiting to running
	backs   int // times it was handed back to the queue
}

func (m *leaseModel) acquire(h string, now time.Time) error {
	switch {
	case m.holder != "" && m.holder != h && now.Before(m.expires):
		return ErrLeaseHeld
	case m.state != StateQueued && m.state != StateWaiting:
		return ErrNotQueued
	}
	m.state, m.holder, m.expires = StateRunning, h, now.Add(ttl)
	m.runs++
	return nil
}

func (m *leaseModel) held(h string) error {
	if m.holder == "" || m.holder != h {
		return ErrLeaseLost
	}
	return nil
}

func TestLeaseStateMachine(t *testing.T) { onBoth(t, testLeaseStateMachine) }

func testLeaseStateMachine(t *testing.T) {
	c, _ := openTemp(t)
	holders := []string{"a", "b", "c"}
	rapid.Check(t, func(t *rapid.T) {
		// Each run starts with no lease, so that a reclaim sees only its job.
		if _, err := c.db.Exec(`DELETE FROM job_leases`); err != nil {
			t.Fatal(err)
		}
		j := &Job{Kind: KindCopy, State: StateQueued}
		if err := c.CreateJob(j); err != nil {
			t.Fatal(err)
		}
		m := &leaseModel{state: StateQueued}
		now := t0
		steps := rapid.IntRange(1, 15).Draw(t, "steps")
		for range steps {
			h := rapid.SampledFrom(holders).Draw(t, "holder")
			var got, want error
			switch op := rapid.SampledFrom([]string{"advance", "acquire", "renew", "finish", "release", "reclaim"}).Draw(t, "op"); op {
			case "advance":
				now = now.Add(time.Duration(rapid.IntRange(0, 40).Draw(t, "seconds")) * time.Second)
			case "acquire":
				want = m.acquire(h, now)
				_, _, got = c.AcquireJobLease(j.ID, h, now, ttl)
			case "renew":
				if want = m.held(h); want == nil {
					m.expires = now.Add(ttl)
				}
				_, got = c.RenewJobLease(j.ID, h, now, ttl)
			case "finish":
				if want = m.held(h); want == nil {
					m.state, m.holder = StateSucceeded, ""
				}
				row, err := c.Job(j.ID)
				if err != nil {
					t.Fatal(err)
				}
				row.State = StateSucceeded
				got = c.FinishLeasedJob(row, h)
			case "release":
				if want = m.held(h); want == nil {
					m.state, m.holder = StateWaiting, ""
					m.backs++
				}
				got = c.ReleaseJobLease(j.ID, h, StateWaiting, "handed back")
			case "reclaim":
				wantIDs := 0
				if m.holder != "" && !now.Before(m.expires) {
					m.state, m.holder = StateInterrupted, ""
					wantIDs = 1
				}
				ids, err := c.ReclaimExpiredJobs(now)
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) != wantIDs || (wantIDs == 1 && ids[0] != j.ID) {
					t.Fatalf("reclaim at %v: %v, want %d jobs", now, ids, wantIDs)
				}
			}
			if (got == nil) != (want == nil) || (want != nil && !errors.Is(got, want)) {
				t.Fatalf("got %v, want %v (model %+v)", got, want, m)
			}
			row, err := c.Job(j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if row.State != m.state {
				t.Fatalf("job is %s, model says %s", row.State, m.state)
			}
			l, err := c.JobLease(j.ID)
			switch {
			case m.holder == "" && !errors.Is(err, ErrNotFound):
				t.Fatalf("lease %+v, %v; model has none", l, err)
			case m.holder != "" && (err != nil || l.Holder != m.holder || !l.Expires.Equal(m.expires)):
				t.Fatalf("lease %+v, %v; model %s until %v", l, err, m.holder, m.expires)
			}
			// Never run twice: each run but the first follows a hand-back.
			if m.runs > m.backs+1 {
				t.Fatalf("job ran %d times after %d hand-backs", m.runs, m.backs)
			}
		}
	})
}
