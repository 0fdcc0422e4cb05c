package api

import (
	"context"
	"slices"
	"strings"
)

// JobService is the job monitor's records: GET /jobs and GET /jobs/{id}.
// It lists every kind of job the catalog holds (backup, restore, verify,
// copy, prune, …), kinds added later included.
type JobService interface {
	// Jobs lists the jobs that match f, newest first.
	Jobs(ctx context.Context, f JobFilter) ([]Job, error)
	// Job shows one job with its phases, warnings and log tail.
	Job(ctx context.Context, id int64) (*Job, error)
}

// JobFilter selects jobs (the query of GET /jobs). Empty fields select
// every job; Limit counts the jobs that match, so "the last 5 failed
// backups" is 5 jobs however many others ran since.
type JobFilter struct {
	Limit  int    // at most this many, newest first; 0: DefaultJobLimit
	Kind   string // backup, restore, verify, copy, …
	State  string // one of JobStates
	Client string // whose jobs ("" with the others: every client's and this machine's)
}

// Limits of a job listing.
const (
	DefaultJobLimit = 50
	MaxJobLimit     = 10000
)

// JobStates are the states a job can be in: queued and waiting jobs have
// not started, running ones are in progress, the others are final.
var JobStates = []string{"queued", "waiting", "running", "succeeded", "warnings", "failed", "canceled", "interrupted"}

// Validate checks a job filter. A kind is any word (the server lists
// kinds this client may not know yet); a state must be one of JobStates.
func (f *JobFilter) Validate() error {
	switch {
	case f.Limit < 0 || f.Limit > MaxJobLimit:
		return bad("limit", "must be 1 to %d", MaxJobLimit)
	case f.Kind != "" && !isWord(f.Kind):
		return bad("kind", "%q is not a job kind (backup, restore, verify, copy, …)", f.Kind)
	case f.State != "" && !slices.Contains(JobStates, f.State):
		return bad("state", "%q is not a job state (%s)", f.State, strings.Join(JobStates, ", "))
	}
	return nil
}

// isWord reports whether s is a lower-case word of up to 32 letters,
// digits and underscores, as job kinds are.
func isWord(s string) bool {
	if len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return s != ""
}
