package job

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
)

var t0 = time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)

// manualTicker ticks when the test says so.
type manualTicker struct{ c chan time.Time }

func (m *manualTicker) C() <-chan time.Time { return m.c }
func (m *manualTicker) Stop()               {}

// events is a Sink that hands every event to the test in order.
type events chan monitor.Event

func (e events) Event(ev monitor.Event) { e <- ev }

// next returns the next event of kind k for job id, skipping others; it
// fails the test if none comes (a guard against a hang, not a wait).
func (e events) next(t *testing.T, id int64, k monitor.EventKind) monitor.Event {
	t.Helper()
	for {
		select {
		case ev := <-e:
			if ev.JobID == id && ev.Kind == k {
				return ev
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("job %d: no %s event", id, k)
		}
	}
}

// proc is one process on the catalog: its own catalog handle, clock,
// ticker, event stream and registry.
type proc struct {
	cat    *catalog.Catalog
	clock  *monitor.FakeClock
	ticker *manualTicker
	ev     events
	reg    *Registry
}

func newProc(t *testing.T, path, holder string) *proc {
	t.Helper()
	cat, err := catalog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cat: cat, clock: monitor.NewFakeClock(t0), ticker: &manualTicker{c: make(chan time.Time)},
		ev: make(events, 10000)}
	p.reg, err = NewRegistry(cat, Options{Holder: holder, Clock: p.clock, Sink: p.ev,
		NewTicker: func(time.Duration) Ticker { return p.ticker }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.reg.Close(); cat.Close() })
	return p
}

