package catalog

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The leader lease: one leader at a time; a renewal keeps it; it passes to
// another server once it has expired or its holder is known gone; a holder
// that lost it is told so; a release frees it at once.
func TestLeaderLease(t *testing.T) { onBoth(t, testLeaderLease) }

func testLeaderLease(t *testing.T) {
	c, _ := openTemp(t)
	const ttl = 30 * time.Second
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if _, err := c.Leader(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("leader of a new catalog: %v, want ErrNotFound", err)
	}
	l, err := c.AcquireLeader("a", at(0), ttl, nil)
	must(t, err)
	if l.Holder != "a" || !l.Expires.Equal(at(30)) {
		t.Fatalf("lease %+v", l)
	}
	if l, err := c.AcquireLeader("b", at(10), ttl, nil); !errors.Is(err, ErrLeaseHeld) || l.Holder != "a" {
		t.Fatalf("b while a leads: %+v, %v; want a's lease and ErrLeaseHeld", l, err)
	}
	must(t, c.RenewLeader("a", at(20), ttl))
	if _, err := c.AcquireLeader("b", at(40), ttl, nil); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("b before the renewed lease expires: %v, want ErrLeaseHeld", err)
	}
	l, err = c.AcquireLeader("b", at(50), ttl, nil)
	must(t, err)
	if l.Holder != "b" || !l.Acquired.Equal(at(50)) {
		t.Fatalf("b once a's lease expired: %+v", l)
	}
	if err := c.RenewLeader("a", at(51), ttl); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a renewing after b took over: %v, want ErrLeaseLost", err)
	}
	gone := func(h string) string {
		if h == "b" {
			return "is gone"
		}
		return ""
	}
	if _, err := c.AcquireLeader("c", at(55), ttl, gone); err != nil {
		t.Fatalf("c while b is gone: %v", err)
	}
	// A renewal by acquiring keeps the time it was first taken.
	l, err = c.AcquireLeader("c", at(60), ttl, nil)
	must(t, err)
	if !l.Acquired.Equal(at(55)) || !l.Expires.Equal(at(90)) {
		t.Fatalf("c acquiring again: %+v", l)
	}
	must(t, c.ReleaseLeader("a")) // not a's: nothing happens
	if l, err := c.Leader(); err != nil || l.Holder != "c" {
		t.Fatalf("after a release by another: %+v, %v", l, err)
	}
	must(t, c.ReleaseLeader("c"))
	if _, err := c.AcquireLeader("a", at(61), ttl, nil); err != nil {
		t.Fatalf("a after c released: %v", err)
	}
	if _, err := c.AcquireLeader("", at(61), ttl, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no holder: %v, want ErrInvalid", err)
	}
}

// Servers with their own catalog handles race for an expired lease: exactly
// one of them gets it, every round.
func TestLeaderLeaseRace(t *testing.T) { onBoth(t, testLeaderLeaseRace) }

func testLeaderLeaseRace(t *testing.T) {
	_, dsn := openTemp(t)
	const n = 3
	cats := make([]*Catalog, n)
	for i := range cats {
		c, err := Open(dsn)
		must(t, err)
		defer c.Close()
		cats[i] = c
	}
	for round := 0; round < 10; round++ {
		now := t0.Add(time.Duration(round) * time.Minute) // the last round's lease has expired
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range cats {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = cats[i].AcquireLeader(fmt.Sprintf("r%d-%d", round, i), now, 30*time.Second, nil)
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrLeaseHeld):
				t.Fatal(err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d leaders, want 1 (%v)", round, won, errs)
		}
	}
}
