package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
)

// leaseExpiry is when a job's lease expires, as last renewed.
type leaseExpiry struct {
	mu sync.Mutex
	t  time.Time
}

func (e *leaseExpiry) get() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.t
}

func (e *leaseExpiry) set(t time.Time) {
	e.mu.Lock()
	e.t = t
	e.mu.Unlock()
}

// keepLease is the heartbeat of every job a registry runs (Start,
// StartQueued and Hold alike): at each tick until stop is closed it renews
// job id's lease and its drive leases, then calls save (nil: nothing to
// save) and renewed. It cancels the job with ErrLeaseLost when the lease
// was reclaimed, or could not be renewed before it expired; a failed
// renewal before then is logged with logf and tried again at the next tick.
func (g *Registry) keepLease(id int64, exp *leaseExpiry, cancel context.CancelCauseFunc, stop <-chan struct{},
	save func() error, renewed func(now, expires time.Time), logf func(format string, args ...any)) {
	t := g.opts.NewTicker(g.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		now := g.opts.Clock.Now()
		l, err := g.cat.RenewJobLease(id, g.opts.Holder, now, g.opts.LeaseTTL)
		if err == nil {
			exp.set(l.Expires)
			if save != nil {
				err = save()
			}
		}
		switch {
		case err == nil:
			if renewed != nil {
				renewed(now, l.Expires)
			}
		case errors.Is(err, catalog.ErrLeaseLost):
			cancel(fmt.Errorf("%w: %w", ErrLeaseLost, err))
			return
		default:
			if !now.Before(exp.get()) {
				cancel(fmt.Errorf("%w: not renewed before it expired: %w", ErrLeaseLost, err))
				return
			}
			if logf != nil {
				logf("renewing the job's lease: %v (will try again)", err)
			}
		}
	}
}

// Held is a job whose catalog row its caller keeps and writes (the engine's
// jobs record their own figures, phases and log): the registry leases the
// job and keeps the lease alive with the heartbeat of every job, and the
// caller writes the row through Update and Finish, which write only while
// the lease is this registry's. Its methods are safe for concurrent use.
type Held struct {
	g      *Registry
	id     int64
	row    *catalog.Job
	ctx    context.Context
	cancel context.CancelCauseFunc
	lease  leaseExpiry

	stop, stopped chan struct{}
	mu            sync.Mutex // serialises Finish and Close
	ended         bool
}

