package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/monitor"
)

// Every job — backup, restore, copy, verify, prune, catalog backup, tape
// scan and tape erase — has one life: a job row (the queued row a server
// gives, or a new one), running under this process's lease (beginJob); a
// JobStarted event; its phases with their figures; and at the end
// (endJob, the one place that decides and writes a job's end) a state
// decided by the error (canceled when the job's context was cancelled), the
// kind's result as JSON in the row (catalog.Job.Result, what the CLI
// prints), the row written with the lease released, and a JobEnded event
// sent after it.

// beginJob records j (a new job when nil) as a running job of kind, leased
// by this process (holdJob), and announces it with msg (announceJob). The
// context returned is cancelled if the lease is lost; the caller defers
// Close on the lease and ends the job with endJob.
func (e *Env) beginJob(ctx context.Context, j *catalog.Job, kind, msg string) (*catalog.Job, *job.Held, context.Context, error) {
	j, held, ctx, err := e.holdJob(ctx, j, kind)
	if err != nil {
		return nil, nil, nil, err
	}
	e.announceJob(j, msg)
	return j, held, ctx, nil
}

// holdJob is beginJob without the announcement, for a job that does
// something under its lease first (a backup creates its saveset, to name it
// in the announcement; a copy logs where it reads from): it calls
// announceJob next.
func (e *Env) holdJob(ctx context.Context, j *catalog.Job, kind string) (*catalog.Job, *job.Held, context.Context, error) {
	if j == nil {
		j = &catalog.Job{}
	}
	j.Kind, j.State, j.Started, j.Reason = kind, catalog.StateRunning, e.now(), ""
	held, ctx, err := e.startJob(ctx, j)
	if err != nil {
		return nil, nil, nil, err
	}
	return j, held, ctx, nil
}

// announceJob logs what a held job does and sends JobStarted, the job's
// first event.
func (e *Env) announceJob(j *catalog.Job, msg string) {
	e.logf(j, "%s", msg)
	e.emit(monitor.Event{Kind: monitor.JobStarted, JobID: j.ID, Message: msg})
}

// jobEnd is what endJob records of a job besides its state. Everything is
// optional.
type jobEnd struct {
	// phase is the job's one phase, still open: endJob ends it and takes
	// the job's figures from it. A job with several phases, or figures of
	// its own, records them itself (endPhase) and leaves phase nil.
	phase *monitor.Phase
	// result is the kind's result, kept as JSON in the row.
	result any
	// finished is when the job ended, when that is before endJob (a
	// backup's figures end with its backup phase); zero: now.
	finished time.Time
	// errText is the row's error when it says more than the run's error
	// (a backup's failed verify: "verify: ...").
	errText string
	// summary is the job's last log line, after its state ("3 files, ...").
	summary string
}

// endJob records the end of a job begun with beginJob: its phase, its
// state (endState of runErr), its error, its result, its last log lines;
// writes the row and releases the lease (finishJob); and sends JobEnded.
// It returns runErr, or the error of recording the job when runErr is nil.
func (e *Env) endJob(job *catalog.Job, runErr error, end jobEnd) error {
	if end.phase != nil {
		p := e.endPhase(job, end.phase)
		job.Files, job.SourceBytes, job.MediaBytes = p.Files, p.Bytes, p.MediaBytes
		job.AvgRate, job.PeakRate = p.AvgRate, p.PeakRate
	}
	job.Finished = end.finished
	if job.Finished.IsZero() {
		job.Finished = e.now()
	}
	job.State, job.Error = endState(job, runErr), errText(runErr)
	if end.errText != "" && job.Error != "" {
		job.Error = end.errText
	}
	if job.State == catalog.StateFailed && e.ClassifyError != nil {
		job.ErrorCode, job.ErrorField = e.ClassifyError(runErr)
	}
	if end.result != nil {
		b, err := json.Marshal(end.result)
		if err != nil && runErr == nil {
			runErr = err
		}
		job.Result = b
	}
	if runErr != nil {
		e.logf(job, "%s: %v", job.State, runErr)
	}
	switch {
	case end.summary != "":
		e.logf(job, "%s: %s", statusText(job.State), end.summary)
	case runErr == nil:
		e.logf(job, "%s", statusText(job.State))
	}
	if err := e.finishJob(job); err != nil && runErr == nil {
		runErr = err
	}
	e.emit(monitor.Event{Kind: monitor.JobEnded, JobID: job.ID, Message: job.State})
	return runErr
}

// startPhase starts a phase of a job.
func (e *Env) startPhase(job *catalog.Job, name string) *monitor.Phase {
	p := monitor.StartPhase(e.Clock, name)
	e.emit(monitor.Event{Kind: monitor.PhaseStarted, JobID: job.ID, Phase: name})
	return p
}

// endPhase ends a phase begun with startPhase, announces it and records it
// in the job.
func (e *Env) endPhase(job *catalog.Job, phase *monitor.Phase) catalog.Phase {
	phase.End()
	e.emit(monitor.Event{Kind: monitor.PhaseEnded, JobID: job.ID, Phase: phase.Name})
	p := phaseRecord(phase)
	job.Phases = append(job.Phases, p)
	return p
}

// endState is the state a job ends in after err: canceled when it was
// cancelled (its context), failed on another error, else succeeded, or
// warnings when it recorded some.
func endState(job *catalog.Job, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return catalog.StateCanceled
	case err != nil && !errors.Is(err, ErrWarnings):
		return catalog.StateFailed
	case err != nil || job.WarningCount > 0:
		return catalog.StateWarnings
	}
	return catalog.StateSucceeded
}

func errText(err error) string {
	if err == nil || errors.Is(err, ErrWarnings) {
		return ""
	}
	return err.Error()
}

// canceled says, before a job changes anything, whether it was cancelled:
// a job cancelled before it starts changes nothing.
func canceled(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("canceled before it started: %w (%v)", err, cause)
	} else if cause != nil {
		err = cause
	}
	return fmt.Errorf("canceled before it started: %w", err)
}
