package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/schedule"
	"github.com/kura-backup/kura/internal/service"
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
	s.maybePrune(now)
	s.maybeBackupCatalog()
}

// maybeBackupCatalog queues the catalog backup the daily prune asked for:
// a catalog job, which takes a drive and a tape of the default library
// through the queue like any job (and waits there while they are busy),
// and can be followed and cancelled. One waiting in the queue already is
// enough.
func (s *Server) maybeBackupCatalog() {
	if !s.catalogDue.Load() {
		return
	}
	queued, err := s.env.Catalog.QueuedJobs()
	if err != nil {
		s.log.Error("catalog backup: reading the queue", "err", err)
		return
	}
	for _, j := range queued {
		if j.Kind == catalog.KindCatalog {
			s.catalogDue.Store(false)
			return
		}
	}
	ids, err := s.Submit(api.JobRequest{Kind: api.KindCatalog})
	if err != nil {
		s.log.Error("catalog backup after the daily prune not queued", "err", err)
		return
	}
	s.catalogDue.Store(false)
	s.log.Info("catalog backup queued", "job", ids[0])
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
	ids, err := s.Submit(service.PolicyJob(p, level))
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

// maybePrune queues a prune once a day (a prune job, which the queue runs
// at once: it takes no drive), then the catalog's own backup.
func (s *Server) maybePrune(now time.Time) {
	last, _ := s.env.Catalog.Setting(settingLastPrune)
	if t, err := time.Parse(time.RFC3339Nano, last); err == nil && now.Sub(t) < pruneEvery {
		return
	}
	if err := s.env.Catalog.SetSetting(settingLastPrune, now.UTC().Format(time.RFC3339Nano)); err != nil {
		return
	}
	ids, err := s.Submit(api.JobRequest{Kind: api.KindPrune})
	if err != nil {
		s.log.Error("daily prune not queued", "err", err)
		return
	}
	s.log.Info("daily prune queued", "job", ids[0])
	// Then the catalog protects itself: a consistent snapshot to tape, a
	// job of the queue.
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
