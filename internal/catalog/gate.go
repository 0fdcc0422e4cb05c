package catalog

import (
	"fmt"
	"sync"
	"time"
)

// gate gives a SQLite catalog's writers of this process their turns at the
// database's one write lock, in order, and the writes that start work
// (a job queued, the drives of the jobs a queue pass starts) before the
// writes of work in progress. Without it, writers wait in SQLite's busy
// handler, which sleeps (1, 2, 5 … 100 ms) and retries: the lock lies idle
// while they sleep, and whoever retries at the right moment wins, so under
// a hundred running jobs' commits one writer could lose for a second and
// more (docs/benchmarks.md §5: the queue's drive leases waited up to 1.1 s).
// Writers of other processes (a CLI on the same home) still meet SQLite's
// busy handler, as before.
//
// A writer that has not had its turn after timeout fails with ErrBusy, as
// one SQLite kept waiting for BusyTimeout does.
type gate struct {
	mu      sync.Mutex
	busy    bool
	urgent  []chan struct{} // waiting, oldest first
	normal  []chan struct{}
	timeout time.Duration
}

// enter waits for the writer's turn; leave must follow a nil return.
func (g *gate) enter(urgent bool) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	if urgent {
		g.urgent = append(g.urgent, turn)
	} else {
		g.normal = append(g.normal, turn)
	}
	g.mu.Unlock()
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case <-turn:
		return nil
	case <-t.C:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.drop(turn) {
		return fmt.Errorf("%w: no turn at the write lock within %s", ErrBusy, g.timeout)
	}
	// leave handed it the turn as the timer fired: take it.
	return nil
}

// drop removes a waiter that gave up; false if it was handed the turn.
func (g *gate) drop(turn chan struct{}) bool {
	for _, q := range []*[]chan struct{}{&g.urgent, &g.normal} {
		for i, c := range *q {
			if c == turn {
				*q = append((*q)[:i], (*q)[i+1:]...)
				return true
			}
		}
	}
	return false
}

// leave hands the turn to the oldest urgent waiter, else the oldest other.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range []*[]chan struct{}{&g.urgent, &g.normal} {
		if len(*q) > 0 {
			next := (*q)[0]
			*q = (*q)[1:]
			close(next)
			return
		}
	}
	g.busy = false
}

// waiting counts the writers waiting (tests).
func (g *gate) waiting() (urgent, normal int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.urgent), len(g.normal)
}
