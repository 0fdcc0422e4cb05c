package main

import (
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/units"
)

// The --json forms of the main outputs. They are defined here, apart from
// the catalog's and the engine's structs, so that a change there does not
// silently change what scripts read; docs/schema/*.json describes them.
// The rules: snake_case keys; numbers are numbers (a ratio is "ratio",
// with its text in "ratio_text"); units in the names (_bytes, _kbps,
// _seconds); a job and a backup use the same names for the same figures;
// lists are [] rather than null.

// phaseJSON is one phase of a job or a result.
type phaseJSON struct {
	Name           string  `json:"name"`
	Files          int64   `json:"files"`
	SourceBytes    int64   `json:"source_bytes"`
	MediaBytes     int64   `json:"media_bytes"`
	AvgKBps        float64 `json:"avg_kbps"`
	PeakKBps       float64 `json:"peak_kbps"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Ratio          float64 `json:"ratio"`
	RatioText      string  `json:"ratio_text"`
}

// resultJSON is what backup, restore, verify, copy and policy run print
// with --json: the job's figures and its warnings.
type resultJSON struct {
	JobID          int64       `json:"job_id"`
	SavesetID      int64       `json:"saveset_id"`
	Kind           string      `json:"kind"`
	Status         string      `json:"status"`
	Level          string      `json:"level"`
	Files          int64       `json:"files"`
	SourceBytes    int64       `json:"source_bytes"`
	MediaBytes     int64       `json:"media_bytes"`
	AvgKBps        float64     `json:"avg_kbps"`
	PeakKBps       float64     `json:"peak_kbps"`
	ElapsedSeconds float64     `json:"elapsed_seconds"`
	Ratio          float64     `json:"ratio"`
	RatioText      string      `json:"ratio_text"`
	Tapes          []string    `json:"tapes"`
	Warnings       int64       `json:"warnings"`
	WarningList    []string    `json:"warning_list"`
	Phases         []phaseJSON `json:"phases"`
	Note           string      `json:"note,omitempty"`
	// Verify only.
	CheckedFiles *int64         `json:"checked_files,omitempty"`
	Problems     *[]problemJSON `json:"problems,omitempty"`
}

// problemJSON is one problem a verify found.
type problemJSON struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// ratioJSON is a ratio as a number (0 when there is nothing to divide) and
// as the text the tables show ("5.26:1", "-").
func ratioJSON(source, media int64) (float64, string) {
	if units.Ratio(source, media) == "-" {
		return 0, "-"
	}
	return units.RatioValue(source, media), units.Ratio(source, media)
}

// jsonFigures is the --json form of a job's figures.
func jsonFigures(f monitor.Figures, warnings []string, note string) resultJSON {
	r := resultJSON{
		JobID: f.JobID, SavesetID: f.SavesetID, Kind: f.Kind, Status: f.Status, Level: f.Level,
		Files: f.Files, SourceBytes: f.SourceBytes, MediaBytes: f.MediaBytes,
		AvgKBps: f.AvgKBps, PeakKBps: f.PeakKBps, ElapsedSeconds: f.ElapsedSeconds,
		Tapes: nonNil(f.Tapes), Warnings: f.Warnings, WarningList: nonNil(warnings),
		Phases: []phaseJSON{}, Note: note,
	}
	r.Ratio, r.RatioText = ratioJSON(f.SourceBytes, f.MediaBytes)
	for _, p := range f.Phases {
		pj := phaseJSON{Name: p.Name, Files: p.Files, SourceBytes: p.SourceBytes, MediaBytes: p.MediaBytes,
			AvgKBps: p.AvgKBps, PeakKBps: p.PeakKBps, ElapsedSeconds: p.ElapsedSeconds}
		pj.Ratio, pj.RatioText = ratioJSON(p.SourceBytes, p.MediaBytes)
		r.Phases = append(r.Phases, pj)
	}
	return r
}

// jobJSON is a job in `jobs list/show --json`: the figures under the names
// a backup's result uses.
type jobJSON struct {
	ID             int64       `json:"id"`
	ParentID       int64       `json:"parent_id,omitempty"`
	Kind           string      `json:"kind"`
	State          string      `json:"state"`
	Client         string      `json:"client"`
	Selection      string      `json:"selection"`
	SavesetID      int64       `json:"saveset_id"`
	Level          string      `json:"level"`
	Started        time.Time   `json:"started"`
	Finished       *time.Time  `json:"finished,omitempty"`
	ElapsedSeconds float64     `json:"elapsed_seconds"`
	Files          int64       `json:"files"`
	SourceBytes    int64       `json:"source_bytes"`
	MediaBytes     int64       `json:"media_bytes"`
	AvgKBps        float64     `json:"avg_kbps"`
	PeakKBps       float64     `json:"peak_kbps"`
	Ratio          float64     `json:"ratio"`
	RatioText      string      `json:"ratio_text"`
	Tapes          []string    `json:"tapes"`
	Warnings       int64       `json:"warnings"`
	WarningList    []string    `json:"warning_list"`
	Phases         []phaseJSON `json:"phases"`
	Error          string      `json:"error,omitempty"`
	ErrorCode      string      `json:"error_code,omitempty"`  // the API's code of the error (docs/api.md)
	ErrorField     string      `json:"error_field,omitempty"` // and its field
	Reason         string      `json:"reason,omitempty"`
	Log            []string    `json:"log,omitempty"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// toJobJSON converts a job; withLog adds its log tail (jobs show).
func toJobJSON(j *api.Job, withLog bool) jobJSON {
	out := jobJSON{
		ID: j.ID, ParentID: j.ParentID, Kind: j.Kind, State: j.State, Client: j.Client, Selection: j.Selection,
		SavesetID: j.SavesetID, Level: j.Level, Started: j.Started, Finished: timeOrNil(j.Finished),
		Files: j.Files, SourceBytes: j.SourceBytes, MediaBytes: j.MediaBytes,
		AvgKBps: units.KBps(j.AvgRate), PeakKBps: units.KBps(j.PeakRate),
		Tapes: nonNil(j.Tapes), Warnings: j.WarningCount, WarningList: nonNil(j.Warnings),
		Phases: []phaseJSON{}, Error: j.Error, ErrorCode: j.ErrorCode, ErrorField: j.ErrorField, Reason: j.Reason,
	}
	if !j.Finished.IsZero() {
		out.ElapsedSeconds = j.Finished.Sub(j.Started).Seconds()
	}
	out.Ratio, out.RatioText = ratioJSON(j.SourceBytes, j.MediaBytes)
	for _, p := range j.Phases {
		pj := phaseJSON{Name: p.Name, Files: p.Files, SourceBytes: p.Bytes, MediaBytes: p.MediaBytes,
			AvgKBps: units.KBps(p.AvgRate), PeakKBps: units.KBps(p.PeakRate)}
		if !p.End.IsZero() {
			pj.ElapsedSeconds = p.End.Sub(p.Start).Seconds()
		}
		pj.Ratio, pj.RatioText = ratioJSON(p.Bytes, p.MediaBytes)
		out.Phases = append(out.Phases, pj)
	}
	if withLog {
		out.Log = nonNil(j.Log)
	}
	return out
}

// decisionJSON is retention's verdict on a saveset (`savesets --why --json`).
type decisionJSON = api.RetentionDecision

func toDecisionJSON(d engine.SavesetDecision) decisionJSON { return service.Decision(d) }

// pruneJSON is `kura prune --json`.
type pruneJSON struct {
	DryRun    bool           `json:"dry_run"`
	Decisions []decisionJSON `json:"decisions"`
	Expired   []int64        `json:"expired"`  // savesets expired now (or that would be)
	Recycled  []string       `json:"recycled"` // tapes returned to scratch
	Notes     []string       `json:"notes"`
}

func toPruneJSON(r *engine.PruneResult) pruneJSON {
	out := pruneJSON{DryRun: r.DryRun, Decisions: []decisionJSON{}, Expired: []int64{},
		Recycled: nonNil(r.Recycled), Notes: nonNil(r.Notes)}
	for _, d := range r.Decisions {
		out.Decisions = append(out.Decisions, toDecisionJSON(d))
	}
	out.Expired = append(out.Expired, r.Expired...)
	return out
}

// clientJSON is an enrolled client (`client list --json`).
type clientJSON struct {
	Name            string     `json:"name"`
	Connected       bool       `json:"connected"`
	Revoked         *time.Time `json:"revoked,omitempty"`
	Enrolled        time.Time  `json:"enrolled"`
	LastSeen        *time.Time `json:"last_seen,omitempty"`
	Address         string     `json:"address"`
	BWLimitKBps     float64    `json:"bwlimit_kbps"` // 0 = no limit
	Encrypt         bool       `json:"encrypt"`      // its agent encrypts its backups
	CertSerial      string     `json:"cert_serial"`
	CertFingerprint string     `json:"cert_fingerprint"`
	// WALSpools: what its agent last reported of its WAL spools (kura wal
	// archive through the agent); absent for a client that archives none.
	WALSpools []walSpoolStateJSON `json:"wal_spools,omitempty"`
}

// walSpoolStateJSON is one cluster's WAL spool of a client (client list
// and show --json).
type walSpoolStateJSON struct {
	Cluster        string     `json:"cluster"`
	Files          int        `json:"files"`                  // WAL files waiting for the server
	Oldest         string     `json:"oldest,omitempty"`       // the oldest of them
	OldestSince    *time.Time `json:"oldest_since,omitempty"` // when it was spooled
	OldestSeconds  float64    `json:"oldest_seconds"`         // how long it has waited (0: none)
	Behind         bool       `json:"behind"`                 // longer than --wal-warn-after
	LastArchived   string     `json:"last_archived,omitempty"`
	LastArchivedAt *time.Time `json:"last_archived_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"` // why the last send failed, until one succeeds
	LastErrorAt    *time.Time `json:"last_error_at,omitempty"`
	Reported       time.Time  `json:"reported"` // when the agent reported it (within 10 minutes when nothing changed)
}

func toClientJSON(c api.Client) clientJSON {
	return toClientJSONAt(c, time.Now(), api.WALBehindAfter)
}

// toClientJSONAt is toClientJSON with the WAL spools' ages at now, behind
// past warnAfter.
func toClientJSONAt(c api.Client, now time.Time, warnAfter time.Duration) clientJSON {
	out := clientJSON{Name: c.Name, Connected: c.Connected, Revoked: timeOrNil(c.Revoked), Enrolled: c.Enrolled,
		LastSeen: timeOrNil(c.LastSeen), Address: c.Address, BWLimitKBps: units.KBps(float64(c.BWLimit)), Encrypt: c.Encrypt,
		CertSerial: c.CertSerial, CertFingerprint: c.CertFingerprint}
	for _, s := range c.WALSpools {
		j := walSpoolStateJSON{Cluster: s.Cluster, Files: s.Files, Oldest: s.Oldest, Behind: s.Behind(now, warnAfter),
			LastArchived: s.LastArchived, LastArchivedAt: timeOrNil(s.LastArchivedAt), LastError: s.LastError,
			LastErrorAt: timeOrNil(s.LastErrorAt), Reported: s.Reported}
		if s.Files > 0 && !s.OldestSince.IsZero() {
			j.OldestSince, j.OldestSeconds = timeOrNil(s.OldestSince), max(0, now.Sub(s.OldestSince).Seconds())
		}
		out.WALSpools = append(out.WALSpools, j)
	}
	return out
}

// tokenJSON is `token create --json`.
type tokenJSON struct {
	Token   string    `json:"token"`
	Name    string    `json:"name"` // "" = any client name
	Expires time.Time `json:"expires"`
}

// tapeJSON is a tape in `tape list --json` (api.Tape, the wire type).
type tapeJSON = api.Tape

// erasedJSON is `tape erase --json`: the tape as it now is, and the
// savesets the erase expired.
type erasedJSON struct {
	tapeJSON
	ExpiredSavesets []int64 `json:"expired_savesets"`
}

// recipeOut is `saveset recipe --json`.
type recipeOut = api.Recipe
