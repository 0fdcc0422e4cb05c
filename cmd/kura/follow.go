package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/server"
	"github.com/kura-backup/kura/internal/units"
)

// submitAndFollow queues a job on the server and, unless detach, follows
// it (and its sibling streams) live and prints the figures as a local job
// does.
func submitAndFollow(cmd *cobra.Command, c *apiclient.Client, req api.JobRequest, detach, asJSON bool) error {
	ctx := cmdContext(cmd)
	ids, err := c.Submit(ctx, req)
	if err != nil {
		return err
	}
	if detach {
		if asJSON {
			return printJSON(cmd.OutOrStdout(), map[string]any{"jobs": ids})
		}
		for _, id := range ids {
			fmt.Fprintln(cmd.OutOrStdout(), id)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Queued. Follow with: kura jobs watch %d\n", ids[0])
		return nil
	}
	return followAndPrint(cmd, c, ids, asJSON)
}

// followAndPrint follows jobs to their end and prints each one's figures
// (and the total, for several streams).
func followAndPrint(cmd *cobra.Command, c *apiclient.Client, ids []int64, asJSON bool) error {
	ctx := cmdContext(cmd)
	stop := remoteProgress(cmd, ids, !asJSON)
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Follow(ctx, id, stop.event)
		}()
	}
	wg.Wait()
	stop.done()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var jobs []*api.Job
	for _, id := range ids {
		j, err := c.Job(context.WithoutCancel(ctx), id)
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
	}
	return printJobs(cmd, jobs, asJSON)
}

// printJobs prints finished jobs like local ones and returns the exit code
// of the worst.
func printJobs(cmd *cobra.Command, jobs []*api.Job, asJSON bool) error {
	if asJSON && len(jobs) > 1 {
		var streams []resultJSON
		for _, j := range jobs {
			streams = append(streams, jsonFigures(server.MonitorFigures(j.Figures), nonNil(j.Warnings), j.Error))
		}
		total := totalFigures(jobs)
		_ = printJSON(cmd.OutOrStdout(), map[string]any{"streams": streams, "total": jsonFigures(total, nil, "")})
	}
	var worst error
	for i, j := range jobs {
		if len(jobs) > 1 && !asJSON {
			fmt.Fprintf(cmd.OutOrStdout(), "Stream %d of %d (job %d)\n", i+1, len(jobs), j.ID)
		}
		if !asJSON || len(jobs) == 1 {
			res := &engine.Result{Figures: server.MonitorFigures(j.Figures), Warnings: j.Warnings, Level: j.Level}
			if j.Error != "" && !asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "job %d: %s\n", j.ID, jobErrorText(j))
			}
			printResult(cmd, res, asJSON)
		}
		if err := jobExit(j); err != nil && (worst == nil || severity(err) > severity(worst)) {
			worst = err
		}
	}
	if len(jobs) > 1 && !asJSON {
		monitor.Render(cmd.OutOrStdout(), totalFigures(jobs))
	}
	return worst
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// severity orders exit codes: a failure outweighs verify problems, which
// outweigh warnings.
func severity(err error) int {
	var ee *exitError
	if !errors.As(err, &ee) {
		return 3
	}
	switch ee.Code {
	case exitWarnings:
		return 1
	case exitVerify:
		return 2
	}
	return 3
}

// jobExit maps a finished job's state to the documented exit codes.
func jobExit(j *api.Job) error {
	switch j.State {
	case catalog.StateSucceeded:
		return nil
	case catalog.StateWarnings:
		return &exitError{Code: exitWarnings}
	case catalog.StateFailed:
		if verifyFailed(j) {
			return &exitError{Code: exitVerify, Err: fmt.Errorf("job %d: %s", j.ID, j.Error)}
		}
		return &exitError{Code: exitFailure, Err: fmt.Errorf("job %d failed: %s", j.ID, jobErrorText(j))}
	}
	return &exitError{Code: exitFailure, Err: fmt.Errorf("job %d %s: %s", j.ID, j.State, j.Error)}
}

// totalFigures adds the streams of a split backup into one set of figures:
// their bytes over the wall-clock time from the first start to the last end.
func totalFigures(jobs []*api.Job) monitor.Figures {
	t := monitor.Figures{Kind: "backup", Status: "completed", Tapes: []string{}}
	var first, last time.Time
	for _, j := range jobs {
		f := j.Figures
		t.Files += f.Files
		t.SourceBytes += f.SourceBytes
		t.MediaBytes += f.MediaBytes
		t.PeakKBps += f.PeakKBps
		t.Warnings += f.Warnings
		t.Level = f.Level
		t.Tapes = append(t.Tapes, f.Tapes...)
		if first.IsZero() || j.Started.Before(first) {
			first = j.Started
		}
		if j.Finished.After(last) {
			last = j.Finished
		}
		if f.Status != "completed" {
			t.Status = f.Status
		}
	}
	t.ElapsedSeconds = last.Sub(first).Seconds()
	if t.ElapsedSeconds > 0 {
		t.AvgKBps = float64(t.SourceBytes) / t.ElapsedSeconds / 1024
	}
	t.CompressionRatio = units.Ratio(t.SourceBytes, t.MediaBytes)
	return t
}

// progressView shows remote jobs' progress on stderr: a live line on a
// terminal, and the queue's reasons always.
type progressView struct {
	mu      sync.Mutex
	cmd     *cobra.Command
	live    bool
	shown   bool
	multi   bool
	reasons map[int64]string
	index   map[int64]int
}

func remoteProgress(cmd *cobra.Command, ids []int64, enabled bool) *progressView {
	v := &progressView{cmd: cmd, live: enabled && isTerminal(os.Stderr), multi: len(ids) > 1,
		reasons: map[int64]string{}, index: map[int64]int{}}
	for i, id := range ids {
		v.index[id] = i + 1
	}
	return v
}

func (v *progressView) event(e api.Event) error {
	ev := server.MonitorEvent(e)
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Kind {
	case monitor.Queued:
		if ev.Message != "" && ev.Message != "queued" && ev.Message != v.reasons[ev.JobID] {
			v.reasons[ev.JobID] = ev.Message
			v.clear()
			fmt.Fprintf(v.cmd.ErrOrStderr(), "job %d: %s\n", ev.JobID, ev.Message)
		}
	case monitor.Progress:
		if !v.live {
			return nil
		}
		line := progressLine(ev, terminalWidth())
		if v.multi {
			line = fmt.Sprintf("[%d] %s", v.index[ev.JobID], line)
		}
		fmt.Fprintf(os.Stderr, "\r\033[K%s", line)
		v.shown = true
	}
	return nil
}

func (v *progressView) clear() {
	if v.shown {
		fmt.Fprint(os.Stderr, "\r\033[K")
		v.shown = false
	}
}

func (v *progressView) done() {
	v.mu.Lock()
	v.clear()
	v.mu.Unlock()
}
