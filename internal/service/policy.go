package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/retention"
	"github.com/kura-backup/kura/internal/units"
)

// ErrNoQueue: the action queues a job, and this service has no job queue
// (a home without a server runs the job in process instead).
var ErrNoQueue = errors.New("no job queue here: a server runs queued jobs")

// Policy converts a policy record.
func Policy(p *catalog.Policy) api.Policy {
	return api.Policy{Name: p.Name, Client: p.Client, Selection: p.Selection, FullCron: p.FullCron, DiffCron: p.DiffCron,
		IncrCron: p.IncrCron, Zone: p.Zone, KeepGenerations: p.KeepGenerations, KeepDays: p.KeepDays, Library: p.Library,
		Pool: p.Pool, Verify: p.Verify, BWLimitKBps: units.KBps(float64(p.BWLimit)), Compress: p.Compress, CopyTo: p.CopyTo,
		Encrypt: p.Encrypt, Created: p.Created, LastRun: timeOrNil(p.LastRun), LastSlot: timeOrNil(p.LastSlot)}
}

// PolicyJob is the job a run of policy p at level submits.
func PolicyJob(p *catalog.Policy, level string) api.JobRequest {
	return api.JobRequest{Kind: api.KindBackup, Client: p.Client, Selection: p.Selection, Level: level,
		Compress: p.Compress, Library: p.Library, Verify: p.Verify, BWLimit: p.BWLimit, Policy: p.Name, Pool: p.Pool}
}

// policy reads a policy record; a name that names none is not_found.
func (l *Local) policy(name string) (*catalog.Policy, error) {
	p, err := l.env.Catalog.Policy(name)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, engine.Missing("policy", "no policy named %q", name)
	}
	return p, err
}

// checkPolicy checks a policy against the catalog: whatever it finds wrong
// is bad input, and a name that names nothing stays not_found.
func (l *Local) checkPolicy(p *catalog.Policy) error {
	err := l.env.CheckPolicy(p, false)
	if err == nil || errors.Is(err, engine.ErrNotFound) {
		return Err(err)
	}
	return api.Wrap(api.CodeBadRequest, "", err)
}

func (l *Local) Policies(ctx context.Context) ([]api.Policy, error) {
	ps, err := l.env.Catalog.Policies()
	if err != nil {
		return nil, Err(err)
	}
	out := make([]api.Policy, 0, len(ps))
	for _, p := range ps {
		out = append(out, Policy(p))
	}
	return out, nil
}

func (l *Local) Policy(ctx context.Context, name string) (*api.Policy, error) {
	p, err := l.policy(name)
	if err != nil {
		return nil, Err(err)
	}
	out := Policy(p)
	return &out, nil
}

func (l *Local) CreatePolicy(ctx context.Context, req api.PolicyCreate) (*api.Policy, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	p := &catalog.Policy{Name: req.Name, Client: req.Client, Selection: req.Selection, FullCron: req.FullCron,
		DiffCron: req.DiffCron, IncrCron: req.IncrCron, Zone: req.Zone, KeepGenerations: req.KeepGenerations,
		KeepDays: req.KeepDays, Library: req.Library, Pool: req.Pool, Verify: req.Verify, BWLimit: req.BWLimit,
		Compress: req.Compress, CopyTo: req.CopyTo, Encrypt: req.Encrypt}
	if p.Pool == "" {
		p.Pool = p.Name
	}
	if err := l.checkPolicy(p); err != nil {
		return nil, err
	}
	if err := l.env.Catalog.CreatePolicy(p); err != nil {
		if errors.Is(err, catalog.ErrExists) {
			return nil, api.Wrap(api.CodeConflict, "name", fmt.Errorf("policy %q exists already: %w", p.Name, err))
		}
		return nil, Err(err)
	}
	out := Policy(p)
	return &out, nil
}

