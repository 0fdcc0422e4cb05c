package service

import (
	"context"
	"errors"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
)

// Job is a job record and its figures on the wire.
func Job(j *catalog.Job, f monitor.Figures) api.Job {
	out := api.Job{ID: j.ID, Kind: j.Kind, State: j.State, Client: j.Client, Selection: j.Selection,
		SavesetID: j.SavesetID, Level: j.Level, Started: j.Started, Finished: j.Finished, Files: j.Files,
		SourceBytes: j.SourceBytes, MediaBytes: j.MediaBytes, AvgRate: j.AvgRate, PeakRate: j.PeakRate,
		Tapes: j.Tapes, Warnings: j.Warnings, WarningCount: j.WarningCount, Error: j.Error, Log: j.Log,
		Owner: j.Owner, Request: j.Request, Reason: j.Reason, ParentID: j.ParentID, Figures: Figures(f), Result: j.Result,
		ErrorCode: j.ErrorCode, ErrorField: j.ErrorField}
	if j.Phases != nil {
		out.Phases = make([]api.Phase, len(j.Phases))
		for i, p := range j.Phases {
			out.Phases[i] = api.Phase{Name: p.Name, Start: p.Start, End: p.End, Files: p.Files, Bytes: p.Bytes,
				MediaBytes: p.MediaBytes, AvgRate: p.AvgRate, PeakRate: p.PeakRate}
		}
	}
	return out
}

// Figures are a job's figures on the wire.
func Figures(f monitor.Figures) api.Figures {
	out := api.Figures{JobID: f.JobID, SavesetID: f.SavesetID, Level: f.Level, Files: f.Files,
		SourceBytes: f.SourceBytes, MediaBytes: f.MediaBytes, AvgKBps: f.AvgKBps, PeakKBps: f.PeakKBps,
		ElapsedSeconds: f.ElapsedSeconds, CompressionRatio: f.CompressionRatio, Tapes: f.Tapes,
		Warnings: f.Warnings, Kind: f.Kind, Status: f.Status}
	if f.Phases != nil {
		out.Phases = make([]api.PhaseFigures, len(f.Phases))
		for i, p := range f.Phases {
			out.Phases[i] = api.PhaseFigures(p)
		}
	}
	return out
}

// JobOf is a job record on the wire with the Job Monitor's figures (its
// saveset's, when it made one).
func JobOf(cat *catalog.Catalog, j *catalog.Job) api.Job {
	var ss *catalog.Saveset
	if j.SavesetID != 0 {
		ss, _ = cat.Saveset(j.SavesetID)
	}
	return Job(j, engine.JobFigures(j, ss))
}

func (l *Local) Jobs(ctx context.Context, f api.JobFilter) ([]api.Job, error) {
	if err := f.Validate(); err != nil {
		return nil, Err(err)
	}
	if f.Limit == 0 {
		f.Limit = api.DefaultJobLimit
	}
	jobs, err := l.env.Catalog.FindJobs(catalog.JobFilter{Kind: f.Kind, State: f.State, Client: f.Client, Limit: f.Limit})
	if err != nil {
		return nil, Err(err)
	}
	out := make([]api.Job, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, JobOf(l.env.Catalog, j))
	}
	return out, nil
}

func (l *Local) Job(ctx context.Context, id int64) (*api.Job, error) {
	j, err := l.env.Catalog.Job(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Err(engine.Missing("job", "no job %d", id))
	}
	if err != nil {
		return nil, Err(err)
	}
	out := JobOf(l.env.Catalog, j)
	return &out, nil
}
