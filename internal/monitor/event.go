package monitor

import (
	"sync"
	"time"
)

// EventKind names what happened. Values are stable (they appear in JSON).
type EventKind string

const (
	JobStarted   EventKind = "job_started"
	PhaseStarted EventKind = "phase_started"
	PhaseEnded   EventKind = "phase_ended"
	Progress     EventKind = "progress"
	WarningEvent EventKind = "warning"
	JobEnded     EventKind = "job_ended"
	// Queued: the job waits in the server's queue; Message says why
	// ("waiting for a drive").
	Queued EventKind = "queued"
)

// Event is one thing a job reports to the monitor. Fields that do not apply
// to a kind are zero.
type Event struct {
	Kind  EventKind `json:"kind"`
	Time  time.Time `json:"time"`
	JobID int64     `json:"job_id"`
	Phase string    `json:"phase,omitempty"` // phase events, progress, warnings

	// Progress: running totals of the phase, the path being worked on and
	// the current rate in source bytes per second.
	Files int64   `json:"files,omitempty"`
	Bytes int64   `json:"bytes,omitempty"`
	Path  string  `json:"path,omitempty"`
	Rate  float64 `json:"rate,omitempty"`
	// Total is the source bytes the phase expects, when known (a restore
	// knows exactly; a full backup estimates from the last full of the
	// same selection); 0 when unknown.
	Total int64 `json:"total,omitempty"`
	// Tape is the barcode of the tape the phase is writing or reading now,
	// when it uses one.
	Tape string `json:"tape,omitempty"`

	// Message is the warning text (warning), or the job's status
	// (job_ended: succeeded, warnings, failed, canceled).
	Message string `json:"message,omitempty"`

	// Figures are the job's final figures (job_ended) or its figures so far
	// (phase_ended).
	Figures *Figures `json:"figures,omitempty"`
}

// Sink receives a job's events, in order, from the job's goroutine. Event
// must not block for long: a slow consumer buffers or drops progress events
// itself.
type Sink interface {
	Event(Event)
}

// Nop is a Sink that discards every event.
type Nop struct{}

var _ Sink = Nop{}

// Event discards e.
func (Nop) Event(Event) {}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

var _ Sink = SinkFunc(nil)

// Event calls f(e).
func (f SinkFunc) Event(e Event) { f(e) }

// Recorder is a Sink that keeps every event, for tests and for the log tail
// of short jobs. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

var _ Sink = (*Recorder)(nil)

// Event records e.
func (r *Recorder) Event(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}
