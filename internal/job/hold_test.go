package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
)

// A held job: recorded running with the lease, renewed by the heartbeat,
// written by its caller only while the lease is its, its drive exclusive
// until Finish records the end and frees lease and drive.
func TestHoldLifecycle(t *testing.T) {
	path := catalogPath(t)
	a, b := newProc(t, path, "a"), newProc(t, path, "b")
	row := &catalog.Job{Kind: catalog.KindBackup, Client: "db1", Started: t0.Add(-time.Hour)}
	h, ctx, err := a.reg.Hold(context.Background(), row)
	must(t, err)
	if row.ID == 0 || row.State != catalog.StateRunning || row.Owner != "a" {
		t.Fatalf("held row: %+v", row)
	}
	if got, err := a.reg.Held(row.ID); err != nil || got != h {
		t.Errorf("Held(%d) = %v, %v", row.ID, got, err)
	}
	must(t, h.TakeDrive("vtl", 1))

	a.clock.Advance(20 * time.Second)
	a.beat(t, h.ID())
	l, err := a.cat.JobLease(row.ID)
	must(t, err)
	if l.Holder != "a" || !l.Expires.Equal(t0.Add(50*time.Second)) {
		t.Errorf("lease after a heartbeat: %+v", l)
	}
	row.Files = 7
	must(t, h.Update(row))

	// b's job cannot take the drive, even after the first expiry: the
	// heartbeat renewed it.
	bj := &catalog.Job{Kind: catalog.KindCopy}
	hb, _, err := b.reg.Hold(context.Background(), bj)
	must(t, err)
	b.clock.Advance(35 * time.Second)
	if err := hb.TakeDrive("vtl", 1); !errors.Is(err, catalog.ErrLeaseHeld) {
		t.Fatalf("b takes a's drive: %v, want ErrLeaseHeld", err)
	}

	row.State, row.Finished = catalog.StateSucceeded, a.clock.Now()
	must(t, h.Finish(row))
	if ctx.Err() == nil {
		t.Error("the job's context lives on after Finish")
	}
	got, err := a.cat.Job(row.ID)
	must(t, err)
	if got.State != catalog.StateSucceeded || got.Files != 7 {
		t.Errorf("finished row: %s, %d files", got.State, got.Files)
	}
	if _, err := a.cat.JobLease(row.ID); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("lease after Finish: %v, want none", err)
	}
	if err := hb.TakeDrive("vtl", 1); err != nil {
		t.Errorf("b takes the drive a's finished job held: %v", err)
	}
	if _, err := a.reg.Held(row.ID); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Held after Finish: %v", err)
	}
	hb.Close()
}

// A queued job taken with Hold runs as its caller's row says, and nobody
// takes it twice.
func TestHoldQueued(t *testing.T) {
	path := catalogPath(t)
	a, b := newProc(t, path, "a"), newProc(t, path, "b")
	q := &catalog.Job{Kind: catalog.KindRestore, State: catalog.StateWaiting, Reason: "waiting for agent c1", Client: "c1"}
	must(t, a.cat.CreateJob(q))
	row := *q
	row.Selection, row.Started = "/srv", t0.Add(time.Minute)
	h, _, err := a.reg.Hold(context.Background(), &row)
	must(t, err)
	defer h.Close()
	got, err := a.cat.Job(q.ID)
	must(t, err)
	if got.State != catalog.StateRunning || got.Reason != "" || got.Selection != "/srv" || !got.Started.Equal(t0.Add(time.Minute)) || got.Owner != "a" {
		t.Errorf("taken row: %+v", got)
	}
	again := *q
	if _, _, err := b.reg.Hold(context.Background(), &again); !errors.Is(err, catalog.ErrLeaseHeld) {
		t.Errorf("b takes a's job: %v, want ErrLeaseHeld", err)
	}
}

// A held job whose lease was reclaimed: its context is cancelled with
// ErrLeaseLost at the next heartbeat and its end is not written over the
// reclaimer's record.
func TestHoldLeaseLost(t *testing.T) { onBoth(t, testHoldLeaseLost) }

