package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
)

// Func is the work of a job. It returns nil when the job did its work (with
// or without warnings), or an error that fails it; it must return soon
// after ctx is done. It records what it does through r.
type Func func(ctx context.Context, r *Run) error

// Info is what a running job looks like: what `kura jobs list` and the
// event stream show.
type Info struct {
	ID       int64           `json:"id"`
	Kind     Kind            `json:"kind"`
	State    State           `json:"state"`
	Holder   string          `json:"holder"`
	Started  time.Time       `json:"started"`
	Phase    string          `json:"phase"`  // the phase running now, "" between phases
	Drives   []string        `json:"drives"` // leased drives, as library/drive
	Figures  monitor.Figures `json:"figures"`
	Warnings []string        `json:"warnings"` // the first catalog.MaxWarnings
	Log      []string        `json:"log"`      // the last catalog.MaxLogLines lines
}

// Run is a running job as its function sees it: it records phases, figures,
// warnings, tapes and log lines, and takes drives under the job's lease.
// Its methods are safe for concurrent use.
type Run struct {
	g  *Registry
	id int64

	// The job's own meters: Add counts in them and in the current phase.
	files, source, media *monitor.Meter

	emitMu sync.Mutex // keeps one job's events in order

	mu     sync.Mutex
	row    catalog.Job // the catalog row as it will be saved
	phases []*monitor.Phase
	open   *monitor.Phase // the phase running now, or nil
	drives []driveKey
	lease  leaseExpiry
}

type driveKey struct {
	lib string
	n   int
}

func newRun(g *Registry, row *catalog.Job, expires time.Time) *Run {
	c := g.opts.Clock
	return &Run{g: g, id: row.ID, row: *row, lease: leaseExpiry{t: expires},
		files: monitor.NewMeter(c), source: monitor.NewMeter(c), media: monitor.NewMeter(c)}
}

// ID returns the job's ID.
func (r *Run) ID() int64 { return r.id }

func (r *Run) emit(e monitor.Event) {
	if e.Time.IsZero() {
		e.Time = r.g.opts.Clock.Now()
	}
	e.JobID = r.id
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.g.opts.Sink.Event(e)
}

// StartPhase ends the phase running now, if any, and starts the named one.
func (r *Run) StartPhase(name string) *monitor.Phase {
	r.EndPhase()
	p := monitor.StartPhase(r.g.opts.Clock, name)
	r.mu.Lock()
	r.phases = append(r.phases, p)
	r.open = p
	r.mu.Unlock()
	r.emit(monitor.Event{Kind: monitor.PhaseStarted, Phase: name})
	return p
}

// EndPhase ends the phase running now; without one it does nothing.
func (r *Run) EndPhase() {
	r.mu.Lock()
	p := r.open
	r.open = nil
	r.mu.Unlock()
	if p == nil {
		return
	}
	p.End()
	f := r.Figures()
	r.emit(monitor.Event{Kind: monitor.PhaseEnded, Phase: p.Name, Figures: &f})
}

// Add counts files, source bytes and media bytes in the job's figures and
// in the current phase's. (A phase whose bytes must not count in the job's
// totals, such as a verify after a backup, adds to its own meters.)
func (r *Run) Add(files, source, media int64) {
	r.files.Add(files)
	r.source.Add(source)
	r.media.Add(media)
	r.mu.Lock()
	p := r.open
	r.mu.Unlock()
	if p != nil {
		p.Files.Add(files)
		p.Source.Add(source)
		p.Media.Add(media)
	}
}

// Warn records a warning: the job ends with Warnings unless it fails.
func (r *Run) Warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	if len(r.row.Warnings) < catalog.MaxWarnings {
		r.row.Warnings = append(r.row.Warnings, msg)
	}
	r.row.WarningCount++
	phase := ""
	if r.open != nil {
		phase = r.open.Name
	}
	r.mu.Unlock()
	r.emit(monitor.Event{Kind: monitor.WarningEvent, Phase: phase, Message: msg})
}

// Logf adds a line to the job's log (the last catalog.MaxLogLines are
// kept), stamped with the time.
func (r *Run) Logf(format string, args ...any) {
	now := r.g.opts.Clock.Now()
	line := now.UTC().Format(time.RFC3339) + " " + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.row.Log = append(r.row.Log, line)
	if n := len(r.row.Log); n > catalog.MaxLogLines {
		r.row.Log = append([]string(nil), r.row.Log[n-catalog.MaxLogLines:]...)
	}
	r.mu.Unlock()
	r.emit(monitor.Event{Kind: LogEvent, Time: now, Message: line})
}

// SetSaveset records the saveset the job writes or reads.
func (r *Run) SetSaveset(id int64) {
	r.mu.Lock()
	r.row.SavesetID = id
	r.mu.Unlock()
}

// AddTape records a tape the job used, once, in order.
func (r *Run) AddTape(barcode string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.row.Tapes {
		if b == barcode {
			return
		}
	}
	r.row.Tapes = append(r.row.Tapes, barcode)
}

// TakeDrive leases drive n of library lib for this job in the catalog:
// catalog.ErrLeaseHeld if another job holds it. The lease is renewed with
// the job's and released when the job ends.
func (r *Run) TakeDrive(lib string, n int) error {
	_, err := r.g.cat.AcquireDriveLease(lib, n, r.g.opts.Holder, r.id, r.g.opts.Clock.Now(), r.g.opts.LeaseTTL)
	if err != nil {
		return fmt.Errorf("job %d: %w", r.id, err)
	}
	r.mu.Lock()
	r.drives = append(r.drives, driveKey{lib, n})
	r.mu.Unlock()
	return nil
}

