package catalog

import "fmt"

// QueuedJobs returns the jobs that have not started yet (queued or waiting),
// oldest (lowest ID) first: the server's queue.
func (c *Catalog) QueuedJobs() ([]*Job, error) {
	rows, err := c.db.Query(`SELECT id, `+jobColumns+` FROM jobs WHERE state IN (?, ?) ORDER BY id`,
		StateQueued, StateWaiting)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing queued jobs: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing queued jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing queued jobs: %w", err)
	}
	return out, nil
}

// SetJobReason sets just the state and the reason of job id, leaving every
// other field as it is: the cheap update for a queued job that starts
// waiting, or waits for something else. ErrInvalid for an unknown state,
// ErrNotFound if there is no such job.
func (c *Catalog) SetJobReason(id int64, state, reason string) error {
	if !validJobState(state) {
		return fmt.Errorf("catalog: job state %q: %w", state, ErrInvalid)
	}
	err := execOne(c.db, fmt.Sprintf("job %d", id),
		`UPDATE jobs SET state = ?, reason = ? WHERE id = ?`, state, reason, id)
	if err != nil {
		return fmt.Errorf("catalog: setting job reason: %w", err)
	}
	return nil
}

// StreamJobs returns the jobs of a backup split into streams, in stream
// order: the first stream's job (parent) and the jobs whose parent it is,
// by ID (the server creates them stream after stream).
func (c *Catalog) StreamJobs(parent int64) ([]*Job, error) {
	rows, err := c.db.Query(`SELECT id, `+jobColumns+` FROM jobs WHERE id = ? OR parent_id = ? ORDER BY id`, parent, parent)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing the streams of job %d: %w", parent, err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing the streams of job %d: %w", parent, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing the streams of job %d: %w", parent, err)
	}
	return out, nil
}
