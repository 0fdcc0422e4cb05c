package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
)

// childHoldEnv makes a child server (startChildServer) hold the first job
// event that matches its value (see holdPoint) for ever, after printing
// "held JOB" on stdout: a job caught mid-run, for the test to kill.
const childHoldEnv = "KURA_TEST_CHILD_HOLD"

// holdPoint matches an event "kind:phase": phase_started:verify, or
// progress:copy (the first progress of a copy comes after its first frame
// is on the copy's tape).
func holdPoint(at string, ev monitor.Event) bool {
	kind, phase, _ := strings.Cut(at, ":")
	return string(ev.Kind) == kind && ev.Phase == phase
}

func holdForever(at string) monitor.Sink {
	var once sync.Once
	return monitor.SinkFunc(func(ev monitor.Event) {
		if holdPoint(at, ev) {
			once.Do(func() { fmt.Printf("held %d\n", ev.JobID) })
			select {} // until the test kills the process
		}
	})
}

// holder holds a job at an event until released: the job is running, in
// the middle of its work, for as long as the test wants.
type holder struct {
	mu      sync.Mutex
	at      string
	reached chan int64
	release chan struct{}
}

func (h *holder) Event(ev monitor.Event) {
	h.mu.Lock()
	at, reached, release := h.at, h.reached, h.release
	if at != "" && holdPoint(at, ev) {
		h.at = "" // once
	} else {
		at = ""
	}
	h.mu.Unlock()
	if at != "" {
		reached <- ev.JobID
		<-release
	}
}

// arm makes the next event matching at hold its job; it returns a function
// that waits until a job is held there.
func (h *holder) arm(t *testing.T, at string) (held func() int64, release func()) {
	h.mu.Lock()
	h.at, h.reached, h.release = at, make(chan int64, 1), make(chan struct{})
	reached, rel := h.reached, h.release
	h.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release)
	return func() int64 {
		t.Helper()
		select {
		case id := <-reached:
			return id
		case <-time.After(30 * time.Second):
			t.Fatalf("no job reached %s", at)
			return 0
		}
	}, release
}

// fixture is a home prepared with the engine: an ad-hoc saveset of many
// frames on the default library, two fulls of a policy that keeps one
// generation (so a prune expires the older), and an empty second library.
type fixture struct {
	home    string
	src     string
	adhoc   *catalog.Saveset
	older   int64 // the policy's saveset a prune expires
	barcode string
}

