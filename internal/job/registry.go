package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
)

// Ticker delivers heartbeat ticks; time.Ticker is one (see SystemTicker).
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

type systemTicker struct{ t *time.Ticker }

func (s systemTicker) C() <-chan time.Time { return s.t.C }
func (s systemTicker) Stop()               { s.t.Stop() }

// SystemTicker is the real ticker: time.NewTicker(d).
func SystemTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

// Defaults of Options.
const (
	// DefaultHeartbeat: a lease is renewed every 10 s, two catalog writes
	// per running job, negligible next to a job's own catalog traffic.
	DefaultHeartbeat = 10 * time.Second
	// DefaultMissedHeartbeats: a lease lasts three heartbeats, so one slow
	// or failed renewal (a busy catalog waits up to catalog.BusyTimeout,
	// 10 s) does not lose it, and a dead holder's job is reclaimable after
	// 30 s.
	DefaultMissedHeartbeats = 3
)

// Options configure a Registry. The zero value is valid: every field has a
// default.
type Options struct {
	// Holder names this process in the leases it takes; it must be unique
	// among the processes sharing the catalog. Default: Self(), the one
	// holder of this process (host:pid:start:random).
	Holder string
	// Gone says why a holder is known to be dead, or "" (see HolderGone):
	// Reclaim takes that holder's jobs at once, before their leases expire.
	// Default: HolderGone.
	Gone func(holder string) string
	// Clock tells the time of heartbeats, leases and figures. Default:
	// monitor.SystemClock.
	Clock monitor.Clock
	// NewTicker makes the heartbeat ticker. Default: SystemTicker.
	NewTicker func(time.Duration) Ticker
	// Heartbeat is how often a running job's lease is renewed and its
	// figures saved in the catalog. Default: DefaultHeartbeat.
	Heartbeat time.Duration
	// LeaseTTL is how long a lease lasts after a renewal; it must be longer
	// than Heartbeat. Default: DefaultMissedHeartbeats × Heartbeat.
	LeaseTTL time.Duration
	// Sink receives the jobs' events. Default: monitor.Nop.
	Sink Sink
}

func (o *Options) applyDefaults() error {
	if o.Holder == "" {
		o.Holder = Self().String()
	}
	if o.Gone == nil {
		o.Gone = HolderGone
	}
	if o.Clock == nil {
		o.Clock = monitor.SystemClock{}
	}
	if o.NewTicker == nil {
		o.NewTicker = SystemTicker
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultMissedHeartbeats * o.Heartbeat
	}
	if o.Sink == nil {
		o.Sink = monitor.Nop{}
	}
	return o.Validate()
}

// Validate checks the options as given (zero fields are not defaulted).
func (o *Options) Validate() error {
	if o.Heartbeat < 0 || o.LeaseTTL < 0 {
		return fmt.Errorf("job: negative heartbeat or lease: %w", ErrInvalid)
	}
	if o.Heartbeat > 0 && o.LeaseTTL > 0 && o.LeaseTTL <= o.Heartbeat {
		return fmt.Errorf("job: lease %v must outlast the heartbeat %v: %w", o.LeaseTTL, o.Heartbeat, ErrInvalid)
	}
	return nil
}

// String describes the options.
func (o Options) String() string {
	return fmt.Sprintf("holder=%s heartbeat=%v lease=%v", o.Holder, o.Heartbeat, o.LeaseTTL)
}

// Registry runs jobs on one catalog for one holder (one process), and knows
// the jobs it runs. Several registries (processes) may share a catalog: the
// leases there say which one runs what. It is safe for concurrent use.
type Registry struct {
	cat  *catalog.Catalog
	opts Options

	mu     sync.Mutex
	runs   map[int64]*Handle
	held   map[int64]*Held
	closed bool
	wg     sync.WaitGroup
}

// NewRegistry returns a registry on cat.
func NewRegistry(cat *catalog.Catalog, opts Options) (*Registry, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, err
	}
	return &Registry{cat: cat, opts: opts, runs: map[int64]*Handle{}, held: map[int64]*Held{}}, nil
}

// Options returns the registry's options, defaults applied.
func (g *Registry) Options() Options { return g.opts }

// Start records a new job, running, with this registry's lease on it, and
// runs fn in a goroutine. The job's context derives from ctx; it is
// cancelled by Cancel, by Close and when the lease is lost.
func (g *Registry) Start(ctx context.Context, spec Spec, fn Func) (*Handle, error) {
	if !spec.Kind.Valid() {
		return nil, fmt.Errorf("job: kind %q: %w", spec.Kind, ErrInvalid)
	}
	if err := g.admit(); err != nil {
		return nil, err
	}
	defer g.wg.Done()
	now := g.opts.Clock.Now()
	row := &catalog.Job{Kind: string(spec.Kind), Client: spec.Client, Selection: spec.Selection,
		Level: spec.Level, ParentID: spec.ParentID}
	l, err := g.cat.CreateLeasedJob(row, g.opts.Holder, now, g.opts.LeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("job: starting a %s job: %w", spec.Kind, err)
	}
	return g.launch(ctx, row, l, fn), nil
}