// ReleaseDrive gives back a drive the job took before it ends.
func (r *Run) ReleaseDrive(lib string, n int) error {
	if err := r.g.cat.ReleaseDriveLease(lib, n, r.g.opts.Holder, r.id); err != nil {
		return fmt.Errorf("job %d: %w", r.id, err)
	}
	r.mu.Lock()
	for i, d := range r.drives {
		if d == (driveKey{lib, n}) {
			r.drives = append(r.drives[:i], r.drives[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	return nil
}

// Figures returns the job's figures so far.
func (r *Run) Figures() monitor.Figures {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.figuresLocked()
}

func (r *Run) figuresLocked() monitor.Figures {
	f := monitor.Figures{JobID: r.id, SavesetID: r.row.SavesetID, Level: r.row.Level,
		Tapes: append([]string(nil), r.row.Tapes...), Warnings: r.row.WarningCount,
		Kind: r.row.Kind, Status: r.row.State}
	f.Measure(r.files, r.source, r.media)
	for _, p := range r.phases {
		f.Phases = append(f.Phases, p.Figures())
	}
	return f
}

// Info returns what the job looks like now.
func (r *Run) Info() Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := Info{ID: r.id, Kind: Kind(r.row.Kind), State: State(r.row.State), Holder: r.g.opts.Holder,
		Started: r.row.Started, Figures: r.figuresLocked(),
		Warnings: append([]string(nil), r.row.Warnings...), Log: append([]string(nil), r.row.Log...)}
	if r.open != nil {
		in.Phase = r.open.Name
	}
	for _, d := range r.drives {
		in.Drives = append(in.Drives, fmt.Sprintf("%s/%d", d.lib, d.n))
	}
	return in
}

// rowLocked returns the catalog row with the figures so far.
func (r *Run) rowLocked() *catalog.Job {
	j := r.row
	j.Files, j.SourceBytes, j.MediaBytes = r.files.Total(), r.source.Total(), r.media.Total()
	j.AvgRate, j.PeakRate = r.source.Average(), r.source.Peak()
	j.Phases = make([]catalog.Phase, len(r.phases))
	for i, p := range r.phases {
		start := p.Source.Start()
		j.Phases[i] = catalog.Phase{Name: p.Name, Start: start, End: start.Add(p.Elapsed()),
			Files: p.Files.Total(), Bytes: p.Source.Total(), MediaBytes: p.Media.Total(),
			AvgRate: p.Source.Average(), PeakRate: p.Source.Peak()}
	}
	j.Tapes = append([]string(nil), r.row.Tapes...)
	j.Warnings = append([]string(nil), r.row.Warnings...)
	j.Log = append([]string(nil), r.row.Log...)
	return &j
}

// heartbeat renews the lease and saves the figures at every tick until stop
// is closed (keepLease).
func (r *Run) heartbeat(cancel context.CancelCauseFunc, stop <-chan struct{}) {
	r.g.keepLease(r.id, &r.lease, cancel, stop, func() error {
		r.mu.Lock()
		row := r.rowLocked()
		r.mu.Unlock()
		return r.g.cat.UpdateLeasedJob(row, r.g.opts.Holder)
	}, func(now time.Time, expires time.Time) {
		r.emit(monitor.Event{Kind: HeartbeatEvent, Time: now, Message: expires.Format(time.RFC3339Nano)})
	}, r.Logf)
}

// finish records the job's end and releases its lease and drives.
func (r *Run) finish(ctx context.Context, err error) Result {
	r.EndPhase()
	cause := context.Cause(ctx)
	state := Succeeded
	switch {
	case err != nil && ctx.Err() != nil && leaseLost(cause):
		state, err = Failed, fmt.Errorf("%w (%v)", cause, err)
	case err != nil && ctx.Err() != nil:
		if !errors.Is(cause, ErrCanceled) {
			cause = fmt.Errorf("%w: %w", ErrCanceled, cause)
		}
		state, err = Canceled, fmt.Errorf("%w (%v)", cause, err)
	case err != nil:
		state = Failed
	}
	now := r.g.opts.Clock.Now()
	r.mu.Lock()
	if state == Succeeded && r.row.WarningCount > 0 {
		state = Warnings
	}
	r.row.State, r.row.Finished = string(state), now
	if err != nil {
		r.row.Error = err.Error()
	}
	r.files.Stop()
	r.source.Stop()
	r.media.Stop()
	row := r.rowLocked()
	f := r.figuresLocked()
	r.mu.Unlock()

	res := Result{ID: r.id, State: state, Err: err, Figures: f}
	if ferr := r.g.cat.FinishLeasedJob(row, r.g.opts.Holder); ferr != nil {
		if errors.Is(ferr, catalog.ErrLeaseLost) {
			// Reclaimed: the reclaimer's record stands.
			res.State = Interrupted
			if !leaseLost(res.Err) {
				res.Err = fmt.Errorf("%w: %w", ErrLeaseLost, ferr)
			}
		} else {
			// The catalog failed us: the lease will expire and another
			// process reclaims the job.
			res.State, res.Err = Failed, errors.Join(res.Err, fmt.Errorf("recording the job's end: %w", ferr))
		}
	}
	res.Figures.Status = string(res.State)
	r.emit(monitor.Event{Kind: monitor.JobEnded, Message: string(res.State), Figures: &res.Figures})
	return res
}
