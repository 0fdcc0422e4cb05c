package server

import (
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/service"
)

// The server's records become wire types here, field by field: the wire
// types (internal/api) have their own JSON names, so a change to a catalog
// or engine type changes the protocol only where it is converted.

// APIClient is a client record on the wire.
func APIClient(c *catalog.Client, connected bool) api.Client {
	return api.Client{Name: c.Name, CertSerial: c.CertSerial, CertFingerprint: c.CertFingerprint,
		Enrolled: c.Enrolled, Revoked: c.Revoked, LastSeen: c.LastSeen, Address: c.Address,
		BWLimit: c.BWLimit, Encrypt: c.Encrypt, Connected: connected, Kind: c.Kind}
}

// APIJob is a job record and its figures on the wire.
func APIJob(j *catalog.Job, f monitor.Figures) api.Job { return service.Job(j, f) }

func catalogPhase(p api.Phase) catalog.Phase {
	return catalog.Phase{Name: p.Name, Start: p.Start, End: p.End, Files: p.Files, Bytes: p.Bytes,
		MediaBytes: p.MediaBytes, AvgRate: p.AvgRate, PeakRate: p.PeakRate}
}

// APIFigures are a job's figures on the wire.
func APIFigures(f monitor.Figures) api.Figures { return service.Figures(f) }

// MonitorFigures are a job's figures from the wire, as the job monitor
// prints them (the reverse of APIFigures).
func MonitorFigures(f api.Figures) monitor.Figures {
	out := monitor.Figures{JobID: f.JobID, SavesetID: f.SavesetID, Level: f.Level, Files: f.Files,
		SourceBytes: f.SourceBytes, MediaBytes: f.MediaBytes, AvgKBps: f.AvgKBps, PeakKBps: f.PeakKBps,
		ElapsedSeconds: f.ElapsedSeconds, CompressionRatio: f.CompressionRatio, Tapes: f.Tapes,
		Warnings: f.Warnings, Kind: f.Kind, Status: f.Status}
	if f.Phases != nil {
		out.Phases = make([]monitor.PhaseFigures, len(f.Phases))
		for i, p := range f.Phases {
			out.Phases[i] = monitor.PhaseFigures(p)
		}
	}
	return out
}

// APIEvent is a job event on the wire (the event stream). Its figures
// carry their lists as [] when empty, as the job monitor sends them.
func APIEvent(ev monitor.Event) api.Event {
	out := api.Event{Kind: string(ev.Kind), Time: ev.Time, JobID: ev.JobID, Phase: ev.Phase, Files: ev.Files,
		Bytes: ev.Bytes, Path: ev.Path, Rate: ev.Rate, Total: ev.Total, Tape: ev.Tape, Message: ev.Message}
	if ev.Figures != nil {
		f := APIFigures(*ev.Figures)
		if f.Tapes == nil {
			f.Tapes = []string{}
		}
		if f.Phases == nil {
			f.Phases = []api.PhaseFigures{}
		}
		out.Figures = &f
	}
	return out
}

// MonitorEvent is a job event from the wire, as the job monitor shows it
// (the reverse of APIEvent).
func MonitorEvent(ev api.Event) monitor.Event {
	out := monitor.Event{Kind: monitor.EventKind(ev.Kind), Time: ev.Time, JobID: ev.JobID, Phase: ev.Phase,
		Files: ev.Files, Bytes: ev.Bytes, Path: ev.Path, Rate: ev.Rate, Total: ev.Total, Tape: ev.Tape,
		Message: ev.Message}
	if ev.Figures != nil {
		f := MonitorFigures(*ev.Figures)
		out.Figures = &f
	}
	return out
}

// APISaveset is a saveset record on the wire.
func APISaveset(ss *catalog.Saveset) api.Saveset {
	out := api.Saveset{ID: ss.ID, JobID: ss.JobID, Client: ss.Client, Selection: ss.Selection, Level: ss.Level,
		BaseID: ss.BaseID, Status: ss.Status, Created: ss.Created, Finished: ss.Finished, Paths: ss.Paths,
		Label: ss.Label, Files: ss.Files, SourceBytes: ss.SourceBytes, MediaBytes: ss.MediaBytes, Codec: ss.Codec,
		Library: ss.Library, Parts: apiParts(ss.Parts), IndexPart: api.Part(ss.IndexPart), IndexBytes: ss.IndexBytes,
		IndexEntries: ss.IndexEntries, Expired: ss.Expired, Policy: ss.Policy, ExpireReason: ss.ExpireReason,
		Encryption: ss.Encryption}
	if ss.Copies != nil {
		out.Copies = make([]api.Copy, len(ss.Copies))
		for i, c := range ss.Copies {
			out.Copies[i] = api.Copy{Copy: c.Copy, Library: c.Library, Created: c.Created, Parts: apiParts(c.Parts),
				IndexPart: api.Part(c.IndexPart)}
		}
	}
	return out
}

func apiParts(ps []catalog.Part) []api.Part {
	if ps == nil {
		return nil
	}
	out := make([]api.Part, len(ps))
	for i, p := range ps {
		out[i] = api.Part(p)
	}
	return out
}

// apiFrames is a frame table on the wire.
func apiFrames(fs []index.Frame) []api.Frame {
	if fs == nil {
		return nil
	}
	out := make([]api.Frame, len(fs))
	for i, f := range fs {
		out[i] = api.Frame(f)
	}
	return out
}

// engineOutcome is an agent's restore outcome as the engine records it.
func engineOutcome(o api.RestoreOutcome) engine.RestoreOutcome {
	return engine.RestoreOutcome{To: o.To, Phase: catalogPhase(o.Phase), Files: o.Files, Bytes: o.Bytes,
		MediaBytes: o.MediaBytes, Warnings: o.Warnings, WarningCount: o.WarningCount, Failed: o.Failed,
		Skipped: o.Skipped, Tapes: o.Tapes, Sources: o.Sources}
}
