package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The leader lease says which of the servers sharing a catalog runs the job
// queue and the scheduler; the others stand by. It follows the rules of a
// job's lease: the holder renews it well before it expires; once it has
// expired (or its holder is known to be gone) another server takes it; a
// holder that was only slow may still renew it until someone has.

// leaderName is the row of the leader lease in server_leases.
const leaderName = "leader"

// LeaderLease is who leads, until when.
type LeaderLease struct {
	Holder    string    `json:"holder"`
	Acquired  time.Time `json:"acquired"`
	Heartbeat time.Time `json:"heartbeat"`
	Expires   time.Time `json:"expires"`
}

func scanLeader(row interface{ Scan(...any) error }) (*LeaderLease, error) {
	var l LeaderLease
	var acq, hb, exp sql.NullInt64
	if err := row.Scan(&l.Holder, &acq, &hb, &exp); err != nil {
		return nil, err
	}
	l.Acquired, l.Heartbeat, l.Expires = fromDB(acq), fromDB(hb), fromDB(exp)
	return &l, nil
}

// AcquireLeader makes holder the leader until now+ttl: when nobody leads,
// when holder already does (a renewal), when the lease has expired, or when
// gone (which may be nil) reports its holder dead. Otherwise it returns the
// live lease and ErrLeaseHeld.
func (c *Catalog) AcquireLeader(holder string, now time.Time, ttl time.Duration, gone func(holder string) string) (*LeaderLease, error) {
	if holder == "" || ttl <= 0 {
		return nil, fmt.Errorf("catalog: leader lease: holder %q, ttl %s: %w", holder, ttl, ErrInvalid)
	}
	var cur *LeaderLease
	err := c.write(func(tx *txn) error {
		old, err := scanLeader(tx.QueryRow(`SELECT holder, acquired, heartbeat, expires_at FROM server_leases WHERE name = ?`, leaderName))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			cur = &LeaderLease{Holder: holder, Acquired: now, Heartbeat: now, Expires: now.Add(ttl)}
			_, err = tx.Exec(`INSERT INTO server_leases (name, holder, acquired, heartbeat, expires_at) VALUES (?, ?, ?, ?, ?)`,
				leaderName, holder, toDB(now), toDB(now), toDB(cur.Expires))
			return err
		case err != nil:
			return err
		case old.Holder == holder:
			cur = &LeaderLease{Holder: holder, Acquired: old.Acquired, Heartbeat: now, Expires: now.Add(ttl)}
		case now.Before(old.Expires) && (gone == nil || gone(old.Holder) == ""):
			cur = old
			return fmt.Errorf("held by %s until %s: %w", old.Holder, old.Expires.UTC().Format(time.RFC3339), ErrLeaseHeld)
		default:
			cur = &LeaderLease{Holder: holder, Acquired: now, Heartbeat: now, Expires: now.Add(ttl)}
		}
		_, err = tx.Exec(`UPDATE server_leases SET holder = ?, acquired = ?, heartbeat = ?, expires_at = ? WHERE name = ?`,
			holder, toDB(cur.Acquired), toDB(now), toDB(cur.Expires), leaderName)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrLeaseHeld) {
			return cur, fmt.Errorf("catalog: leader lease: %w", err)
		}
		return nil, fmt.Errorf("catalog: leader lease: %w", err)
	}
	return cur, nil
}

// RenewLeader extends holder's leader lease to now+ttl, or returns
// ErrLeaseLost if another server has taken it (or it was released).
func (c *Catalog) RenewLeader(holder string, now time.Time, ttl time.Duration) error {
	err := c.write(func(tx *txn) error {
		return execOne(tx, "leader lease of "+holder,
			`UPDATE server_leases SET heartbeat = ?, expires_at = ? WHERE name = ? AND holder = ?`,
			toDB(now), toDB(now.Add(ttl)), leaderName, holder)
	})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("catalog: %s: %w", holder, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("catalog: renewing the leader lease: %w", err)
	}
	return nil
}

// ReleaseLeader gives the leader lease up, if holder has it, so that a
// standby server takes it at once.
func (c *Catalog) ReleaseLeader(holder string) error {
	if _, err := c.db.Exec(`DELETE FROM server_leases WHERE name = ? AND holder = ?`, leaderName, holder); err != nil {
		return fmt.Errorf("catalog: releasing the leader lease: %w", err)
	}
	return nil
}

// Leader returns the leader lease (expired or not), or ErrNotFound.
func (c *Catalog) Leader() (*LeaderLease, error) {
	l, err := scanLeader(c.db.QueryRow(`SELECT holder, acquired, heartbeat, expires_at FROM server_leases WHERE name = ?`, leaderName))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("catalog: leader lease: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: leader lease: %w", err)
	}
	return l, nil
}
