package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/schedule"
)

// The scheduler starts policies on their schedules and prunes once a day.
// It reads time only through the server's clock, so tests drive days of
// schedules with a fake clock and Tick.

// catchUp is how far back a never-run policy's slot may lie and still run:
// a little more than the scheduler's period.
const catchUp = 2 * time.Minute

// Settings the scheduler keeps in the catalog.
const (
	settingLastPrune = "last_prune"
	pruneEvery       = 24 * time.Hour
)

func (s *Server) postPolicyRun(w http.ResponseWriter, r *http.Request) error {
	var req api.PolicyRun
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	p, err := s.env.Catalog.Policy(r.PathValue("name"))
	if err != nil {
		return err
	}
	level := orDefault(req.Level, engine.LevelFull)
	switch level {
	case engine.LevelFull, engine.LevelDiff, engine.LevelIncr:
	default:
		return badField("level", "unknown level %q (full, diff or incr)", req.Level)
	}
	ids, err := s.Submit(policyJob(p, level))
	if err != nil {
		return err
	}
	return writeJSONStatus(w, http.StatusAccepted, api.JobsSubmitted{Jobs: ids})
}

func policyJob(p *catalog.Policy, level string) api.JobRequest {
	return api.JobRequest{Kind: api.KindBackup, Client: p.Client, Selection: p.Selection, Level: level,
		Compress: p.Compress, Library: p.Library, Verify: p.Verify, BWLimit: p.BWLimit, Policy: p.Name, Pool: p.Pool}
}

// Tick runs the scheduler once at the clock's time: every policy that is
// due gets one job (unless a job of it is still queued or running), and
// retention runs when the last prune is a day old. The server calls it
// every few seconds; tests call it with a fake clock.
func (s *Server) Tick(ctx context.Context) {
	now := s.opts.Clock.Now()
	policies, err := s.env.Catalog.Policies()
	if err != nil {
		s.log.Error("scheduler: reading policies", "err", err)
		return
	}
	for _, p := range policies {
		s.schedulePolicy(p, now)
	}
	s.maybePrune(ctx, now)
	s.maybeBackupCatalog(ctx)
}

// maybeBackupCatalog starts the catalog backup the daily prune asked for,
// once a drive of the default library is free: the job leases the drive
// itself (and waits for it if another process took it meanwhile).
func (s *Server) maybeBackupCatalog(ctx context.Context) {
	if !s.catalogDue.Load() || time.Now().UnixNano() < s.catalogRetry.Load() || !s.catalogRunning.CompareAndSwap(false, true) {
		return
	}
	retryLater := func() { s.catalogRetry.Store(time.Now().Add(time.Minute).UnixNano()) }
	lib, n, reason := s.q.reserve(0, api.JobRequest{Kind: api.KindBackup}, false)
	if reason != "" {
		s.catalogRunning.Store(false)
		retryLater()
		s.log.Info("catalog backup waits", "reason", reason)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.catalogRunning.Store(false)
		defer s.q.kick()
		cb, err := s.env.BackupCatalog(ctx, engine.CatalogBackupOptions{Library: lib, Drive: n})
		if err != nil {
			retryLater()
			s.log.Error("catalog backup after the daily prune failed; retrying in a minute", "err", err)
			return
		}
		s.catalogDue.Store(false)
		s.log.Info("catalog backed up", "tape", cb.Barcode, "file", cb.File)
	}()
}

func (s *Server) schedulePolicy(p *catalog.Policy, now time.Time) {
	entries, err := engine.PolicySchedules(p)
	if err != nil {
		s.log.Error("scheduler: bad schedule", "policy", p.Name, "err", err)
		return
	}
	if len(entries) == 0 {
		return
	}
	last := p.LastSlot
	if last.IsZero() {
		last = p.LastRun
	}
	level, slot, due := scheduleDue(entries, last, now)
	if !due {
		return
	}
	if s.policyBusy(p.Name) {
		// Not started twice: the slot is taken by the run still going.
		if ok, _ := s.env.Catalog.PolicyRan(p.Name, now, slot); ok {
			s.log.Warn("scheduler: a run of the policy is still going; this slot is skipped", "policy", p.Name, "slot", slot)
		}
		return
	}
	ok, err := s.env.Catalog.PolicyRan(p.Name, now, slot)
	if err != nil || !ok {
		return // another scheduler took the slot
	}
	ids, err := s.Submit(policyJob(p, level))
	if err != nil {
		s.log.Error("scheduler: starting a policy", "policy", p.Name, "err", err)
		return
	}
	s.log.Info("scheduler: policy started", "policy", p.Name, "level", level, "slot", slot, "jobs", ids)
}

// policyBusy reports whether a job of the policy is queued or running.
func (s *Server) policyBusy(name string) bool {
	jobs, err := s.env.Catalog.QueuedJobs()
	if err == nil {
		for _, j := range jobs {
			if requestPolicy(j) == name {
				return true
			}
		}
	}
	s.mu.Lock()
	var ids []int64
	for _, rj := range s.running {
		if rj.req.Policy == name {
			ids = append(ids, rj.id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		// A job that has recorded its end is done, even while its
		// goroutine still tidies up.
		if j, err := s.env.Catalog.Job(id); err != nil || !jobDone(j.State) {
			return true
		}
	}
	return false
}

// maybePrune applies retention once a day, then backs up the catalog.
func (s *Server) maybePrune(ctx context.Context, now time.Time) {
	last, _ := s.env.Catalog.Setting(settingLastPrune)
	if t, err := time.Parse(time.RFC3339Nano, last); err == nil && now.Sub(t) < pruneEvery {
		return
	}
	if err := s.env.Catalog.SetSetting(settingLastPrune, now.UTC().Format(time.RFC3339Nano)); err != nil {
		return
	}
	res, err := s.env.Prune(ctx, engine.PruneOptions{Now: now})
	if err != nil {
		s.log.Error("daily prune", "err", err)
		return
	}
	s.log.Info("daily prune", "expired", res.Expired, "recycled", res.Recycled, "notes", res.Notes)
	if s.opts.AfterPrune != nil {
		s.opts.AfterPrune(ctx)
		return
	}
	// Then the catalog protects itself: a consistent snapshot to tape, on
	// a drive the queue reserves for it (now, or at a later tick when
	// every drive is busy).
	s.catalogDue.Store(true)
}

func scheduleDue(entries []schedule.Entry, last, now time.Time) (string, time.Time, bool) {
	return schedule.DueLevel(entries, last, now, catchUp)
}

// requestPolicy is the policy a queued job runs for.
func requestPolicy(j *catalog.Job) string {
	var req api.JobRequest
	if json.Unmarshal(j.Request, &req) != nil {
		return ""
	}
	return req.Policy
}

// runScheduler ticks until ctx ends.
func (s *Server) runScheduler(ctx context.Context) {
	t := time.NewTicker(s.opts.SchedulerEvery)
	defer t.Stop()
	for {
		s.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