func testHoldLeaseLost(t *testing.T) {
	path := catalogPath(t)
	a, b := newProc(t, path, "a"), newProc(t, path, "b")
	row := &catalog.Job{Kind: catalog.KindBackup}
	h, ctx, err := a.reg.Hold(context.Background(), row)
	must(t, err)
	b.clock.Advance(a.reg.Options().LeaseTTL)
	if ids, err := b.reg.Reclaim(); err != nil || len(ids) != 1 {
		t.Fatalf("reclaim: %v, %v", ids, err)
	}
	a.ticker.c <- a.clock.Now()
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
		t.Errorf("cause %v, want ErrLeaseLost", context.Cause(ctx))
	}
	if err := h.Update(row); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Update after the reclaim: %v, want ErrLeaseLost", err)
	}
	row.State = catalog.StateSucceeded
	if err := h.Finish(row); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Finish after the reclaim: %v, want ErrLeaseLost", err)
	}
	got, err := a.cat.Job(row.ID)
	must(t, err)
	if got.State != catalog.StateInterrupted {
		t.Errorf("row: %s, want the reclaimer's interrupted", got.State)
	}
}

// A held job its caller never finished (an early error) is recorded failed
// with its error, not left running.
func TestHoldCloseUnfinished(t *testing.T) {
	p := newProc(t, catalogPath(t), "a")
	row := &catalog.Job{Kind: catalog.KindVerify}
	h, _, err := p.reg.Hold(context.Background(), row)
	must(t, err)
	row.Error = "saveset 3: no index"
	h.Close()
	got, err := p.cat.Job(row.ID)
	must(t, err)
	if got.State != catalog.StateFailed || got.Error != "saveset 3: no index" || got.Finished.IsZero() {
		t.Errorf("closed row: %s %q finished %v", got.State, got.Error, got.Finished)
	}
	if row.State != catalog.StateFailed {
		t.Errorf("the caller's row says %s", row.State)
	}
	h.Close() // twice: nothing
	if _, err := p.cat.JobLease(row.ID); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("lease after Close: %v", err)
	}
}

// Reclaim takes the jobs of a holder Options.Gone reports dead at once,
// before their leases expire, and never a live holder's job with a live
// lease.
func TestReclaimGoneHolderAtOnce(t *testing.T) { onBoth(t, testReclaimGoneHolderAtOnce) }

func testReclaimGoneHolderAtOnce(t *testing.T) {
	path := catalogPath(t)
	a := newProc(t, path, "a")
	row := &catalog.Job{Kind: catalog.KindBackup}
	h, ctx, err := a.reg.Hold(context.Background(), row)
	must(t, err)

	alive := newProc(t, path, "b")
	alive.reg.opts.Gone = func(string) string { return "" }
	if ids, err := alive.reg.Reclaim(); err != nil || len(ids) != 0 {
		t.Fatalf("reclaim of a live holder's job: %v, %v", ids, err)
	}
	if got, _ := a.cat.Job(row.ID); got.State != catalog.StateRunning {
		t.Fatalf("a's live job is %s", got.State)
	}

	dead := newProc(t, path, "c")
	dead.reg.opts.Gone = func(h string) string {
		if h == "a" {
			return "is gone (process 42 no longer runs)"
		}
		return ""
	}
	if ids, err := dead.reg.Reclaim(); err != nil || len(ids) != 1 || ids[0] != row.ID {
		t.Fatalf("reclaim of a dead holder's job: %v, %v", ids, err)
	}
	got, err := a.cat.Job(row.ID)
	must(t, err)
	if got.State != catalog.StateInterrupted || !strings.HasPrefix(got.Error, catalog.ReasonHolderGone) {
		t.Errorf("reclaimed row: %s %q", got.State, got.Error)
	}
	a.ticker.c <- a.clock.Now()
	<-ctx.Done()
	h.Close()
}
