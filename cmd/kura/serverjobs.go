package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
)

// With a server, verify, copy, prune, catalog backup, tape scan and tape
// erase are jobs on its queue: the command submits one, follows it as
// `kura backup` does (the queue's reasons, a live progress line), and
// prints the finished job's figures and result as the same command prints
// them locally, ending with the same exit code.

// runServerJob submits req and follows the job to its end.
func runServerJob(cmd *cobra.Command, srv *apiclient.Client, req api.JobRequest, asJSON bool) (*api.Job, error) {
	ctx := cmdContext(cmd)
	ids, err := srv.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	view := remoteProgress(cmd, ids, !asJSON)
	err = srv.Follow(ctx, ids[0], view.event)
	view.done()
	if err != nil {
		return nil, err
	}
	return srv.Job(context.WithoutCancel(ctx), ids[0])
}

// jobResult decodes a finished job's result into v; false when it has
// none (it failed before its work began).
func jobResult(j *api.Job, v any) (bool, error) {
	if len(j.Result) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(j.Result, v); err != nil {
		return false, fmt.Errorf("job %d: its result: %w", j.ID, err)
	}
	return true, nil
}

// serverJobError is the error a finished server job stands for: the error
// the engine returned when the job ran, with its text and the sentinel
// (warnings, verify problems, cancelled) that jobError maps to an exit
// code, so that a command ends as it does locally.
func serverJobError(j *api.Job) error {
	switch j.State {
	case catalog.StateSucceeded:
		return nil
	case catalog.StateWarnings:
		return &remoteJobError{msg: "job " + j.State, kind: engine.ErrWarnings}
	case catalog.StateCanceled:
		return &remoteJobError{msg: j.Error, kind: context.Canceled}
	case catalog.StateFailed:
		if verifyFailed(j) {
			return &remoteJobError{msg: j.Error, kind: engine.ErrVerify}
		}
		return &remoteJobError{msg: jobErrorText(j)}
	}
	return &remoteJobError{msg: fmt.Sprintf("job %d %s: %s", j.ID, j.State, j.Error)}
}

// remoteJobError is a server job's error: its text, and what kind of
// error it was.
type remoteJobError struct {
	msg  string
	kind error
}

func (e *remoteJobError) Error() string { return e.msg }
func (e *remoteJobError) Unwrap() error { return e.kind }
