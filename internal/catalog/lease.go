package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Leases say who runs a job and who holds a drive. A lease has a holder (a
// string that names one process: host, pid and a random part), the time it
// was taken, the time of its last heartbeat and the time it expires. The
// holder renews it (a heartbeat) well before it expires; a holder that dies
// stops renewing, and once the lease has expired any process on the catalog
// may reclaim the job (ReclaimExpiredJobs) or take the drive.
//
// Every change is one write transaction, and the catalog serialises them
// across processes (SQLite's write lock; the advisory lock every write
// transaction takes on PostgreSQL), so each method is a compare-and-set: taking a job moves it from
// queued (or waiting) to running and writes its lease in the same
// transaction, so two processes can never both start one job. An expired
// lease stays its holder's until someone else reclaims it: a holder that was
// only slow may still renew it or finish its job, and whichever of the two
// commits first wins; the other gets ErrLeaseLost (the holder) or finds
// nothing to reclaim.
//
// Time is the caller's: every method takes now, and expiry is decided by
// comparing it with the stored expiry (wall-clock time, so the clocks of the
// processes sharing a catalog must agree to well within a lease's length).

// Lease errors, to be tested with errors.Is.
var (
	// ErrLeaseHeld: another holder's lease on the job or drive has not
	// expired yet.
	ErrLeaseHeld = errors.New("lease held by another holder")
	// ErrLeaseLost: the caller no longer holds the lease it names: it was
	// reclaimed after it expired, or never taken.
	ErrLeaseLost = errors.New("lease lost")
	// ErrNotQueued: the job cannot be taken because it is not waiting to
	// start (it runs, or it has ended).
	ErrNotQueued = errors.New("job is not queued")
)

// ReasonLeaseExpired starts the error of a job reclaimed after its lease
// expired; ReasonHolderGone that of a job reclaimed before, because its
// holder was known to be dead (ReclaimJobs).
const (
	ReasonLeaseExpired = "lease expired"
	ReasonHolderGone   = "holder gone"
)

// Lease is who runs a job, until when.
type Lease struct {
	JobID     int64     `json:"job_id"`
	Holder    string    `json:"holder"`
	Acquired  time.Time `json:"acquired"`
	Heartbeat time.Time `json:"heartbeat"` // the last renewal (Acquired at first)
	Expires   time.Time `json:"expires"`
}

// Expired reports whether the lease has expired at now.
func (l *Lease) Expired(now time.Time) bool { return !now.Before(l.Expires) }

// DriveLease is who holds a drive of a library, for which job, until when.
type DriveLease struct {
	Library   string    `json:"library"`
	Drive     int       `json:"drive"` // 1-based
	Holder    string    `json:"holder"`
	JobID     int64     `json:"job_id"` // 0: not for a job
	Acquired  time.Time `json:"acquired"`
	Heartbeat time.Time `json:"heartbeat"`
	Expires   time.Time `json:"expires"`
}

// Expired reports whether the lease has expired at now.
func (l *DriveLease) Expired(now time.Time) bool { return !now.Before(l.Expires) }

func checkLease(holder string, now time.Time, ttl time.Duration) error {
	if holder == "" {
		return fmt.Errorf("catalog: lease without a holder: %w", ErrInvalid)
	}
	if ttl <= 0 {
		return fmt.Errorf("catalog: lease length %v: %w", ttl, ErrInvalid)
	}
	if now.IsZero() {
		return fmt.Errorf("catalog: lease at the zero time: %w", ErrInvalid)
	}
	return nil
}

func finalState(s string) bool {
	return oneOf(s, StateSucceeded, StateWarnings, StateFailed, StateCanceled, StateInterrupted)
}

const leaseColumns = `job_id, holder, acquired, heartbeat, expires_at`

func scanLease(row interface{ Scan(...any) error }) (*Lease, error) {
	var (
		l       Lease
		a, h, e sql.NullInt64
	)
	if err := row.Scan(&l.JobID, &l.Holder, &a, &h, &e); err != nil {
		return nil, err
	}
	l.Acquired, l.Heartbeat, l.Expires = fromDB(a), fromDB(h), fromDB(e)
	return &l, nil
}

// jobLeaseTx returns the lease on job id, or nil if it has none.
func jobLeaseTx(tx *txn, id int64) (*Lease, error) {
	l, err := scanLease(tx.QueryRow(`SELECT `+leaseColumns+` FROM job_leases WHERE job_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return l, err
}

// holdsTx checks that holder holds the lease on job id (expired or not).
func holdsTx(tx *txn, id int64, holder string) (*Lease, error) {
	l, err := jobLeaseTx(tx, id)
	if err != nil {
		return nil, err
	}
	if l == nil || l.Holder != holder {
		return nil, fmt.Errorf("job %d: %w", id, ErrLeaseLost)
	}
	return l, nil
}

func jobTx(tx *txn, id int64) (*Job, error) {
	j, err := scanJob(tx.QueryRow(`SELECT id, `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return j, err
}

func updateJobTx(tx *txn, j *Job) error {
	args, err := jobArgs(j)
	if err != nil {
		return err
	}
	return execOne(tx, fmt.Sprintf("job %d", j.ID),
		`UPDATE jobs SET `+assignments(jobColumns)+` WHERE id = ?`, append(args, j.ID)...)
}

func insertLeaseTx(tx *txn, l *Lease) error {
	if _, err := tx.Exec(`DELETE FROM job_leases WHERE job_id = ?`, l.JobID); err != nil {
		return err
	}
	_, err := tx.Exec(`INSERT INTO job_leases (`+leaseColumns+`) VALUES (?, ?, ?, ?, ?)`,
		l.JobID, l.Holder, toDB(l.Acquired), toDB(l.Heartbeat), toDB(l.Expires))
	return err
}

// CreateLeasedJob records a new job, running from now, and gives holder its
// lease until now+ttl, in one transaction: the way a process starts a job of
// its own (one not taken from the queue). j.State, j.Started (when zero) and
// j.Reason are set; j.ID is assigned as CreateJob does.
func (c *Catalog) CreateLeasedJob(j *Job, holder string, now time.Time, ttl time.Duration) (*Lease, error) {
	if err := checkLease(holder, now, ttl); err != nil {
		return nil, err
	}
	j.State, j.Reason = StateRunning, ""
	if j.Started.IsZero() {
		j.Started = now
	}
	if err := j.validate(); err != nil {
		return nil, err
	}
	args, err := jobArgs(j)
	if err != nil {
		return nil, fmt.Errorf("catalog: creating job: %w", err)
	}
	q := `INSERT INTO jobs (` + jobColumns + `) VALUES (` + placeholders(jobColumns) + `) RETURNING id`
	if j.ID != 0 {
		q = `INSERT INTO jobs (id, ` + jobColumns + `) VALUES (?, ` + placeholders(jobColumns) + `) RETURNING id`
		args = append([]any{j.ID}, args...)
	}
	var l *Lease
	err = c.write(func(tx *txn) error {
		var id int64
		if err := tx.QueryRow(q, args...).Scan(&id); err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("job %d: %w", j.ID, ErrExists)
			}
			return err
		}
		if err := tx.d.raiseSequence(tx, "jobs", j.ID); err != nil {
			return err
		}
		l = &Lease{JobID: id, Holder: holder, Acquired: now, Heartbeat: now, Expires: now.Add(ttl)}
		return insertLeaseTx(tx, l)
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: creating leased job: %w", err)
	}
	j.ID = l.JobID
	return normLease(l), nil
}

// AcquireJobLease takes a queued or waiting job for holder: in one
// transaction it checks that no other holder's lease on the job is live
// (ErrLeaseHeld) and that the job is queued or waiting (ErrNotQueued), then
// marks it running from now and writes the lease, until now+ttl. It returns
// the job as it is now. ErrNotFound if there is no such job. It starts
// work: on SQLite it has its turn before this process's other writers.
func (c *Catalog) AcquireJobLease(id int64, holder string, now time.Time, ttl time.Duration) (*Job, *Lease, error) {
	return c.acquireJobLease(id, nil, holder, now, ttl)
}

// AcquireJobLeaseAs is AcquireJobLease that writes row (running: its
// Started kept, now if zero) as the job's row in the same transaction: a
// job taken from the queue and recorded as its runner has it costs one
// commit, not two. Nothing is written when it fails.
func (c *Catalog) AcquireJobLeaseAs(row *Job, holder string, now time.Time, ttl time.Duration) (*Lease, error) {
	row.State, row.Reason, row.Finished = StateRunning, "", time.Time{}
	if row.Started.IsZero() {
		row.Started = now
	}
	if err := row.validate(); err != nil {
		return nil, err
	}
	_, l, err := c.acquireJobLease(row.ID, row, holder, now, ttl)
	return l, err
}

func (c *Catalog) acquireJobLease(id int64, row *Job, holder string, now time.Time, ttl time.Duration) (*Job, *Lease, error) {
	if err := checkLease(holder, now, ttl); err != nil {
		return nil, nil, err
	}
	var (
		j *Job
		l *Lease
	)
	err := c.writeUrgent(func(tx *txn) error {
		var err error
		if j, err = jobTx(tx, id); err != nil {
			return err
		}
		old, err := jobLeaseTx(tx, id)
		if err != nil {
			return err
		}
		if old != nil && old.Holder != holder && !old.Expired(now) {
			return fmt.Errorf("job %d: held by %s until %s: %w", id, old.Holder,
				old.Expires.Format(time.RFC3339), ErrLeaseHeld)
		}
		if j.State != StateQueued && j.State != StateWaiting {
			return fmt.Errorf("job %d is %s: %w", id, j.State, ErrNotQueued)
		}
		j.State, j.Reason, j.Started, j.Finished = StateRunning, "", now, time.Time{}
		if row != nil {
			j = row
		}
		if err := updateJobTx(tx, j); err != nil {
			return err
		}
		l = &Lease{JobID: id, Holder: holder, Acquired: now, Heartbeat: now, Expires: now.Add(ttl)}
		return insertLeaseTx(tx, l)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: taking job: %w", err)
	}
	j.Started = j.Started.UTC()
	return j, normLease(l), nil
}

// RenewJobLease is holder's heartbeat for job id: its lease, and every
// drive lease holder holds for the job, now expire at now+ttl. It succeeds
// on an expired lease that nobody reclaimed; ErrLeaseLost if holder does not
// hold the lease.
func (c *Catalog) RenewJobLease(id int64, holder string, now time.Time, ttl time.Duration) (*Lease, error) {
	if err := checkLease(holder, now, ttl); err != nil {
		return nil, err
	}
	var l *Lease
	err := c.write(func(tx *txn) error {
		var err error
		if l, err = holdsTx(tx, id, holder); err != nil {
			return err
		}
		l.Heartbeat, l.Expires = now, now.Add(ttl)
		if _, err := tx.Exec(`UPDATE job_leases SET heartbeat = ?, expires_at = ? WHERE job_id = ?`,
			toDB(l.Heartbeat), toDB(l.Expires), id); err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE drive_leases SET heartbeat = ?, expires_at = ? WHERE job_id = ? AND holder = ?`,
			toDB(l.Heartbeat), toDB(l.Expires), id, holder)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: renewing lease: %w", err)
	}
	return normLease(l), nil
}

// UpdateLeasedJob is UpdateJob for the holder of the job's lease: it writes
// j only while holder holds the lease (ErrLeaseLost otherwise), so a holder
// that lost its job never overwrites what the reclaimer recorded. j must not
// be in a final state (ErrInvalid): use FinishLeasedJob.
func (c *Catalog) UpdateLeasedJob(j *Job, holder string) error {
	if err := j.validate(); err != nil {
		return err
	}
	if finalState(j.State) {
		return fmt.Errorf("catalog: job %d: %s is final, finish the job instead: %w", j.ID, j.State, ErrInvalid)
	}
	err := c.write(func(tx *txn) error {
		if _, err := holdsTx(tx, j.ID, holder); err != nil {
			return err
		}
		return updateJobTx(tx, j)
	})
	if err != nil {
		return fmt.Errorf("catalog: updating leased job: %w", err)
	}
	return nil
}

// FinishLeasedJob records the end of a job and releases its lease and the
// drive leases holder holds for it, in one transaction. j.State must be
// final (ErrInvalid); ErrLeaseLost (and nothing written) if holder does not
// hold the lease.
func (c *Catalog) FinishLeasedJob(j *Job, holder string) error {
	if err := j.validate(); err != nil {
		return err
	}
	if !finalState(j.State) {
		return fmt.Errorf("catalog: job %d: %s is not a final state: %w", j.ID, j.State, ErrInvalid)
	}
	err := c.write(func(tx *txn) error {
		if _, err := holdsTx(tx, j.ID, holder); err != nil {
			return err
		}
		if err := updateJobTx(tx, j); err != nil {
			return err
		}
		return deleteLeasesTx(tx, j.ID, holder)
	})
	if err != nil {
		return fmt.Errorf("catalog: finishing job: %w", err)
	}
	return nil
}

// ReleaseJobLease hands a job back to the queue: state (queued or waiting,
// else ErrInvalid) and reason are set, the lease and holder's drive leases
// for the job are released, and another holder may take it. ErrLeaseLost if
// holder does not hold the lease.
func (c *Catalog) ReleaseJobLease(id int64, holder, state, reason string) error {
	if state != StateQueued && state != StateWaiting {
		return fmt.Errorf("catalog: releasing job %d as %q: %w", id, state, ErrInvalid)
	}
	err := c.write(func(tx *txn) error {
		if _, err := holdsTx(tx, id, holder); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE jobs SET state = ?, reason = ? WHERE id = ?`, state, reason, id); err != nil {
			return err
		}
		return deleteLeasesTx(tx, id, holder)
	})
	if err != nil {
		return fmt.Errorf("catalog: releasing lease: %w", err)
	}
	return nil
}

func deleteLeasesTx(tx *txn, id int64, holder string) error {
	if _, err := tx.Exec(`DELETE FROM job_leases WHERE job_id = ?`, id); err != nil {
		return err
	}
	_, err := tx.Exec(`DELETE FROM drive_leases WHERE job_id = ? AND holder = ?`, id, holder)
	return err
}

// JobLease returns the lease on job id, or ErrNotFound if it has none.
func (c *Catalog) JobLease(id int64) (*Lease, error) {
	l, err := scanLease(c.db.QueryRow(`SELECT `+leaseColumns+` FROM job_leases WHERE job_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("catalog: lease of job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: lease of job %d: %w", id, err)
	}
	return normLease(l), nil
}

// LiveJobLeases returns the leases that have not expired at now, by job ID:
// the jobs that are running somewhere.
func (c *Catalog) LiveJobLeases(now time.Time) ([]*Lease, error) {
	return c.jobLeases(`WHERE expires_at > ?`, toDB(now))
}

// ExpiredJobLeases returns the leases that have expired at now, by job ID:
// the jobs ReclaimExpiredJobs would reclaim.
func (c *Catalog) ExpiredJobLeases(now time.Time) ([]*Lease, error) {
	return c.jobLeases(`WHERE expires_at <= ?`, toDB(now))
}

func (c *Catalog) jobLeases(where string, args ...any) ([]*Lease, error) {
	rows, err := c.db.Query(`SELECT `+leaseColumns+` FROM job_leases `+where+` ORDER BY job_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing leases: %w", err)
	}
	defer rows.Close()
	var out []*Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing leases: %w", err)
		}
		out = append(out, normLease(l))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing leases: %w", err)
	}
	return out, nil
}

// ReclaimExpiredJobs ends every job whose lease has expired at now: its
// holder stopped renewing it (killed, power loss, hung). In one transaction
// each such job becomes interrupted, with an error that starts with
// ReasonLeaseExpired and names the holder, finished at now; a backup's
// running saveset becomes incomplete; the job's lease and its holder's drive
// leases for it are released. It returns the IDs of the jobs reclaimed, in
// order. Any process may call it; two calls never reclaim a job twice.
func (c *Catalog) ReclaimExpiredJobs(now time.Time) ([]int64, error) {
	return c.ReclaimJobs(now, nil)
}

// ReclaimJobs is ReclaimExpiredJobs that also reclaims, before its lease
// expires, a job whose holder gone reports gone: gone returns why (the
// holder's process is known to have died), or "" when the holder may be
// alive. Such a job's error starts with ReasonHolderGone. A running job with
// no lease but an owner (one started by a Kura from before leases) is
// reclaimed when gone reports its owner gone. gone is called inside the
// write transaction, once per holder: it must be quick and must not use the
// catalog. A nil gone reclaims expired leases only.
func (c *Catalog) ReclaimJobs(now time.Time, gone func(holder string) string) ([]int64, error) {
	var ids []int64
	err := c.write(func(tx *txn) error {
		ids = nil
		q, args := `SELECT `+leaseColumns+` FROM job_leases WHERE expires_at <= ? ORDER BY job_id`, []any{toDB(now)}
		if gone != nil {
			q, args = `SELECT `+leaseColumns+` FROM job_leases ORDER BY job_id`, nil
		}
		rows, err := tx.Query(q, args...)
		if err != nil {
			return err
		}
		var leases []*Lease
		for rows.Next() {
			l, err := scanLease(rows)
			if err != nil {
				rows.Close()
				return err
			}
			leases = append(leases, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		why := map[string]string{} // gone's answer, by holder
		if gone != nil {
			legacy, err := legacyRunningTx(tx)
			if err != nil {
				return err
			}
			leases = append(leases, legacy...)
			sort.Slice(leases, func(a, b int) bool { return leases[a].JobID < leases[b].JobID })
		}
		for _, l := range leases {
			var reason string
			legacy := l.Expires.IsZero() // no lease: the owner a Kura from before leases recorded
			switch {
			case l.Expired(now) && !legacy:
				reason = fmt.Sprintf("%s: its holder %s last renewed it at %s and is presumed dead",
					ReasonLeaseExpired, l.Holder, l.Heartbeat.UTC().Format(time.RFC3339))
			default:
				w, ok := why[l.Holder]
				if !ok {
					w = gone(l.Holder)
					why[l.Holder] = w
				}
				if w == "" {
					continue // live: never touched
				}
				reason = fmt.Sprintf("%s: its holder %s %s", ReasonHolderGone, l.Holder, w)
			}
			j, err := jobTx(tx, l.JobID)
			if err != nil {
				return err
			}
			if !finalState(j.State) {
				j.State = StateInterrupted
				j.Error = reason
				j.Finished = now
				j.Reason = ""
				j.Log = append(j.Log, fmt.Sprintf("%s interrupted: %s", now.UTC().Format(time.RFC3339), j.Error))
				if err := updateJobTx(tx, j); err != nil {
					return err
				}
				if j.Kind == KindBackup && j.SavesetID != 0 {
					if _, err := tx.Exec(`UPDATE savesets SET status = ? WHERE id = ? AND status = ?`,
						StatusIncomplete, j.SavesetID, StatusRunning); err != nil {
						return err
					}
				}
			}
			if err := deleteLeasesTx(tx, l.JobID, l.Holder); err != nil {
				return err
			}
			ids = append(ids, l.JobID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: reclaiming jobs: %w", err)
	}
	return ids, nil
}

// legacyRunningTx returns, as leases with no times, the owners of the
// running jobs that have no lease but an owner: jobs a Kura from before
// leases started (their owner names its lock file).
func legacyRunningTx(tx *txn) ([]*Lease, error) {
	rows, err := tx.Query(`SELECT id, owner FROM jobs WHERE state = ? AND owner != ''
		AND id NOT IN (SELECT job_id FROM job_leases) ORDER BY id`, StateRunning)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Lease
	for rows.Next() {
		var l Lease
		if err := rows.Scan(&l.JobID, &l.Holder); err != nil {
			return nil, err
		}
		out = append(out, &l)
	}
	return out, rows.Err()
}

func normLease(l *Lease) *Lease {
	l.Acquired, l.Heartbeat, l.Expires = l.Acquired.UTC(), l.Heartbeat.UTC(), l.Expires.UTC()
	return l
}

// Drive leases.

const driveLeaseColumns = `library, drive, holder, job_id, acquired, heartbeat, expires_at`

func scanDriveLease(row interface{ Scan(...any) error }) (*DriveLease, error) {
	var (
		l       DriveLease
		a, h, e sql.NullInt64
	)
	if err := row.Scan(&l.Library, &l.Drive, &l.Holder, &l.JobID, &a, &h, &e); err != nil {
		return nil, err
	}
	l.Acquired, l.Heartbeat, l.Expires = fromDB(a), fromDB(h), fromDB(e)
	return &l, nil
}

func checkDrive(lib string, drive int) error {
	if lib == "" || drive < 1 {
		return fmt.Errorf("catalog: drive %d of library %q: %w", drive, lib, ErrInvalid)
	}
	return nil
}

// AcquireDriveLease gives drive (1-based) of library lib to holder, for job
// jobID (0: for no job), until now+ttl. A lease is owned by the pair
// (holder, jobID): the same pair taking it again renews it, anyone else gets
// ErrLeaseHeld until it expires. The library is not checked against the
// catalog's libraries.
func (c *Catalog) AcquireDriveLease(lib string, drive int, holder string, jobID int64, now time.Time, ttl time.Duration) (*DriveLease, error) {
	if err := checkLease(holder, now, ttl); err != nil {
		return nil, err
	}
	if err := checkDrive(lib, drive); err != nil {
		return nil, err
	}
	l := &DriveLease{Library: lib, Drive: drive, Holder: holder, JobID: jobID, Acquired: now, Heartbeat: now, Expires: now.Add(ttl)}
	err := c.write(func(tx *txn) error { return acquireDriveLease(tx, l, now) })
	if err != nil {
		return nil, fmt.Errorf("catalog: taking drive: %w", err)
	}
	return normDriveLease(l), nil
}

// acquireDriveLease writes lease l in tx unless another (holder, job)
// holds a live lease on its drive (ErrLeaseHeld).
func acquireDriveLease(tx *txn, l *DriveLease, now time.Time) error {
	old, err := scanDriveLease(tx.QueryRow(`SELECT `+driveLeaseColumns+` FROM drive_leases WHERE library = ? AND drive = ?`, l.Library, l.Drive))
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case old.Holder == l.Holder && old.JobID == l.JobID:
		l.Acquired = old.Acquired
	case !old.Expired(now):
		return fmt.Errorf("drive %d of library %s: held by %s for job %d until %s: %w", l.Drive, l.Library,
			old.Holder, old.JobID, old.Expires.UTC().Format(time.RFC3339), ErrLeaseHeld)
	}
	if _, err := tx.Exec(`DELETE FROM drive_leases WHERE library = ? AND drive = ?`, l.Library, l.Drive); err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO drive_leases (`+driveLeaseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		l.Library, l.Drive, l.Holder, l.JobID, toDB(l.Acquired), toDB(l.Heartbeat), toDB(l.Expires))
	return err
}

// DriveClaim is a drive AcquireDriveLeases asks for, and its job.
type DriveClaim struct {
	Library string
	Drive   int
	JobID   int64
}

// AcquireDriveLeases is AcquireDriveLease for many drives in one write
// transaction: a server starting many jobs at once commits once, not once
// per job. The i-th error is claim i's: nil when it was taken, ErrLeaseHeld
// when another holds it (the others are taken all the same); the error
// returned is the transaction's, and then none was taken. It starts work:
// on SQLite it has its turn before this process's other writers.
func (c *Catalog) AcquireDriveLeases(claims []DriveClaim, holder string, now time.Time, ttl time.Duration) ([]error, error) {
	if err := checkLease(holder, now, ttl); err != nil {
		return nil, err
	}
	for _, cl := range claims {
		if err := checkDrive(cl.Library, cl.Drive); err != nil {
			return nil, err
		}
	}
	var errs []error
	err := c.writeUrgent(func(tx *txn) error {
		errs = make([]error, len(claims))
		for i, cl := range claims {
			l := &DriveLease{Library: cl.Library, Drive: cl.Drive, Holder: holder, JobID: cl.JobID, Acquired: now, Heartbeat: now, Expires: now.Add(ttl)}
			err := acquireDriveLease(tx, l, now)
			if errors.Is(err, ErrLeaseHeld) {
				errs[i] = fmt.Errorf("catalog: taking drive: %w", err)
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: taking drives: %w", err)
	}
	return errs, nil
}

// RenewDriveLease extends holder's lease on a drive for job jobID to
// now+ttl; ErrLeaseLost if the pair does not hold it. (RenewJobLease renews
// a job's drive leases with the job's.)
func (c *Catalog) RenewDriveLease(lib string, drive int, holder string, jobID int64, now time.Time, ttl time.Duration) error {
	if err := checkLease(holder, now, ttl); err != nil {
		return err
	}
	err := execOne(c.db, fmt.Sprintf("drive %d of library %s", drive, lib),
		`UPDATE drive_leases SET heartbeat = ?, expires_at = ? WHERE library = ? AND drive = ? AND holder = ? AND job_id = ?`,
		toDB(now), toDB(now.Add(ttl)), lib, drive, holder, jobID)
	if errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("drive %d of library %s: %w", drive, lib, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("catalog: renewing drive lease: %w", err)
	}
	return nil
}

// ReleaseDriveLease frees a drive held by holder for job jobID;
// ErrLeaseLost if the pair does not hold it.
func (c *Catalog) ReleaseDriveLease(lib string, drive int, holder string, jobID int64) error {
	err := execOne(c.db, fmt.Sprintf("drive %d of library %s", drive, lib),
		`DELETE FROM drive_leases WHERE library = ? AND drive = ? AND holder = ? AND job_id = ?`,
		lib, drive, holder, jobID)
	if errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("drive %d of library %s: %w", drive, lib, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("catalog: releasing drive lease: %w", err)
	}
	return nil
}

// LiveDriveLeases returns the drive leases that have not expired at now, by
// library and drive: the drives in use.
func (c *Catalog) LiveDriveLeases(now time.Time) ([]*DriveLease, error) {
	rows, err := c.db.Query(`SELECT `+driveLeaseColumns+` FROM drive_leases WHERE expires_at > ? ORDER BY library, drive`, toDB(now))
	if err != nil {
		return nil, fmt.Errorf("catalog: listing drive leases: %w", err)
	}
	defer rows.Close()
	var out []*DriveLease
	for rows.Next() {
		l, err := scanDriveLease(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing drive leases: %w", err)
		}
		out = append(out, normDriveLease(l))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing drive leases: %w", err)
	}
	return out, nil
}

func normDriveLease(l *DriveLease) *DriveLease {
	l.Acquired, l.Heartbeat, l.Expires = l.Acquired.UTC(), l.Heartbeat.UTC(), l.Expires.UTC()
	return l
}