func prepareHome(t *testing.T) fixture {
	t.Helper()
	f := fixture{home: t.TempDir(), src: t.TempDir()}
	env, err := engine.Open(f.home)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	clock := monitor.NewFakeClock(time.Now().Add(-48 * time.Hour))
	env.Clock = clock
	if _, err := env.CreateLibrary(library.Config{Name: "offsite", Slots: 3, Drives: 1, TapeSize: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := env.Catalog.CreatePolicy(&catalog.Policy{Name: "p", Selection: "home", KeepGenerations: 1, Pool: "p"}); err != nil {
		t.Fatal(err)
	}
	small := t.TempDir()
	makeTree(t, small, 4, 61)
	for i := range 2 {
		res, err := env.Backup(t.Context(), engine.BackupOptions{Paths: []string{small}, Level: engine.LevelFull, Policy: "p", Pool: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			f.older = res.Figures.SavesetID
		}
		clock.Advance(time.Hour)
	}
	randomFiles(t, f.src, 4, 256<<10, 62)
	res, err := env.Backup(t.Context(), engine.BackupOptions{Paths: []string{f.src}, Level: engine.LevelFull, FrameSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if f.adhoc, err = env.Catalog.Saveset(res.Figures.SavesetID); err != nil {
		t.Fatal(err)
	}
	f.barcode = f.adhoc.Parts[0].Barcode
	return f
}

// intact checks, through the server, that nothing the held jobs did lost
// anything: the ad-hoc saveset verifies, has no copy, its tape was not
// erased; the policy's older saveset is not expired; no catalog backup is
// recorded.
func (f fixture) intact(r *rig) {
	r.t.Helper()
	env := r.srv.Env()
	ss, err := env.Catalog.Saveset(f.adhoc.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	if ss.Expired || len(ss.Copies) != 0 {
		r.t.Errorf("saveset %d: expired %v, copies %+v; want untouched", ss.ID, ss.Expired, ss.Copies)
	}
	if old, err := env.Catalog.Saveset(f.older); err != nil || old.Expired {
		r.t.Errorf("the policy's older saveset %d was expired (%v)", f.older, err)
	}
	if last, err := env.LastCatalogBackup(); err != nil || last != nil {
		r.t.Errorf("a catalog backup is recorded: %+v (%v)", last, err)
	}
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: f.adhoc.ID})[0])
	if j.State != catalog.StateSucceeded {
		r.t.Errorf("verify of saveset %d afterwards: %s (%s)", f.adhoc.ID, j.State, j.Error)
	}
}

// serverOnlyJobs are a request of each server-only kind, where the test
// holds it, and what its result must say when it runs to its end.
func serverOnlyJobs(f fixture) []struct {
	req   api.JobRequest
	hold  string
	check func(t *testing.T, j *api.Job)
} {
	result := func(t *testing.T, j *api.Job, v any) {
		t.Helper()
		if err := json.Unmarshal(j.Result, v); err != nil {
			t.Fatalf("%s job %d result %q: %v", j.Kind, j.ID, j.Result, err)
		}
	}
	return []struct {
		req   api.JobRequest
		hold  string
		check func(t *testing.T, j *api.Job)
	}{
		{api.JobRequest{Kind: api.KindVerify, Saveset: f.adhoc.ID, Level: "media"}, "phase_started:verify", func(t *testing.T, j *api.Job) {
			var v engine.VerifyRecord
			if result(t, j, &v); v.Level != "media" || v.Checked == 0 || len(v.Problems) != 0 || j.Figures.SourceBytes == 0 {
				t.Errorf("verify: result %+v, figures %+v", v, j.Figures)
			}
		}},
		{api.JobRequest{Kind: api.KindCopy, Saveset: f.adhoc.ID, Library: "offsite", Verify: true}, "progress:copy", func(t *testing.T, j *api.Job) {
			var c engine.CopyRecord
			if result(t, j, &c); c.Copy != 1 || c.Library != "offsite" || j.Figures.MediaBytes == 0 || len(j.Figures.Phases) != 2 {
				t.Errorf("copy: result %+v, figures %+v", c, j.Figures)
			}
		}},
		{api.JobRequest{Kind: api.KindScan, Barcode: f.barcode}, "phase_started:scan", func(t *testing.T, j *api.Job) {
			var s engine.ScanRecord
			if result(t, j, &s); s.Barcode != f.barcode || len(s.Found) < 2 || j.Figures.Files != int64(len(s.Found)) {
				t.Errorf("scan: result %+v, figures %+v", s, j.Figures)
			}
		}},
		{api.JobRequest{Kind: api.KindCatalog, Library: "offsite"}, "phase_started:catalog", func(t *testing.T, j *api.Job) {
			var c engine.CatalogBackupResult
			if result(t, j, &c); c.Library != "offsite" || c.Barcode == "" || j.Figures.MediaBytes != c.TapeBytes {
				t.Errorf("catalog backup: result %+v, figures %+v", c, j.Figures)
			}
		}},
		{api.JobRequest{Kind: api.KindPrune}, "phase_started:prune", func(t *testing.T, j *api.Job) {
			var p engine.PruneResult
			if result(t, j, &p); len(p.Expired) != 1 || p.Expired[0] != f.older || j.Figures.Files != 1 {
				t.Errorf("prune: result %+v, figures %+v", p, j.Figures)
			}
		}},
		{api.JobRequest{Kind: api.KindErase, Barcode: f.barcode, Force: true}, "phase_started:erase", func(t *testing.T, j *api.Job) {
			var e engine.EraseRecord
			if result(t, j, &e); !e.Erased || len(e.Expired) != 1 || e.Expired[0] != f.adhoc.ID {
				t.Errorf("erase: result %+v", e)
			}
		}},
	}
}

// Each server-only kind runs from the queue as a job: listed with its
// kind, its figures and its result.
func TestServerOnlyJobsRun(t *testing.T) {
	t.Parallel()
	f := prepareHome(t)
	r := startServer(t, f.home, "")
	// A dry run of prune is a query: it says what would expire, and
	// changes nothing.
	raw, err := r.admin.PrunePlan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var plan engine.PruneResult
	if err := json.Unmarshal(raw, &plan); err != nil || !plan.DryRun || len(plan.Expired) != 1 || plan.Expired[0] != f.older {
		t.Errorf("prune plan %s (%v); want saveset %d to expire", raw, err, f.older)
	}
	if old, err := r.srv.Env().Catalog.Saveset(f.older); err != nil || old.Expired {
		t.Errorf("the prune plan expired saveset %d (%v)", f.older, err)
	}
	if jobs, err := r.admin.Jobs(t.Context(), api.JobFilter{Limit: 1}); err != nil || len(jobs) == 0 || jobs[0].Kind == api.KindPrune {
		t.Errorf("the prune plan recorded a job: %+v (%v)", jobs, err)
	}
	for _, c := range serverOnlyJobs(f) {
		j := r.wait(r.submit(c.req)[0])
		if j.State != catalog.StateSucceeded || j.Kind != c.req.Kind || j.Figures.Kind != c.req.Kind || len(j.Phases) == 0 {
			t.Fatalf("%s job %d: kind %q (%q), state %s (%s), %d phases", c.req.Kind, j.ID, j.Kind, j.Figures.Kind, j.State, j.Error, len(j.Phases))
		}
		c.check(t, j)
		jobs, err := r.admin.Jobs(t.Context(), api.JobFilter{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 || jobs[0].ID != j.ID || jobs[0].Kind != c.req.Kind || jobs[0].State != catalog.StateSucceeded {
			t.Errorf("the jobs list does not start with %s job %d: %+v", c.req.Kind, j.ID, jobs)
		}
	}
	if ss, err := r.srv.Env().Catalog.Saveset(f.adhoc.ID); err != nil || !ss.Expired {
		t.Errorf("saveset %d after its tape was erased with force: %+v (%v)", f.adhoc.ID, ss, err)
	}
}

// A server-only job cancelled in the middle of its work ends canceled and
// loses nothing: no copy is recorded (its partial tape file stays
// incomplete), nothing is erased or expired, no catalog backup recorded.
func TestServerOnlyJobsCancelMidRun(t *testing.T) {
	t.Parallel()
	f := prepareHome(t)
	h := &holder{}
	opts := fastOpts
	opts.Events = h
	r := startServerWith(t, f.home, "", opts)
	for _, c := range serverOnlyJobs(f) {
		held, release := h.arm(t, c.hold)
		id := r.submit(c.req)[0]
		if got := held(); got != id {
			t.Fatalf("job %d held; want %d", got, id)
		}
		if j, err := r.admin.Job(t.Context(), id); err != nil || j.State != catalog.StateRunning {
			t.Fatalf("%s job %d held mid-run: %+v (%v); want running", c.req.Kind, id, j, err)
		}
		if _, err := r.admin.Cancel(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		release()
		if j := r.wait(id); j.State != catalog.StateCanceled {
			t.Errorf("%s job %d cancelled mid-run: %s (%s); want canceled", c.req.Kind, id, j.State, j.Error)
		}
		if c.req.Kind == api.KindCopy {
			// Its partial tape file is removed (tape.FileWriter.Abort), its
			// result says no copy was made.
			if n := offsiteFiles(t, r); n != 0 {
				t.Errorf("the cancelled copy left %d tape files on offsite", n)
			}
			var rec engine.CopyRecord
			if j, err := r.admin.Job(t.Context(), id); err != nil || json.Unmarshal(j.Result, &rec) != nil || rec.Copy != 0 {
				t.Errorf("the cancelled copy's result: %+v (%v)", rec, err)
			}
		}
	}
	f.intact(r)
	// The next copy is whole.
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindCopy, Saveset: f.adhoc.ID, Library: "offsite", Verify: true})[0])
	if j.State != catalog.StateSucceeded {
		t.Errorf("a copy after the cancelled one: %s (%s)", j.State, j.Error)
	}
}

// A server killed in the middle of a server-only job leaves it running in
// the catalog; the next server marks it interrupted, and nothing is lost.
func TestServerKilledMidServerOnlyJob(t *testing.T) {
	t.Parallel()
	f := prepareHome(t)
	var ids []int64
	for _, c := range serverOnlyJobs(f) {
		child, kill := startChildServer(t, f.home, childHoldEnv+"="+c.hold)
		id := child.submit(c.req)[0]
		line, err := child.out.ReadString('\n')
		if got, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "held ")), 10, 64); err != nil || got != id {
			t.Fatalf("%s job %d: the child server said %q (%v)", c.req.Kind, id, line, err)
		}
		kill()
		child.admin.Close()
		ids = append(ids, id)
	}
	r := startServer(t, f.home, "")
	for i, id := range ids {
		j, err := r.admin.Job(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != catalog.StateInterrupted {
			t.Errorf("%s job %d after its server was killed: %s (%s); want interrupted", serverOnlyJobs(f)[i].req.Kind, id, j.State, j.Error)
		}
	}
	f.intact(r)
	// The drives the killed servers held are free again.
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindCopy, Saveset: f.adhoc.ID, Library: "offsite"})[0])
	if j.State != catalog.StateSucceeded {
		t.Errorf("a copy after the restarts: %s (%s)", j.State, j.Error)
	}
	if _, err := os.Stat(filepath.Join(f.home, "catalog.db")); err != nil {
		t.Error(err)
	}
}