// Hold leases the job row names and keeps its lease alive until Finish or
// Close. A row without an ID is a new job: it is recorded running with the
// lease (catalog.CreateLeasedJob). A row with one is a queued or waiting job
// taken from the queue (catalog.AcquireJobLease: catalog.ErrNotQueued or
// catalog.ErrLeaseHeld if it cannot be taken), then written as row has it,
// running. row.Owner is set to the holder. The returned context derives
// from ctx and is cancelled with ErrLeaseLost when the lease is lost, and
// with ErrClosed when the registry closes: the job must stop.
func (g *Registry) Hold(ctx context.Context, row *catalog.Job) (*Held, context.Context, error) {
	if !Kind(row.Kind).Valid() {
		return nil, nil, fmt.Errorf("job: kind %q: %w", row.Kind, ErrInvalid)
	}
	if err := g.admit(); err != nil {
		return nil, nil, err
	}
	defer g.wg.Done()
	now, holder := g.opts.Clock.Now(), g.opts.Holder
	row.Owner = holder
	var (
		l   *catalog.Lease
		err error
	)
	if row.ID == 0 {
		l, err = g.cat.CreateLeasedJob(row, holder, now, g.opts.LeaseTTL)
	} else {
		// Taken and written as row has it, running, in one commit.
		l, err = g.cat.AcquireJobLeaseAs(row, holder, now, g.opts.LeaseTTL)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("job: starting a %s job: %w", row.Kind, err)
	}
	jctx, cancel := context.WithCancelCause(ctx)
	h := &Held{g: g, id: row.ID, row: row, ctx: jctx, cancel: cancel, lease: leaseExpiry{t: l.Expires},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	g.mu.Lock()
	g.held[h.id] = h
	g.wg.Add(1)
	if g.closed {
		cancel(fmt.Errorf("%w: %w", ErrCanceled, ErrClosed))
	}
	g.mu.Unlock()
	go func() {
		defer close(h.stopped)
		g.keepLease(h.id, &h.lease, cancel, h.stop, nil, func(now, expires time.Time) {
			g.opts.Sink.Event(monitor.Event{Kind: HeartbeatEvent, Time: now, JobID: h.id, Message: expires.Format(time.RFC3339Nano)})
		}, nil)
	}()
	return h, jctx, nil
}

// Held returns the held job id, or ErrNotRunning.
func (g *Registry) Held(id int64) (*Held, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.held[id]
	if !ok {
		return nil, fmt.Errorf("job %d: %w", id, ErrNotRunning)
	}
	return h, nil
}

// ID returns the job's ID.
func (h *Held) ID() int64 { return h.id }

// Holder returns the holder of the job's lease.
func (h *Held) Holder() string { return h.g.opts.Holder }

// Context returns the job's context (as Hold did).
func (h *Held) Context() context.Context { return h.ctx }

// Update writes the job's row while this registry holds its lease
// (catalog.UpdateLeasedJob): an error wrapping ErrLeaseLost if it was
// reclaimed.
func (h *Held) Update(row *catalog.Job) error {
	if err := h.g.cat.UpdateLeasedJob(row, h.g.opts.Holder); err != nil {
		return h.lost(err)
	}
	return nil
}

// CreateSaveset records the job's new saveset and writes row with its
// SavesetID, in one commit, while this registry holds the job's lease
// (catalog.CreateJobSaveset): an error wrapping ErrLeaseLost, and nothing
// written, if it was reclaimed.
func (h *Held) CreateSaveset(ss *catalog.Saveset, row *catalog.Job) error {
	if err := h.g.cat.CreateJobSaveset(ss, row, h.g.opts.Holder); err != nil {
		return h.lost(err)
	}
	return nil
}

func (h *Held) lost(err error) error {
	if errors.Is(err, catalog.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	return err
}

// TakeDrive leases drive n of library lib for the job (catalog.ErrLeaseHeld
// if another job holds it). The lease is renewed with the job's and
// released when the job ends.
func (h *Held) TakeDrive(lib string, n int) error {
	now := h.g.opts.Clock.Now()
	// A drive the queue took for the job (Registry.TakeDrives) is the
	// job's already, renewed with its lease: a read, not a commit.
	if ls, err := h.g.cat.LiveDriveLeases(now); err == nil {
		for _, l := range ls {
			if l.Library == lib && l.Drive == n && l.Holder == h.g.opts.Holder && l.JobID == h.id {
				return nil
			}
		}
	}
	_, err := h.g.cat.AcquireDriveLease(lib, n, h.g.opts.Holder, h.id, now, h.g.opts.LeaseTTL)
	if err != nil {
		return fmt.Errorf("job %d: %w", h.id, err)
	}
	return nil
}

// ReleaseDrive gives back a drive the job took, before the job ends.
func (h *Held) ReleaseDrive(lib string, n int) error {
	if err := h.g.cat.ReleaseDriveLease(lib, n, h.g.opts.Holder, h.id); err != nil {
		return fmt.Errorf("job %d: %w", h.id, err)
	}
	return nil
}

// end stops the heartbeat and forgets the job. Called once, with h.mu held.
func (h *Held) end() {
	close(h.stop)
	<-h.stopped
	h.g.mu.Lock()
	delete(h.g.held, h.id)
	h.g.mu.Unlock()
	h.g.wg.Done()
}

// Finish records the job's end (row.State must be final) and releases its
// lease and drive leases in one transaction (catalog.FinishLeasedJob). If
// the lease was reclaimed meanwhile, nothing is written (the reclaimer's
// record stands) and the error wraps ErrLeaseLost. Later calls, and Close,
// do nothing.
func (h *Held) Finish(row *catalog.Job) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.finishLocked(row)
}

func (h *Held) finishLocked(row *catalog.Job) error {
	if h.ended {
		return nil
	}
	h.end()
	h.ended = true
	defer h.cancel(nil)
	if err := h.g.cat.FinishLeasedJob(row, h.g.opts.Holder); err != nil {
		return h.lost(err)
	}
	return nil
}

// Close ends a job its caller did not finish (an early error): its row, as
// given to Hold, is recorded failed, with the error it has or "ended before
// recording its end". After Finish it does nothing.
func (h *Held) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return
	}
	row := *h.row
	row.State, row.Finished = catalog.StateFailed, h.g.opts.Clock.Now()
	if row.Error == "" {
		row.Error = "the job ended before recording its end"
	}
	if h.finishLocked(&row) == nil {
		*h.row = row
	}
}

// TakeDrive leases drive n of library lib for job id, which this registry
// is about to start (a queue reserves the drive of a queued job before it
// starts it): catalog.ErrLeaseHeld if another job holds it. Once the job
// runs here, its heartbeat renews the lease and its end releases it; until
// then the lease lasts Options.LeaseTTL, or ReleaseDrive gives it back.
func (g *Registry) TakeDrive(id int64, lib string, n int) error {
	if _, err := g.cat.AcquireDriveLease(lib, n, g.opts.Holder, id, g.opts.Clock.Now(), g.opts.LeaseTTL); err != nil {
		return fmt.Errorf("job %d: %w", id, err)
	}
	return nil
}

// TakeDrives is TakeDrive for many jobs at once, in one catalog
// transaction (catalog.AcquireDriveLeases): the i-th error is claim i's
// (catalog.ErrLeaseHeld when another job holds that drive).
func (g *Registry) TakeDrives(claims []catalog.DriveClaim) ([]error, error) {
	errs, err := g.cat.AcquireDriveLeases(claims, g.opts.Holder, g.opts.Clock.Now(), g.opts.LeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	for i, e := range errs {
		if e != nil {
			errs[i] = fmt.Errorf("job %d: %w", claims[i].JobID, e)
		}
	}
	return errs, nil
}

// ReleaseDrive gives back a drive TakeDrive leased for job id; a drive the
// job's end released already is no error.
func (g *Registry) ReleaseDrive(id int64, lib string, n int) error {
	err := g.cat.ReleaseDriveLease(lib, n, g.opts.Holder, id)
	if err != nil && !errors.Is(err, catalog.ErrLeaseLost) {
		return fmt.Errorf("job %d: %w", id, err)
	}
	return nil
}
