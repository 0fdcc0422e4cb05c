package job

import (
	"errors"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
)

// Kind is what a job does. The values are the catalog's job kinds (they
// are stored and shown as they are).
type Kind string

const (
	Backup        Kind = catalog.KindBackup
	Restore       Kind = catalog.KindRestore
	Verify        Kind = catalog.KindVerify
	Copy          Kind = catalog.KindCopy
	Prune         Kind = catalog.KindPrune
	CatalogBackup Kind = catalog.KindCatalog
	TapeScan      Kind = catalog.KindScan
	TapeErase     Kind = catalog.KindErase
)

// Kinds lists every kind, in the order the docs give them.
var Kinds = []Kind{Backup, Restore, Verify, Copy, Prune, CatalogBackup, TapeScan, TapeErase}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool {
	for _, v := range Kinds {
		if k == v {
			return true
		}
	}
	return false
}

// State is where a job is in its life. The values are the catalog's job
// states.
type State string

const (
	Queued      State = catalog.StateQueued
	Waiting     State = catalog.StateWaiting // for a drive or a tape
	Running     State = catalog.StateRunning
	Succeeded   State = catalog.StateSucceeded
	Warnings    State = catalog.StateWarnings // finished, with warnings
	Failed      State = catalog.StateFailed
	Canceled    State = catalog.StateCanceled
	Interrupted State = catalog.StateInterrupted // its holder died: reclaimed after its lease expired
)

// Final reports whether a job in state s has ended.
func (s State) Final() bool {
	switch s {
	case Succeeded, Warnings, Failed, Canceled, Interrupted:
		return true
	}
	return false
}

// Errors of the package, to be tested with errors.Is.
var (
	// ErrCanceled is the cause of a job's context when Cancel ended it.
	ErrCanceled = errors.New("job canceled")
	// ErrLeaseLost is the cause of a job's context when its holder lost
	// the job's lease: another process reclaimed it, or it could not be
	// renewed before it expired.
	ErrLeaseLost = errors.New("job lease lost")
	// ErrPanicked: the job's function panicked; the job failed.
	ErrPanicked = errors.New("job function panicked")
	// ErrNotRunning: no job with that ID runs in this registry.
	ErrNotRunning = errors.New("job not running here")
	// ErrClosed: the registry was closed.
	ErrClosed = errors.New("job registry closed")
	// ErrInvalid: a bad Spec or Options value.
	ErrInvalid = errors.New("invalid")
)

// Event kinds the package adds to monitor's.
const (
	// LogEvent carries one line of a job's log in Message.
	LogEvent monitor.EventKind = "log"
	// HeartbeatEvent: the job's lease was renewed and its figures saved;
	// Message is the lease's new expiry (RFC 3339).
	HeartbeatEvent monitor.EventKind = "heartbeat"
)

// Sink receives the events of the jobs of a registry: the CLI, the
// server's event stream, metrics and the web console consume them. It has
// the shape of monitor.Sink, so monitor's Nop, SinkFunc and Recorder fit.
// Events of one job arrive in order; Event may be called from several
// goroutines at once (one per job) and must not block for long.
type Sink interface {
	Event(monitor.Event)
}

var (
	_ Sink = monitor.Nop{}
	_ Sink = (*monitor.Recorder)(nil)
	_ Sink = monitor.SinkFunc(nil)
)

// Spec is what a new job is.
type Spec struct {
	Kind      Kind
	Client    string // whose data, if any
	Selection string
	Level     string
	ParentID  int64 // the job this one is a stream of, or 0
}

// Result is how a job ended.
type Result struct {
	ID    int64
	State State
	// Err is why the job did not succeed: the function's error, wrapped in
	// ErrCanceled, ErrLeaseLost or ErrPanicked when one of those ended it;
	// nil for Succeeded and Warnings. When the job's lease was reclaimed,
	// State is Interrupted (what the reclaimer recorded) and Err wraps
	// ErrLeaseLost.
	Err     error
	Figures monitor.Figures
}