// catalogPath names a new catalog for t: a SQLite file, or in the
// "postgres" subtest of onBoth a new PostgreSQL database.
func catalogPath(t *testing.T) string {
	t.Helper()
	if parts := strings.Split(t.Name(), "/"); len(parts) > 1 && parts[1] == "postgres" {
		db, err := pg.CreateDatabase(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		return pg.URL(db)
	}
	return filepath.Join(t.TempDir(), "catalog.db")
}

// onBoth runs test on a SQLite catalog and on a PostgreSQL one: leases,
// heartbeats and expiry must hold on both.
func onBoth(t *testing.T, test func(t *testing.T)) {
	t.Run("sqlite", test)
	t.Run("postgres", test)
}

// beat delivers one heartbeat to the running job id and waits until it has
// been recorded.
func (p *proc) beat(t *testing.T, id int64) {
	t.Helper()
	p.ticker.c <- p.clock.Now()
	p.ev.next(t, id, HeartbeatEvent)
}

// waitOr waits for release, or for the job to be cancelled (a failed test
// closes the registry: the job must not hang it).
func waitOr(ctx context.Context, release <-chan struct{}) error {
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLifecycle(t *testing.T) { onBoth(t, testLifecycle) }

func testLifecycle(t *testing.T) {
	boom := errors.New("tape on fire")
	for _, tc := range []struct {
		name      string
		fn        func(ready chan<- struct{}) Func
		cancel    bool
		state     State
		err       error // errors.Is of Result.Err; nil: Err must be nil
		warnings  int64
		errorText string // in the catalog row's Error
	}{
		{name: "succeeds", state: Succeeded,
			fn: func(chan<- struct{}) Func { return func(context.Context, *Run) error { return nil } }},
		{name: "warns", state: Warnings, warnings: 2,
			fn: func(chan<- struct{}) Func {
				return func(_ context.Context, r *Run) error { r.Warn("skipped %s", "/a"); r.Warn("skipped /b"); return nil }
			}},
		{name: "fails", state: Failed, err: boom, errorText: "tape on fire",
			fn: func(chan<- struct{}) Func { return func(context.Context, *Run) error { return boom } }},
		{name: "warns then fails", state: Failed, err: boom, warnings: 1, errorText: "tape on fire",
			fn: func(chan<- struct{}) Func {
				return func(_ context.Context, r *Run) error { r.Warn("odd"); return boom }
			}},
		{name: "panics", state: Failed, err: ErrPanicked, errorText: "index out of range",
			fn: func(chan<- struct{}) Func {
				return func(context.Context, *Run) error { var a []int; _ = a[3]; return nil }
			}},
		{name: "canceled", cancel: true, state: Canceled, err: ErrCanceled, errorText: "job canceled",
			fn: func(ready chan<- struct{}) Func {
				return func(ctx context.Context, _ *Run) error { close(ready); <-ctx.Done(); return ctx.Err() }
			}},
		{name: "canceled but done anyway", cancel: true, state: Succeeded,
			fn: func(ready chan<- struct{}) Func {
				return func(ctx context.Context, _ *Run) error { close(ready); <-ctx.Done(); return nil }
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProc(t, catalogPath(t), "a")
			ready := make(chan struct{})
			h, err := p.reg.Start(context.Background(), Spec{Kind: Verify, Client: "db1"}, tc.fn(ready))
			must(t, err)
			if tc.cancel {
				<-ready
				must(t, p.reg.Cancel(h.ID()))
			}
			res := h.Wait()
			if res.State != tc.state || res.ID != h.ID() || res.Figures.Status != string(tc.state) {
				t.Errorf("result %s (figures %s), want %s", res.State, res.Figures.Status, tc.state)
			}
			if tc.err == nil && res.Err != nil || tc.err != nil && !errors.Is(res.Err, tc.err) {
				t.Errorf("result error %v, want %v", res.Err, tc.err)
			}
			row, err := p.cat.Job(h.ID())
			must(t, err)
			if row.State != string(tc.state) || row.Kind != "verify" || row.Client != "db1" ||
				!row.Started.Equal(t0) || !row.Finished.Equal(t0) || row.WarningCount != tc.warnings {
				t.Errorf("catalog row %+v", row)
			}
			if !strings.Contains(row.Error, tc.errorText) || (tc.errorText == "") != (row.Error == "") {
				t.Errorf("catalog error %q, want it to hold %q", row.Error, tc.errorText)
			}
			if _, err := p.cat.JobLease(h.ID()); !errors.Is(err, catalog.ErrNotFound) {
				t.Errorf("lease after the end: %v", err)
			}
			if ev := p.ev.next(t, h.ID(), monitor.JobEnded); ev.Message != string(tc.state) || ev.Figures == nil {
				t.Errorf("job_ended event %+v", ev)
			}
			if err := p.reg.Cancel(h.ID()); !errors.Is(err, ErrNotRunning) {
				t.Errorf("Cancel after the end: %v", err)
			}
		})
	}
}

func TestPhasesFiguresAndLog(t *testing.T) {
	p := newProc(t, catalogPath(t), "a")
	h, err := p.reg.Start(context.Background(), Spec{Kind: Backup, Client: "db1", Level: "full"},
		func(_ context.Context, r *Run) error {
			r.SetSaveset(12)
			r.StartPhase("backup")
			r.AddTape("KUR001")
			r.Add(3, 3<<20, 1<<20)
			p.clock.Advance(2 * time.Second)
			r.AddTape("KUR002")
			r.AddTape("KUR001")
			ph := r.StartPhase("verify") // ends backup
			ph.Source.Add(3 << 20)       // counts in the phase only
			p.clock.Advance(time.Second)
			r.Logf("verified %d files", 3)
			return nil
		})
	must(t, err)
	res := h.Wait()
	f := res.Figures
	if res.State != Succeeded || f.Files != 3 || f.SourceBytes != 3<<20 || f.MediaBytes != 1<<20 ||
		f.SavesetID != 12 || f.Level != "full" || f.Kind != "backup" || f.CompressionRatio != "3.00:1" ||
		strings.Join(f.Tapes, ",") != "KUR001,KUR002" || f.ElapsedSeconds != 3 {
		t.Errorf("figures %+v", f)
	}
	if len(f.Phases) != 2 || f.Phases[0].Name != "backup" || f.Phases[0].SourceBytes != 3<<20 ||
		f.Phases[0].ElapsedSeconds != 2 || f.Phases[1].Name != "verify" || f.Phases[1].SourceBytes != 3<<20 ||
		f.Phases[1].Files != 0 {
		t.Errorf("phase figures %+v", f.Phases)
	}
	row, err := p.cat.Job(h.ID())
	must(t, err)
	if row.Files != 3 || row.SourceBytes != 3<<20 || row.SavesetID != 12 || len(row.Phases) != 2 ||
		!row.Phases[1].Start.Equal(t0.Add(2*time.Second)) || !row.Phases[1].End.Equal(t0.Add(3*time.Second)) ||
		row.Phases[0].Bytes != 3<<20 || len(row.Tapes) != 2 {
		t.Errorf("catalog row %+v", row)
	}
	if len(row.Log) != 1 || row.Log[0] != "2026-12-01T21:00:03Z verified 3 files" {
		t.Errorf("log %q", row.Log)
	}
	var kinds []string
	for len(p.ev) > 0 {
		ev := <-p.ev
		kinds = append(kinds, string(ev.Kind)+":"+ev.Phase)
	}
	want := "job_started:,phase_started:backup,phase_ended:backup,phase_started:verify,log:," +
		"phase_ended:verify,job_ended:"
	if strings.Join(kinds, ",") != want {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(kinds, ","), want)
	}
}

func TestLogAndWarningsBounded(t *testing.T) {
	p := newProc(t, catalogPath(t), "a")
	h, err := p.reg.Start(context.Background(), Spec{Kind: Prune}, func(_ context.Context, r *Run) error {
		for i := range catalog.MaxLogLines + 5 {
			r.Logf("line %d", i)
		}
		for i := range catalog.MaxWarnings + 3 {
			r.Warn("w%d", i)
		}
		return nil
	})
	must(t, err)
	res := h.Wait()
	row, err := p.cat.Job(h.ID())
	must(t, err)
	if res.State != Warnings || len(row.Log) != catalog.MaxLogLines || !strings.HasSuffix(row.Log[0], "line 5") ||
		len(row.Warnings) != catalog.MaxWarnings || row.Warnings[0] != "w0" ||
		row.WarningCount != catalog.MaxWarnings+3 || res.Figures.Warnings != catalog.MaxWarnings+3 {
		t.Errorf("%s: %d log lines (first %q), %d warnings of %d", res.State, len(row.Log), row.Log[0],
			len(row.Warnings), row.WarningCount)
	}
}

// The heartbeat renews the lease and saves the figures so far, which any
// process reading the catalog sees.
func TestHeartbeatRenewsAndSaves(t *testing.T) { onBoth(t, testHeartbeatRenewsAndSaves) }

func testHeartbeatRenewsAndSaves(t *testing.T) {
	path := catalogPath(t)
	a, b := newProc(t, path, "a"), newProc(t, path, "b")
	added, release := make(chan struct{}), make(chan struct{})
	h, err := a.reg.Start(context.Background(), Spec{Kind: Copy}, func(ctx context.Context, r *Run) error {
		r.StartPhase("copy")
		r.Add(5, 500, 400)
		close(added)
		return waitOr(ctx, release)
	})
	must(t, err)
	<-added
	if in := a.reg.Running(); len(in) != 1 || in[0].ID != h.ID() || in[0].Phase != "copy" || in[0].State != Running ||
		in[0].Holder != "a" || in[0].Figures.Files != 5 {
		t.Errorf("Running() = %+v", in)
	}

	a.clock.Advance(10 * time.Second)
	a.beat(t, h.ID())
	l, err := b.cat.JobLease(h.ID())
	must(t, err)
	if l.Holder != "a" || !l.Expires.Equal(t0.Add(40*time.Second)) || !l.Heartbeat.Equal(t0.Add(10*time.Second)) {
		t.Errorf("lease after a heartbeat: %+v", l)
	}
	row, err := b.cat.Job(h.ID())
	must(t, err)
	if row.State != "running" || row.Files != 5 || row.SourceBytes != 500 || len(row.Phases) != 1 {
		t.Errorf("row seen by another process: %s, %d files, %d bytes, phases %+v", row.State, row.Files,
			row.SourceBytes, row.Phases)
	}
	// b sees it running; at the old expiry it is not reclaimable.
	b.clock.Advance(39 * time.Second)
	if live, _ := b.cat.LiveJobLeases(b.clock.Now()); len(live) != 1 || live[0].Holder != "a" {
		t.Errorf("b's view of live leases: %+v", live)
	}
	if ids, err := b.reg.Reclaim(); err != nil || len(ids) != 0 {
		t.Errorf("b reclaimed %v, %v while a renews", ids, err)
	}
	close(release)
	if res := h.Wait(); res.State != Succeeded {
		t.Errorf("job ended %s: %v", res.State, res.Err)
	}
}

// Two processes on one catalog: a takes a queued job, b cannot; a hangs
// (or is killed) and stops renewing; b reclaims the job once the lease has
// expired, and the job is never run again. When a wakes up it learns it
// lost the job, and does not overwrite b's record.
func TestLeaseExpiryTwoProcesses(t *testing.T) { onBoth(t, testLeaseExpiryTwoProcesses) }

func testLeaseExpiryTwoProcesses(t *testing.T) {
	path := catalogPath(t)
	a, b := newProc(t, path, "a"), newProc(t, path, "b")
	q := &catalog.Job{Kind: catalog.KindBackup, State: catalog.StateQueued, Client: "db1"}
	must(t, a.cat.CreateJob(q))

	started := make(chan struct{})
	var cause error
	h, err := a.reg.StartQueued(context.Background(), q.ID, func(ctx context.Context, r *Run) error {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	must(t, err)
	<-started
	if _, err := b.reg.StartQueued(context.Background(), q.ID, nil); !errors.Is(err, catalog.ErrLeaseHeld) {
		t.Fatalf("b takes a's job: %v, want ErrLeaseHeld", err)
	}

	// a misses its heartbeats. Just before the expiry b reclaims nothing.
	b.clock.Advance(a.reg.Options().LeaseTTL - time.Nanosecond)
	if ids, err := b.reg.Reclaim(); err != nil || len(ids) != 0 {
		t.Fatalf("reclaim before expiry: %v, %v", ids, err)
	}
	b.clock.Advance(time.Nanosecond)
	ids, err := b.reg.Reclaim()
	if err != nil || len(ids) != 1 || ids[0] != q.ID {
		t.Fatalf("reclaim at expiry: %v, %v; want [%d]", ids, err, q.ID)
	}
	if ev := b.ev.next(t, q.ID, monitor.JobEnded); ev.Message != "interrupted" {
		t.Errorf("b's job_ended event: %+v", ev)
	}
	if _, err := b.reg.StartQueued(context.Background(), q.ID, nil); !errors.Is(err, catalog.ErrNotQueued) {
		t.Errorf("b starts the reclaimed job: %v, want ErrNotQueued", err)
	}

	// a wakes up: its next heartbeat finds the lease gone and stops the job.
	a.clock.Advance(time.Minute)
	a.ticker.c <- a.clock.Now()
	res := h.Wait()
	if res.State != Interrupted || !errors.Is(res.Err, ErrLeaseLost) || !errors.Is(cause, ErrLeaseLost) {
		t.Errorf("a's result %s, %v (cause %v); want interrupted, lease lost", res.State, res.Err, cause)
	}
	row, err := b.cat.Job(q.ID)
	must(t, err)
	if row.State != "interrupted" || !strings.HasPrefix(row.Error, catalog.ReasonLeaseExpired) ||
		!strings.Contains(row.Error, "holder a ") {
		t.Errorf("row after a woke up: %s %q", row.State, row.Error)
	}
}

func TestDrivesExclusiveBetweenProcesses(t *testing.T) {
	onBoth(t, testDrivesExclusiveBetweenProcesses)
}

func testDrivesExclusiveBetweenProcesses(t *testing.T) {
	path := catalogPath(t)
	a, b := newProc(t, path, "a"), newProc(t, path, "b")
	took, release := make(chan struct{}), make(chan struct{})
	ha, err := a.reg.Start(context.Background(), Spec{Kind: Backup}, func(ctx context.Context, r *Run) error {
		if err := r.TakeDrive("vtl", 1); err != nil {
			return err
		}
		close(took)
		return waitOr(ctx, release)
	})
	must(t, err)
	<-took
	if in := a.reg.Running(); len(in) != 1 || strings.Join(in[0].Drives, ",") != "vtl/1" {
		t.Errorf("a's running jobs: %+v", in)
	}

	try := func() error {
		h, err := b.reg.Start(context.Background(), Spec{Kind: TapeErase}, func(_ context.Context, r *Run) error {
			return r.TakeDrive("vtl", 1)
		})
		must(t, err)
		return h.Wait().Err
	}
	if err := try(); !errors.Is(err, catalog.ErrLeaseHeld) {
		t.Fatalf("b takes a's drive: %v, want ErrLeaseHeld", err)
	}
	// a's heartbeat keeps the drive past its first expiry.
	a.clock.Advance(20 * time.Second)
	a.beat(t, ha.ID())
	b.clock.Advance(35 * time.Second)
	if err := try(); !errors.Is(err, catalog.ErrLeaseHeld) {
		t.Fatalf("b takes a's renewed drive: %v, want ErrLeaseHeld", err)
	}
	// The job's end frees the drive.
	close(release)
	if res := ha.Wait(); res.State != Succeeded {
		t.Fatalf("a's job: %s %v", res.State, res.Err)
	}
	if err := try(); err != nil {
		t.Errorf("b takes the drive a's finished job held: %v", err)
	}
}

func TestCloseCancelsAndRefuses(t *testing.T) {
	p := newProc(t, catalogPath(t), "a")
	ready := make(chan struct{})
	h, err := p.reg.Start(context.Background(), Spec{Kind: TapeScan}, func(ctx context.Context, _ *Run) error {
		close(ready)
		<-ctx.Done()
		return ctx.Err()
	})
	must(t, err)
	<-ready
	p.reg.Close()
	select {
	case <-h.Done():
	default:
		t.Fatal("Close returned before the job recorded its end")
	}
	if res := h.Wait(); res.State != Canceled || !errors.Is(res.Err, ErrClosed) || !errors.Is(res.Err, ErrCanceled) {
		t.Errorf("result %s %v", res.State, res.Err)
	}
	if _, err := p.reg.Start(context.Background(), Spec{Kind: Backup}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}

func TestInvalidArguments(t *testing.T) {
	cat, err := catalog.Open(catalogPath(t))
	must(t, err)
	defer cat.Close()
	if _, err := NewRegistry(cat, Options{Heartbeat: time.Minute, LeaseTTL: time.Minute}); !errors.Is(err, ErrInvalid) {
		t.Errorf("lease as long as the heartbeat: %v", err)
	}
	reg, err := NewRegistry(cat, Options{})
	must(t, err)
	defer reg.Close()
	o := reg.Options()
	if o.Heartbeat != DefaultHeartbeat || o.LeaseTTL != 3*DefaultHeartbeat || o.Holder == "" ||
		!strings.Contains(o.String(), "lease=30s") {
		t.Errorf("defaults: %v", o)
	}
	if _, err := reg.Start(context.Background(), Spec{Kind: "dance"}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad kind: %v", err)
	}
	if _, err := reg.StartQueued(context.Background(), 99, nil); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("no such queued job: %v", err)
	}
	for _, k := range Kinds {
		if !k.Valid() {
			t.Errorf("kind %s not valid", k)
		}
	}
}

// A job gives a drive back before it ends; another job takes it at once.
func TestReleaseDrive(t *testing.T) {
	p := newProc(t, catalogPath(t), "a")
	released, release := make(chan struct{}), make(chan struct{})
	h, err := p.reg.Start(context.Background(), Spec{Kind: Restore}, func(ctx context.Context, r *Run) error {
		if err := r.TakeDrive("vtl", 2); err != nil {
			return err // t.Fatal belongs to the test's goroutine
		}
		if err := r.ReleaseDrive("vtl", 2); err != nil {
			return err
		}
		if err := r.ReleaseDrive("vtl", 2); !errors.Is(err, catalog.ErrLeaseLost) {
			t.Errorf("second release: %v", err)
		}
		if d := r.Info().Drives; len(d) != 0 {
			t.Errorf("drives after release: %v", d)
		}
		close(released)
		return waitOr(ctx, release)
	})
	must(t, err)
	select {
	case <-released:
	case <-h.Done():
		t.Fatalf("first job: %v", h.Wait().Err)
	}
	h2, err := p.reg.Start(context.Background(), Spec{Kind: Verify}, func(_ context.Context, r *Run) error {
		return r.TakeDrive("vtl", 2)
	})
	must(t, err)
	if res := h2.Wait(); res.State != Succeeded {
		t.Errorf("second job: %s %v", res.State, res.Err)
	}
	close(release)
	h.Wait()
}