// A server-only job that names what does not exist is refused before it
// is queued, naming what is wrong; nothing is queued.
func TestServerOnlyJobsRefusedBeforeQueued(t *testing.T) {
	t.Parallel()
	f := prepareHome(t)
	r := startServer(t, f.home, "")
	for _, c := range []struct {
		req  api.JobRequest
		code string
	}{
		{api.JobRequest{Kind: api.KindVerify, Saveset: 999}, api.CodeNotFound},
		{api.JobRequest{Kind: api.KindVerify, Saveset: f.adhoc.ID, Copy: 3}, api.CodeNotFound},
		{api.JobRequest{Kind: api.KindCopy, Saveset: f.adhoc.ID, Library: "nope"}, api.CodeNotFound},
		{api.JobRequest{Kind: api.KindCopy, Saveset: f.adhoc.ID, Library: "offsite", Drive: 2}, api.CodeBadRequest},
		{api.JobRequest{Kind: api.KindCatalog, Library: "nope"}, api.CodeNotFound},
		{api.JobRequest{Kind: api.KindScan, Barcode: "NOPE01"}, api.CodeNotFound},
		{api.JobRequest{Kind: api.KindErase, Barcode: f.barcode, Drive: 9}, api.CodeBadRequest},
		{api.JobRequest{Kind: api.KindPrune, Client: "c1"}, api.CodeBadRequest},
	} {
		_, err := r.admin.Submit(t.Context(), c.req)
		wantCode(t, fmt.Sprintf("%+v", c.req), err, c.code)
	}
	if jobs, err := r.admin.Jobs(t.Context(), api.JobFilter{Limit: 10}); err != nil || len(jobs) != 3 {
		t.Errorf("jobs after the refusals: %d (%v); want the 3 the home was prepared with", len(jobs), err)
	}
}

// offsiteFiles counts the tape files, complete or not, on the tapes of
// library offsite.
func offsiteFiles(t *testing.T, r *rig) int {
	t.Helper()
	lib, err := r.srv.Env().OpenLibrary("offsite")
	if err != nil {
		t.Fatal(err)
	}
	tapes, err := lib.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ts := range tapes {
		tp, err := lib.OpenTape(ts.Barcode)
		if err != nil {
			t.Fatal(err)
		}
		files, err := tp.Files()
		tp.Close()
		if err != nil {
			t.Fatal(err)
		}
		n += len(files)
	}
	return n
}
