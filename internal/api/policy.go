package api

import (
	"context"
	"time"
)

// PolicyService is the backup policies: /policies.
type PolicyService interface {
	// Policies lists every policy.
	Policies(ctx context.Context) ([]Policy, error)
	// Policy shows one policy.
	Policy(ctx context.Context, name string) (*Policy, error)
	// CreatePolicy checks a policy against the catalog (client, selection,
	// schedules, retention, libraries) and records it.
	CreatePolicy(ctx context.Context, req PolicyCreate) (*Policy, error)
	// EditPolicy changes the fields req sets, checks the result as
	// CreatePolicy does, and records it.
	EditPolicy(ctx context.Context, name string, req PolicyEdit) (*Policy, error)
	// RemovePolicy deletes a policy; its savesets stay.
	RemovePolicy(ctx context.Context, name string) error
	// NextRuns are the next count runs the policy's schedules start, at
	// the service's clock, earliest first; none for a policy without
	// schedules.
	NextRuns(ctx context.Context, name string, count int) ([]PolicySlot, error)
	// PolicyRetention previews retention for the policy's savesets: what
	// it keeps and expires, and why, at the service's clock, with the
	// policy's rules or with those the request sets in their place (a
	// policy being edited). It changes nothing.
	PolicyRetention(ctx context.Context, name string, req RetentionPreview) ([]RetentionDecision, error)
	// RunPolicy queues a run of the policy now at a level (default full;
	// LevelScheduled: the level of its next scheduled run), the same job
	// its scheduler starts; it needs a server's job queue.
	RunPolicy(ctx context.Context, name, level string) ([]int64, error)
}

func init() {
	wireTypes = append(wireTypes, Policy{}, PolicyCreate{}, PolicyEdit{}, PolicySlot{}, RetentionPreview{})
}

// Policy is a backup policy: one client's selection set on schedules,
// with retention and a tape pool.
type Policy struct {
	Name            string     `json:"name"`
	Client          string     `json:"client"` // "" is the local machine
	Selection       string     `json:"selection"`
	FullCron        string     `json:"full_cron"`
	DiffCron        string     `json:"diff_cron"`
	IncrCron        string     `json:"incr_cron"`
	Zone            string     `json:"zone"` // "" = the server's
	KeepGenerations int        `json:"keep_generations"`
	KeepDays        int        `json:"keep_days"`
	Library         string     `json:"library"` // "" = the default library
	Pool            string     `json:"pool"`
	Verify          bool       `json:"verify"`
	BWLimitKBps     float64    `json:"bwlimit_kbps"` // 0 = the client's default
	Compress        string     `json:"compress"`
	CopyTo          string     `json:"copy_to"`
	Encrypt         bool       `json:"encrypt"` // the client's agent encrypts this policy's backups (so does the client's own setting)
	Created         time.Time  `json:"created"`
	LastRun         *time.Time `json:"last_run,omitempty"`  // left out before the first run
	LastSlot        *time.Time `json:"last_slot,omitempty"` // the schedule slot of that run
}

// PolicyCreate makes a policy (POST /policies). Empty fields take their
// defaults: the pool is the policy's name, the library the default one,
// compression auto.
type PolicyCreate struct {
	Name            string `json:"name"`
	Client          string `json:"client,omitempty"` // "" is the local machine (not on a server)
	Selection       string `json:"selection"`
	FullCron        string `json:"full_cron,omitempty"`
	DiffCron        string `json:"diff_cron,omitempty"`
	IncrCron        string `json:"incr_cron,omitempty"`
	Zone            string `json:"zone,omitempty"`
	KeepGenerations int    `json:"keep_generations,omitempty"`
	KeepDays        int    `json:"keep_days,omitempty"`
	Library         string `json:"library,omitempty"`
	Pool            string `json:"pool,omitempty"`
	Verify          bool   `json:"verify,omitempty"`
	BWLimit         int64  `json:"bwlimit,omitempty"` // bytes/s; 0 = the client's default
	Compress        string `json:"compress,omitempty"`
	CopyTo          string `json:"copy_to,omitempty"`
	Encrypt         bool   `json:"encrypt,omitempty"` // the client's agent encrypts this policy's backups
}

// PolicyEdit changes a policy (PATCH /policies/{name}): only the fields
// that are set change; "" clears a text field.
type PolicyEdit struct {
	Selection       *string `json:"selection,omitempty"`
	FullCron        *string `json:"full_cron,omitempty"`
	DiffCron        *string `json:"diff_cron,omitempty"`
	IncrCron        *string `json:"incr_cron,omitempty"`
	Zone            *string `json:"zone,omitempty"`
	KeepGenerations *int    `json:"keep_generations,omitempty"`
	KeepDays        *int    `json:"keep_days,omitempty"`
	Library         *string `json:"library,omitempty"`
	Pool            *string `json:"pool,omitempty"`
	Verify          *bool   `json:"verify,omitempty"`
	BWLimit         *int64  `json:"bwlimit,omitempty"` // bytes/s; 0 = the client's default
	Compress        *string `json:"compress,omitempty"`
	CopyTo          *string `json:"copy_to,omitempty"`
	Encrypt         *bool   `json:"encrypt,omitempty"` // false: the policy no longer asks (the client's own setting still applies)
}

// PolicySlot is one run a policy's schedules start: when, and at which
// level (GET /policies/{name}/next).
type PolicySlot struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"` // full, diff or incr
}

// MaxNextRuns bounds the next runs asked for at once.
const MaxNextRuns = 1000

// Validate checks a policy to create: a name (the catalog checks the
// rest against what it holds).
func (r *PolicyCreate) Validate() error {
	if r.Name == "" {
		return bad("name", "a policy needs a name")
	}
	return nil
}

// ValidNextRuns checks how many next runs are asked for.
func ValidNextRuns(count int) error {
	if count < 1 || count > MaxNextRuns {
		return bad("count", "must be 1 to %d", MaxNextRuns)
	}
	return nil
}

// RetentionPreview asks what retention would decide for a policy's
// savesets (GET /policies/{name}/retention?keep_generations=&keep_days=):
// a rule that is set replaces the policy's for the preview; one that is
// not keeps the policy's.
type RetentionPreview struct {
	KeepGenerations *int `json:"keep_generations,omitempty"`
	KeepDays        *int `json:"keep_days,omitempty"`
}

// Validate checks a preview's rules: not negative.
func (r *RetentionPreview) Validate() error {
	switch {
	case r.KeepGenerations != nil && *r.KeepGenerations < 0:
		return bad("keep_generations", "must not be negative")
	case r.KeepDays != nil && *r.KeepDays < 0:
		return bad("keep_days", "must not be negative")
	}
	return nil
}