// StartQueued takes job id from the queue (it must be queued or waiting:
// catalog.ErrNotQueued; nobody else may hold it: catalog.ErrLeaseHeld) and
// runs fn on it as Start does.
func (g *Registry) StartQueued(ctx context.Context, id int64, fn Func) (*Handle, error) {
	if err := g.admit(); err != nil {
		return nil, err
	}
	defer g.wg.Done()
	row, l, err := g.cat.AcquireJobLease(id, g.opts.Holder, g.opts.Clock.Now(), g.opts.LeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("job: starting job %d: %w", id, err)
	}
	return g.launch(ctx, row, l, fn), nil
}

// admit counts a start in progress, so Close waits for it.
func (g *Registry) admit() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	g.wg.Add(1)
	return nil
}

func (g *Registry) launch(parent context.Context, row *catalog.Job, l *catalog.Lease, fn Func) *Handle {
	ctx, cancel := context.WithCancelCause(parent)
	r := newRun(g, row, l.Expires)
	h := &Handle{run: r, cancel: cancel, done: make(chan struct{})}
	g.mu.Lock()
	g.runs[row.ID] = h
	g.wg.Add(1)
	if g.closed { // Close came while the job was being recorded
		h.cancel(fmt.Errorf("%w: %w", ErrCanceled, ErrClosed))
	}
	g.mu.Unlock()
	r.emit(monitor.Event{Kind: monitor.JobStarted, JobID: row.ID})

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		r.heartbeat(cancel, stop)
	}()
	go func() {
		defer g.wg.Done()
		err := call(ctx, r, fn)
		close(stop)
		<-stopped
		res := r.finish(ctx, err)
		cancel(nil)
		g.mu.Lock()
		delete(g.runs, row.ID)
		g.mu.Unlock()
		h.res = res
		close(h.done)
	}()
	return h
}

// call runs fn, turning a panic into an error.
func call(ctx context.Context, r *Run, fn Func) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanicked, p)
		}
	}()
	return fn(ctx, r)
}

// Cancel cancels job id, which runs in this registry (ErrNotRunning
// otherwise). It returns at once; the job ends when its function returns.
func (g *Registry) Cancel(id int64) error {
	g.mu.Lock()
	h, ok := g.runs[id]
	g.mu.Unlock()
	if !ok {
		return fmt.Errorf("job %d: %w", id, ErrNotRunning)
	}
	h.Cancel()
	return nil
}

// Job returns the running job id, or ErrNotRunning.
func (g *Registry) Job(id int64) (*Handle, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.runs[id]
	if !ok {
		return nil, fmt.Errorf("job %d: %w", id, ErrNotRunning)
	}
	return h, nil
}

// Running returns what the jobs this registry runs look like now, by ID.
func (g *Registry) Running() []Info {
	g.mu.Lock()
	hs := make([]*Handle, 0, len(g.runs))
	for _, h := range g.runs {
		hs = append(hs, h)
	}
	g.mu.Unlock()
	out := make([]Info, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.run.Info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Reclaim ends, as interrupted, every job on the catalog whose lease has
// expired (whoever held it), or whose holder Options.Gone reports dead, and
// returns their IDs: see catalog.ReclaimJobs. Every process calls it when it
// opens the catalog, a server now and then too. A job whose lease is live
// and whose holder may be alive is never touched.
func (g *Registry) Reclaim() ([]int64, error) {
	ids, err := g.cat.ReclaimJobs(g.opts.Clock.Now(), g.opts.Gone)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	for _, id := range ids {
		g.opts.Sink.Event(monitor.Event{Kind: monitor.JobEnded, Time: g.opts.Clock.Now(), JobID: id,
			Message: string(Interrupted)})
	}
	return ids, nil
}

// Close refuses new jobs, cancels the running ones, held ones included
// (their cause wraps ErrCanceled and ErrClosed), and waits until each has
// recorded its end.
func (g *Registry) Close() {
	g.mu.Lock()
	g.closed = true
	var cancels []context.CancelCauseFunc
	for _, h := range g.runs {
		cancels = append(cancels, h.cancel)
	}
	for _, h := range g.held {
		cancels = append(cancels, h.cancel)
	}
	g.mu.Unlock()
	for _, cancel := range cancels {
		cancel(fmt.Errorf("%w: %w", ErrCanceled, ErrClosed))
	}
	g.wg.Wait()
}

// Handle is a job started by a registry.
type Handle struct {
	run    *Run
	cancel context.CancelCauseFunc
	done   chan struct{}
	res    Result // set before done is closed
}

// ID returns the job's ID.
func (h *Handle) ID() int64 { return h.run.id }

// Cancel asks the job to stop: its context is cancelled with ErrCanceled.
func (h *Handle) Cancel() { h.cancel(ErrCanceled) }

// Done is closed when the job has ended and its end is recorded.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Wait waits for the job to end and returns how it ended.
func (h *Handle) Wait() Result {
	<-h.done
	return h.res
}

// Info returns what the job looks like now.
func (h *Handle) Info() Info { return h.run.Info() }

// errors.Is helper for the lease-loss causes.
func leaseLost(err error) bool { return errors.Is(err, ErrLeaseLost) }
