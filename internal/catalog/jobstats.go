package catalog

import (
	"fmt"
	"strings"
	"time"
)

// JobTally counts the jobs of one kind in one state, with the sums of
// their figures: what metrics read at scrape time, so that they never
// drift from the job records.
type JobTally struct {
	Kind, State string
	Count       int64
	Files       int64
	SourceBytes int64
	MediaBytes  int64
}

// JobTallies counts the jobs by kind and state, in one query.
func (c *Catalog) JobTallies() ([]JobTally, error) {
	rows, err := c.db.Query(`SELECT kind, state, COUNT(*), SUM(files), SUM(source_bytes), SUM(media_bytes)
		FROM jobs GROUP BY kind, state ORDER BY kind, state`)
	if err != nil {
		return nil, fmt.Errorf("catalog: counting jobs: %w", err)
	}
	defer rows.Close()
	var out []JobTally
	for rows.Next() {
		var t JobTally
		if err := rows.Scan(&t.Kind, &t.State, &t.Count, &t.Files, &t.SourceBytes, &t.MediaBytes); err != nil {
			return nil, fmt.Errorf("catalog: counting jobs: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// JobDurations is the distribution of the run times of the ended jobs of
// one kind: Count jobs took Sum seconds in all, and Buckets[i] of them at
// most the i-th bound.
type JobDurations struct {
	Kind    string
	Count   uint64
	Sum     float64 // seconds
	Buckets []uint64
}

// EndedJobDurations is the distribution of the run times of the ended
// jobs of each kind over bounds (seconds, ascending), in one query. A job
// that never started (canceled in the queue) has no run time and is left
// out.
func (c *Catalog) EndedJobDurations(bounds []float64) ([]JobDurations, error) {
	const dur = `(finished - started) / 1e9` // portable SQL: the catalog may be PostgreSQL
	var cols strings.Builder
	args := make([]any, 0, len(bounds)+3)
	for _, b := range bounds {
		cols.WriteString(`, SUM(CASE WHEN ` + dur + ` <= ? THEN 1 ELSE 0 END)`)
		args = append(args, b)
	}
	args = append(args, StateQueued, StateWaiting, StateRunning)
	rows, err := c.db.Query(`SELECT kind, COUNT(*), COALESCE(SUM(`+dur+`), 0)`+cols.String()+`
		FROM jobs WHERE started IS NOT NULL AND finished IS NOT NULL AND finished >= started
		AND state NOT IN (?, ?, ?) GROUP BY kind ORDER BY kind`, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: job durations: %w", err)
	}
	defer rows.Close()
	var out []JobDurations
	for rows.Next() {
		d := JobDurations{Buckets: make([]uint64, len(bounds))}
		dest := []any{&d.Kind, &d.Count, &d.Sum}
		for i := range d.Buckets {
			dest = append(dest, &d.Buckets[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("catalog: job durations: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// LastSuccessfulBackups maps each client to the end of its newest backup
// that ended succeeded or with warnings (its saveset is complete and
// restorable). The local machine's backups are under "".
func (c *Catalog) LastSuccessfulBackups() (map[string]time.Time, error) {
	rows, err := c.db.Query(`SELECT client, MAX(finished) FROM jobs
		WHERE kind = ? AND state IN (?, ?) AND finished IS NOT NULL GROUP BY client`,
		KindBackup, StateSucceeded, StateWarnings)
	if err != nil {
		return nil, fmt.Errorf("catalog: last backups: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var client string
		var at int64
		if err := rows.Scan(&client, &at); err != nil {
			return nil, fmt.Errorf("catalog: last backups: %w", err)
		}
		out[client] = time.Unix(0, at).UTC()
	}
	return out, rows.Err()
}

// LastPolicyBackups maps each policy to the end of its newest complete
// saveset (a backup that ended succeeded or with warnings), expired ones
// included: the saveset's existence is the success, not its keeping.
func (c *Catalog) LastPolicyBackups() (map[string]time.Time, error) {
	rows, err := c.db.Query(`SELECT policy, MAX(finished) FROM savesets
		WHERE policy != '' AND status = ? AND finished IS NOT NULL GROUP BY policy`, StatusComplete)
	if err != nil {
		return nil, fmt.Errorf("catalog: last policy backups: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var policy string
		var at int64
		if err := rows.Scan(&policy, &at); err != nil {
			return nil, fmt.Errorf("catalog: last policy backups: %w", err)
		}
		out[policy] = time.Unix(0, at).UTC()
	}
	return out, rows.Err()
}
