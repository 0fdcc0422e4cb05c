package api

import "time"

// Event kinds: what happened to a job. Values are stable.
const (
	EventJobStarted   = "job_started"
	EventPhaseStarted = "phase_started"
	EventPhaseEnded   = "phase_ended"
	EventProgress     = "progress"
	EventWarning      = "warning"
	EventJobEnded     = "job_ended"
	// EventQueued: the job waits in the server's queue; Message says why
	// ("waiting for a drive").
	EventQueued = "queued"
)

// Event is one thing a job reports, as GET /api/v1/jobs/{id}/events
// streams it: a server-sent event whose data line is an Event in JSON.
// The stream ends after the job_ended event. Fields that do not apply to
// a kind are left out.
type Event struct {
	Kind  string    `json:"kind"` // one of the Event* kinds
	Time  time.Time `json:"time"`
	JobID int64     `json:"job_id"`
	Phase string    `json:"phase,omitempty"` // phase events, progress, warnings

	// Progress: running totals of the phase (files, source bytes), the
	// path being worked on and the current rate in source bytes per second.
	Files int64   `json:"files,omitempty"`
	Bytes int64   `json:"bytes,omitempty"`
	Path  string  `json:"path,omitempty"`
	Rate  float64 `json:"rate,omitempty"`
	// Total is the source bytes the phase expects, when known; 0 when not.
	Total int64 `json:"total,omitempty"`
	// Tape is the barcode of the tape the phase is writing or reading now.
	Tape string `json:"tape,omitempty"`

	// Message is the warning text (warning), the job's state (job_ended:
	// succeeded, warnings, failed, canceled), or why the job waits (queued).
	Message string `json:"message,omitempty"`

	// Figures are the job's final figures (job_ended) or its figures so far
	// (phase_ended).
	Figures *Figures `json:"figures,omitempty"`
}

func init() { wireTypes = append(wireTypes, Event{}) }
