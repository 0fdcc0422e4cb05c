package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
)

// Every job runs under a lease in the catalog (internal/job): the job's row
// is recorded running with this process's lease on it, a heartbeat renews
// the lease while the job runs, and the job's end is written with the lease
// released, in one transaction. Another process that finds a job whose
// lease has expired, or whose holder is a process of this host that is gone
// (killed, power loss), marks it interrupted and its saveset incomplete
// (ReclaimDeadJobs), so a dead job is never shown as running and its
// saveset never taken for a good one. The drives a job writes with are
// leased in the catalog too, so a server and a CLI on one home never take
// the same drive.

// startJob records job as running, leased by this process: a new job, or a
// queued one the server starts (job.ID set). The context returned derives
// from ctx and is cancelled if the job's lease is lost (another process
// reclaimed it): the job must stop. Jobs start through holdJob (beginJob)
// and end through endJob, which calls finishJob; the caller defers Close on
// the returned lease for the early errors.
func (e *Env) startJob(ctx context.Context, j *catalog.Job) (*job.Held, context.Context, error) {
	h, jctx, err := e.Jobs.Hold(ctx, j)
	if err != nil {
		return nil, nil, err
	}
	return h, jctx, nil
}

// updateJob writes a running job's row while its lease is this process's.
func (e *Env) updateJob(j *catalog.Job) error {
	h, err := e.Jobs.Held(j.ID)
	if err != nil {
		return err
	}
	return h.Update(j)
}

// createJobSaveset records the running job's new saveset and the job with
// its SavesetID in one commit, while this process holds the job's lease.
func (e *Env) createJobSaveset(ss *catalog.Saveset, j *catalog.Job) error {
	h, err := e.Jobs.Held(j.ID)
	if err != nil {
		return err
	}
	return h.CreateSaveset(ss, j)
}

// finishJob records a job's end (its state is final) and releases its lease
// and its drives. A job whose lease was reclaimed keeps the reclaimer's
// record (interrupted): the error wraps job.ErrLeaseLost.
func (e *Env) finishJob(j *catalog.Job) error {
	h, err := e.Jobs.Held(j.ID)
	if err != nil {
		return err
	}
	return h.Finish(j)
}

// stillHeld checks, before a job records what other processes trust (a
// saveset complete), that its lease is still this process's, writing its
// row: an error wrapping job.ErrLeaseLost if another process reclaimed it.
func (e *Env) stillHeld(j *catalog.Job) error {
	return e.updateJob(j)
}

// ReclaimDeadJobs marks interrupted the running jobs whose lease expired or
// whose holder is known to be dead (job.Registry.Reclaim), their running
// savesets incomplete, and frees their drives. It returns the jobs it
// marked. A job whose holder may be alive and whose lease is live is never
// touched.
func (e *Env) ReclaimDeadJobs() ([]int64, error) {
	return e.Jobs.Reclaim()
}

// Waiting for a leased drive: the first retry after driveRetryFirst, then
// twice as long each time up to driveRetryMax.
const (
	driveRetryFirst = 50 * time.Millisecond
	driveRetryMax   = 2 * time.Second
)

// takeDrive leases a drive of lib for job j in the catalog and acquires it
// in the library (the caller releases it): drive want, or the first free
// one when want is 0. While each
// drive it may take is leased to another job (this process's, a server's or
// a CLI's on the same home) it waits, saying so once (a queued event and a
// line in the job's log), and tries again until ctx ends.
func (e *Env) takeDrive(ctx context.Context, j *catalog.Job, lib library.Changer, want int) (library.Drive, error) {
	h, err := e.Jobs.Held(j.ID)
	if err != nil {
		return nil, err
	}
	cfg := lib.Config()
	drives := []int{want}
	if want == 0 {
		drives = drives[:0]
		for n := 1; n <= cfg.Drives; n++ {
			drives = append(drives, n)
		}
	}
	delay := driveRetryFirst
	var timer *time.Timer
	for {
		var busy error
		for _, n := range drives {
			err := h.TakeDrive(cfg.Name, n)
			if err == nil {
				return lib.Acquire(ctx, n)
			}
			if !errors.Is(err, catalog.ErrLeaseHeld) {
				return nil, fmt.Errorf("library %s: taking drive %d: %w", cfg.Name, n, err)
			}
			busy = err
		}
		if timer == nil {
			msg := fmt.Sprintf("waiting for a drive of library %s: %v", cfg.Name, busy)
			e.logf(j, "%s", msg)
			e.emit(monitor.Event{Kind: monitor.Queued, JobID: j.ID, Message: msg})
			timer = time.NewTimer(delay)
			defer timer.Stop()
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
			what := "a free drive"
			if want != 0 {
				what = fmt.Sprintf("drive %d", want)
			}
			return nil, fmt.Errorf("library %s: gave up waiting for %s: %w: %w", cfg.Name, what, library.ErrDriveBusy, context.Cause(ctx))
		case <-timer.C:
		}
		delay = min(2*delay, driveRetryMax)
	}
}