func (l *Local) EditPolicy(ctx context.Context, name string, req api.PolicyEdit) (*api.Policy, error) {
	p, err := l.policy(name)
	if err != nil {
		return nil, Err(err)
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Selection, req.Selection)
	set(&p.FullCron, req.FullCron)
	set(&p.DiffCron, req.DiffCron)
	set(&p.IncrCron, req.IncrCron)
	set(&p.Zone, req.Zone)
	set(&p.Library, req.Library)
	set(&p.Pool, req.Pool)
	set(&p.Compress, req.Compress)
	set(&p.CopyTo, req.CopyTo)
	if req.KeepGenerations != nil {
		p.KeepGenerations = *req.KeepGenerations
	}
	if req.KeepDays != nil {
		p.KeepDays = *req.KeepDays
	}
	if req.Verify != nil {
		p.Verify = *req.Verify
	}
	if req.Encrypt != nil {
		p.Encrypt = *req.Encrypt
	}
	if req.BWLimit != nil {
		p.BWLimit = *req.BWLimit
	}
	if err := l.checkPolicy(p); err != nil {
		return nil, err
	}
	if err := l.env.Catalog.UpdatePolicy(p); err != nil {
		return nil, Err(err)
	}
	out := Policy(p)
	return &out, nil
}

func (l *Local) RemovePolicy(ctx context.Context, name string) error {
	err := l.env.Catalog.DeletePolicy(name)
	if errors.Is(err, catalog.ErrNotFound) {
		err = engine.Missing("policy", "no policy named %q", name)
	}
	return Err(err)
}

func (l *Local) NextRuns(ctx context.Context, name string, count int) ([]api.PolicySlot, error) {
	if err := api.ValidNextRuns(count); err != nil {
		return nil, Err(err)
	}
	p, err := l.policy(name)
	if err != nil {
		return nil, Err(err)
	}
	out := []api.PolicySlot{}
	for t := l.now(); len(out) < count; {
		next, level := engine.NextRun(p, t)
		if next.IsZero() {
			break
		}
		out = append(out, api.PolicySlot{Time: next, Level: level})
		t = next
	}
	return out, nil
}

func (l *Local) PolicyRetention(ctx context.Context, name string, req api.RetentionPreview) ([]api.RetentionDecision, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	p, err := l.policy(name)
	if err != nil {
		return nil, Err(err)
	}
	rules := retention.Rules{KeepGenerations: p.KeepGenerations, KeepDays: p.KeepDays}
	if req.KeepGenerations != nil {
		rules.KeepGenerations = *req.KeepGenerations
	}
	if req.KeepDays != nil {
		rules.KeepDays = *req.KeepDays
	}
	ds, err := l.env.RetentionPreview(p.Name, rules, l.now())
	if err != nil {
		return nil, Err(err)
	}
	out := []api.RetentionDecision{}
	for _, d := range ds {
		out = append(out, Decision(d))
	}
	return out, nil
}

func (l *Local) RunPolicy(ctx context.Context, name, level string) ([]int64, error) {
	run := api.PolicyRun{Level: level}
	if err := run.Validate(); err != nil {
		return nil, Err(err)
	}
	p, err := l.policy(name)
	if err != nil {
		return nil, Err(err)
	}
	if l.submit == nil {
		return nil, api.Wrap(api.CodeConflict, "", ErrNoQueue)
	}
	switch level {
	case "":
		level = engine.LevelFull
	case api.LevelScheduled:
		// The level its next run has; a policy without schedules: full.
		_, level = engine.NextRun(p, l.now())
		level = cmp.Or(level, engine.LevelFull)
	}
	ids, err := l.submit(PolicyJob(p, level))
	return ids, Err(err)
}

// WithQueue makes RunPolicy queue its jobs with submit (the server's job
// queue).
func (l *Local) WithQueue(submit func(api.JobRequest) ([]int64, error)) *Local {
	l.submit = submit
	return l
}

// WithClock makes the service read time from now (the server's clock).
func (l *Local) WithClock(now func() time.Time) *Local {
	l.now = now
	return l
}
