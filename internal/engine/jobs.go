package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/monitor"
)

// The jobs that are not backups or restores — verify, copy, prune, catalog
// backup, tape scan and tape erase — share one life: a job row (the queued
// row a server gives, or a new one), running under this process's lease;
// a JobStarted event; one phase with its figures; and at the end a state
// decided by the error (canceled when the job's context was cancelled),
// the kind's result as JSON in the row (catalog.Job.Result, what the CLI
// prints), and a JobEnded event sent after the row is written.

// beginJob records j (a new job when nil) as a running job of kind, leased
// by this process (startJob), and announces it. The context returned is
// cancelled if the lease is lost; the caller defers Close on the lease and
// ends the job with endJob.
func (e *Env) beginJob(ctx context.Context, j *catalog.Job, kind, msg string) (*catalog.Job, *job.Held, context.Context, error) {
	if j == nil {
		j = &catalog.Job{}
	}
	j.Kind, j.State, j.Started, j.Reason = kind, catalog.StateRunning, e.now(), ""
	held, ctx, err := e.startJob(ctx, j)
	if err != nil {
		return nil, nil, nil, err
	}
	e.logf(j, "%s", msg)
	e.emit(monitor.Event{Kind: monitor.JobStarted, JobID: j.ID, Message: msg})
	return j, held, ctx, nil
}

// endJob records the end of a job begun with beginJob: its phase, its
// state, its result (marshalled as JSON when not nil), and sends JobEnded.
// It returns runErr, or the error of recording the job when runErr is nil.
func (e *Env) endJob(job *catalog.Job, phase *monitor.Phase, result any, runErr error) error {
	if phase != nil {
		phase.End()
		e.emit(monitor.Event{Kind: monitor.PhaseEnded, JobID: job.ID, Phase: phase.Name})
		p := phaseRecord(phase)
		job.Phases = append(job.Phases, p)
		job.Files, job.SourceBytes, job.MediaBytes = p.Files, p.Bytes, p.MediaBytes
		job.AvgRate, job.PeakRate = p.AvgRate, p.PeakRate
	}
	job.Finished = e.now()
	job.State, job.Error = endState(job, runErr), errText(runErr)
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil && runErr == nil {
			runErr = err
		}
		job.Result = b
	}
	if runErr != nil {
		e.logf(job, "%s: %v", job.State, runErr)
	} else {
		e.logf(job, "%s", statusText(job.State))
	}
	if err := e.finishJob(job); err != nil && runErr == nil {
		runErr = err
	}
	e.emit(monitor.Event{Kind: monitor.JobEnded, JobID: job.ID, Message: job.State})
	return runErr
}

// startPhase starts the one phase of a job.
func (e *Env) startPhase(job *catalog.Job, name string) *monitor.Phase {
	p := monitor.StartPhase(e.Clock, name)
	e.emit(monitor.Event{Kind: monitor.PhaseStarted, JobID: job.ID, Phase: name})
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
