package catalog

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Job kinds.
const (
	KindBackup  = "backup"
	KindRestore = "restore"
	KindVerify  = "verify"
	KindCopy    = "copy"
	KindScan    = "scan"
	KindCatalog = "catalog" // a backup of the catalog itself to tape
	KindPrune   = "prune"   // expiring savesets by retention
	KindErase   = "erase"   // erasing a tape
)

// Job states. Queued and waiting jobs have not started; running jobs are in
// progress; the others are final.
const (
	StateQueued      = "queued"
	StateWaiting     = "waiting" // for a drive or a tape
	StateRunning     = "running"
	StateSucceeded   = "succeeded"
	StateWarnings    = "warnings" // finished, with warnings
	StateFailed      = "failed"
	StateCanceled    = "canceled"
	StateInterrupted = "interrupted" // was running when its process died
)

// Limits on the lists a job keeps.
const (
	MaxWarnings = 1000 // the first MaxWarnings warnings are kept; WarningCount counts all
	MaxLogLines = 200  // the last MaxLogLines lines of the log are kept
)

// Phase is one step of a job (scan, write data, write index, ...) and its
// figures.
type Phase struct {
	Name       string    `json:"name"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Files      int64     `json:"files"`
	Bytes      int64     `json:"bytes"`
	MediaBytes int64     `json:"media_bytes"`
	AvgRate    float64   `json:"avg_rate"`  // bytes/s
	PeakRate   float64   `json:"peak_rate"` // highest 1-second rate, bytes/s
}

// Job is one run of a backup, restore, verify, copy or scan, as the job
// monitor shows it.
type Job struct {
	ID           int64     `json:"id"`
	Kind         string    `json:"kind"`  // KindBackup, KindRestore, ...
	State        string    `json:"state"` // StateQueued, StateRunning, ...
	Client       string    `json:"client"`
	Selection    string    `json:"selection"`
	SavesetID    int64     `json:"saveset_id"`
	Level        string    `json:"level"`
	Started      time.Time `json:"started"`
	Finished     time.Time `json:"finished"`
	Files        int64     `json:"files"`
	SourceBytes  int64     `json:"source_bytes"`
	MediaBytes   int64     `json:"media_bytes"`
	AvgRate      float64   `json:"avg_rate"`  // bytes/s
	PeakRate     float64   `json:"peak_rate"` // bytes/s
	Tapes        []string  `json:"tapes"`
	Phases       []Phase   `json:"phases"`
	Warnings     []string  `json:"warnings"`      // at most MaxWarnings are stored: the first ones
	WarningCount int64     `json:"warning_count"` // all warnings; stored as at least len(Warnings)
	Error        string    `json:"error"`
	Log          []string  `json:"log"` // at most MaxLogLines are stored: the last ones
	// Owner names the process that runs the job: the holder of its lease
	// (job_leases), as "host:pid:start:random" (internal/job).
	Owner string `json:"owner,omitempty"`
	// Request is the job order as JSON: what the server needs to start the
	// job, or start it again. Empty for jobs run directly by the CLI.
	Request json.RawMessage `json:"request,omitempty"`
	// Reason says why a queued or waiting job has not started ("waiting for
	// a drive", ...).
	Reason string `json:"reason,omitempty"`
	// ParentID is, for one stream of a job split into streams, the job it
	// belongs to; 0 for a job that is not a stream.
	ParentID int64 `json:"parent_id,omitempty"`
	// Result is what an ended job found or did, as JSON of its kind's
	// result (a verify's problems, a prune's expiries, a scan's tape
	// files): what the CLI prints after the figures. Empty while it runs.
	Result json.RawMessage `json:"result,omitempty"`
	// ErrorCode and ErrorField classify Error as the API classifies the
	// errors it answers with (api.Error's code and field): "" while the job
	// runs, when it ended well, or when nothing classified its error.
	ErrorCode  string `json:"error_code,omitempty"`
	ErrorField string `json:"error_field,omitempty"`
}

func (j *Job) validate() error {
	if j.ID < 0 {
		return fmt.Errorf("catalog: job ID %d: %w", j.ID, ErrInvalid)
	}
	if !oneOf(j.Kind, KindBackup, KindRestore, KindVerify, KindCopy, KindScan, KindCatalog,
		KindPrune, KindErase) {
		return fmt.Errorf("catalog: job kind %q: %w", j.Kind, ErrInvalid)
	}
	if !validJobState(j.State) {
		return fmt.Errorf("catalog: job state %q: %w", j.State, ErrInvalid)
	}
	if len(j.Request) > 0 && !json.Valid(j.Request) {
		return fmt.Errorf("catalog: job %d: request is not valid JSON: %w", j.ID, ErrInvalid)
	}
	if j.ParentID < 0 || (j.ParentID != 0 && j.ParentID == j.ID) {
		return fmt.Errorf("catalog: job %d: parent job %d: %w", j.ID, j.ParentID, ErrInvalid)
	}
	return nil
}

func validJobState(s string) bool {
	return oneOf(s, StateQueued, StateWaiting, StateRunning, StateSucceeded, StateWarnings,
		StateFailed, StateCanceled, StateInterrupted)
}

const jobColumns = `kind, state, client, selection, saveset_id, level, started, finished, files, source_bytes,
	media_bytes, avg_rate, peak_rate, tapes, phases, warnings, warning_count, error, log, owner,
	request, reason, parent_id, result, error_code, error_field`

func jobArgs(j *Job) ([]any, error) {
	warnings := j.Warnings
	if len(warnings) > MaxWarnings {
		warnings = warnings[:MaxWarnings]
	}
	count := max(j.WarningCount, int64(len(j.Warnings)))
	log := j.Log
	if len(log) > MaxLogLines {
		log = log[len(log)-MaxLogLines:]
	}
	phases := make([]Phase, len(j.Phases))
	for i, p := range j.Phases {
		p.Start, p.End = p.Start.UTC(), p.End.UTC()
		phases[i] = p
	}
	var enc [4]string
	for i, l := range []func() (string, error){
		func() (string, error) { return encodeList(j.Tapes) },
		func() (string, error) { return encodeList(phases) },
		func() (string, error) { return encodeList(warnings) },
		func() (string, error) { return encodeList(log) },
	} {
		var err error
		if enc[i], err = l(); err != nil {
			return nil, err
		}
	}
	return []any{j.Kind, j.State, j.Client, j.Selection, j.SavesetID, j.Level, toDB(j.Started), toDB(j.Finished),
		j.Files, j.SourceBytes, j.MediaBytes, j.AvgRate, j.PeakRate, enc[0], enc[1], enc[2], count, j.Error,
		enc[3], j.Owner, string(j.Request), j.Reason, j.ParentID, string(j.Result), j.ErrorCode, j.ErrorField}, nil
}

func scanJob(row interface{ Scan(...any) error }) (*Job, error) {
	var (
		j                               Job
		started, finished               sql.NullInt64
		tapes, phases, warnings, logTxt string
		request, result                 string
	)
	err := row.Scan(&j.ID, &j.Kind, &j.State, &j.Client, &j.Selection, &j.SavesetID, &j.Level, &started,
		&finished, &j.Files, &j.SourceBytes, &j.MediaBytes, &j.AvgRate, &j.PeakRate, &tapes, &phases,
		&warnings, &j.WarningCount, &j.Error, &logTxt, &j.Owner, &request, &j.Reason, &j.ParentID, &result, &j.ErrorCode, &j.ErrorField)
	if err != nil {
		return nil, err
	}
	if request != "" {
		j.Request = json.RawMessage(request)
	}
	if result != "" {
		j.Result = json.RawMessage(result)
	}
	j.Started, j.Finished = fromDB(started), fromDB(finished)
	if j.Tapes, err = decodeList[string](tapes, "job tapes"); err != nil {
		return nil, err
	}
	if j.Phases, err = decodeList[Phase](phases, "job phases"); err != nil {
		return nil, err
	}
	if j.Warnings, err = decodeList[string](warnings, "job warnings"); err != nil {
		return nil, err
	}
	if j.Log, err = decodeList[string](logTxt, "job log"); err != nil {
		return nil, err
	}
	return &j, nil
}

// CreateJob records a new job. When j.ID is 0 the catalog assigns the next
// free ID and stores it in j; otherwise j.ID is used and ErrExists is
// returned if it is taken. It queues work: on SQLite it has its turn before
// this process's other writers.
func (c *Catalog) CreateJob(j *Job) error {
	if err := j.validate(); err != nil {
		return err
	}
	args, err := jobArgs(j)
	if err != nil {
		return fmt.Errorf("catalog: creating job: %w", err)
	}
	q := `INSERT INTO jobs (` + jobColumns + `) VALUES (` + placeholders(jobColumns) + `) RETURNING id`
	if j.ID != 0 {
		q = `INSERT INTO jobs (id, ` + jobColumns + `) VALUES (?, ` + placeholders(jobColumns) + `) RETURNING id`
		args = append([]any{j.ID}, args...)
	}
	var id int64
	err = c.writeUrgent(func(tx *txn) error {
		if err := tx.QueryRow(q, args...).Scan(&id); err != nil {
			return err
		}
		return tx.d.raiseSequence(tx, "jobs", j.ID)
	})
	if isDuplicate(err) {
		return fmt.Errorf("catalog: job %d: %w", j.ID, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: creating job: %w", err)
	}
	j.ID = id
	return nil
}

// UpdateJob replaces every field of the job j.ID, or returns ErrNotFound.
func (c *Catalog) UpdateJob(j *Job) error {
	if err := j.validate(); err != nil {
		return err
	}
	args, err := jobArgs(j)
	if err != nil {
		return fmt.Errorf("catalog: updating job %d: %w", j.ID, err)
	}
	err = execOne(c.db, fmt.Sprintf("job %d", j.ID),
		`UPDATE jobs SET `+assignments(jobColumns)+` WHERE id = ?`, append(args, j.ID)...)
	if err != nil {
		return fmt.Errorf("catalog: updating job: %w", err)
	}
	return nil
}

// Job returns the job with this ID, or ErrNotFound.
func (c *Catalog) Job(id int64) (*Job, error) {
	j, err := scanJob(c.db.QueryRow(`SELECT id, `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("catalog: job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: job %d: %w", id, err)
	}
	return j, nil
}

// Jobs returns the newest jobs first (highest ID first), at most limit of
// them; limit <= 0 returns them all.
func (c *Catalog) Jobs(limit int) ([]*Job, error) {
	return c.FindJobs(JobFilter{Limit: limit})
}

// JobFilter selects jobs; an empty field selects every job.
type JobFilter struct {
	Kind   string
	State  string
	Client string
	Limit  int // at most this many of the jobs that match; <= 0: all
}

// FindJobs returns the jobs that match f, newest first (highest ID
// first). The limit counts matching jobs only.
func (c *Catalog) FindJobs(f JobFilter) ([]*Job, error) {
	q := `SELECT id, ` + jobColumns + ` FROM jobs`
	var where []string
	var args []any
	for _, w := range []struct{ col, v string }{{"kind", f.Kind}, {"state", f.State}, {"client", f.Client}} {
		if w.v != "" {
			where = append(where, w.col+` = ?`)
			args = append(args, w.v)
		}
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := c.db.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing jobs: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing jobs: %w", err)
	}
	return out, nil
}
