package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Policy is a schedule, a retention and a target for one client's
// selection: the server runs it at 1 a.m. when nobody is watching.
type Policy struct {
	Name            string `json:"name"`
	Client          string `json:"client"` // "" is the local machine
	Selection       string `json:"selection"`
	FullCron        string `json:"full_cron,omitempty"`
	DiffCron        string `json:"diff_cron,omitempty"`
	IncrCron        string `json:"incr_cron,omitempty"`
	Zone            string `json:"zone,omitempty"` // time zone of the schedules ("" = the server's)
	KeepGenerations int    `json:"keep_generations"`
	KeepDays        int    `json:"keep_days"`
	Library         string `json:"library,omitempty"`
	Pool            string `json:"pool"` // tape pool; default the policy's name
	Verify          bool   `json:"verify"`
	BWLimit         int64  `json:"bwlimit"` // bytes/s, 0 = the client's default
	Compress        string `json:"compress,omitempty"`
	CopyTo          string `json:"copy_to,omitempty"` // library for a second copy of every saveset
	// Encrypt: the client's agent encrypts this policy's backups (as if
	// the client were set to encrypt; the client's own setting still
	// encrypts when this is off).
	Encrypt  bool      `json:"encrypt,omitempty"`
	Created  time.Time `json:"created"`
	LastRun  time.Time `json:"last_run"`  // when the scheduler last started it
	LastSlot time.Time `json:"last_slot"` // the schedule slot of that run
}

const policyColumns = `client, selection, full_cron, diff_cron, incr_cron, zone, keep_generations, keep_days,
	library, pool, verify, bwlimit, compress, copy_to, created, last_run, last_slot, encrypt`

func policyArgs(p *Policy) []any {
	return []any{p.Client, p.Selection, p.FullCron, p.DiffCron, p.IncrCron, p.Zone, p.KeepGenerations, p.KeepDays,
		p.Library, p.Pool, p.Verify, p.BWLimit, p.Compress, p.CopyTo, toDB(p.Created), toDB(p.LastRun), toDB(p.LastSlot), p.Encrypt}
}

// CreatePolicy records a new policy; ErrExists if the name is taken.
func (c *Catalog) CreatePolicy(p *Policy) error {
	if p.Name == "" || p.Selection == "" {
		return fmt.Errorf("catalog: a policy needs a name and a selection: %w", ErrInvalid)
	}
	if p.Created.IsZero() {
		p.Created = now()
	}
	_, err := c.db.Exec(`INSERT INTO policies (name, `+policyColumns+`) VALUES (?, `+placeholders(policyColumns)+`)`,
		append([]any{p.Name}, policyArgs(p)...)...)
	if isDuplicate(err) {
		return fmt.Errorf("catalog: policy %q: %w", p.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: creating policy %q: %w", p.Name, err)
	}
	return nil
}

// UpdatePolicy replaces a policy's fields; ErrNotFound if there is none.
func (c *Catalog) UpdatePolicy(p *Policy) error {
	return c.write(func(tx *txn) error {
		return execOne(tx, fmt.Sprintf("policy %q", p.Name),
			`UPDATE policies SET `+assignments(policyColumns)+` WHERE name = ?`, append(policyArgs(p), p.Name)...)
	})
}

// PolicyRan records that the scheduler started a policy for a slot. It
// succeeds only if the policy's last slot is still before slot, so two
// schedulers (or a scheduler and a restart) never start one slot twice.
func (c *Catalog) PolicyRan(name string, at, slot time.Time) (bool, error) {
	var n int64
	err := c.write(func(tx *txn) error {
		res, err := tx.Exec(`UPDATE policies SET last_run = ?, last_slot = ? WHERE name = ? AND (last_slot IS NULL OR last_slot < ?)`,
			toDB(at), toDB(slot), name, slot.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("catalog: policy %q: %w", name, err)
	}
	return n == 1, nil
}

// Policy returns the named policy, or ErrNotFound.
func (c *Catalog) Policy(name string) (*Policy, error) {
	ps, err := c.queryPolicies(`WHERE name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("catalog: policy %q: %w", name, ErrNotFound)
	}
	return ps[0], nil
}

// Policies lists every policy by name.
func (c *Catalog) Policies() ([]*Policy, error) { return c.queryPolicies(``) }

// DeletePolicy removes a policy (its savesets stay, and keep its name).
func (c *Catalog) DeletePolicy(name string) error {
	return c.write(func(tx *txn) error {
		return execOne(tx, fmt.Sprintf("policy %q", name), `DELETE FROM policies WHERE name = ?`, name)
	})
}

func (c *Catalog) queryPolicies(where string, args ...any) ([]*Policy, error) {
	rows, err := c.db.Query(`SELECT name, `+policyColumns+` FROM policies `+where+` ORDER BY name`, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: policies: %w", err)
	}
	defer rows.Close()
	var out []*Policy
	for rows.Next() {
		var p Policy
		var created, lastRun, lastSlot sql.NullInt64
		if err := rows.Scan(&p.Name, &p.Client, &p.Selection, &p.FullCron, &p.DiffCron, &p.IncrCron, &p.Zone,
			&p.KeepGenerations, &p.KeepDays, &p.Library, &p.Pool, &p.Verify, &p.BWLimit, &p.Compress, &p.CopyTo,
			&created, &lastRun, &lastSlot, &p.Encrypt); err != nil {
			return nil, fmt.Errorf("catalog: policies: %w", err)
		}
		p.Created, p.LastRun, p.LastSlot = fromDB(created), fromDB(lastRun), fromDB(lastSlot)
		out = append(out, &p)
	}
	return out, rows.Err()
}

// ScratchPool is the pool of blank and recycled tapes any policy may take.
const ScratchPool = ""

// TapePool returns the pool a tape belongs to (ScratchPool for none).
func (c *Catalog) TapePool(barcode string) (string, error) {
	var pool string
	err := c.db.QueryRow(`SELECT pool FROM tapes WHERE barcode = ?`, barcode).Scan(&pool)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("catalog: tape %s: %w", barcode, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("catalog: tape %s: %w", barcode, err)
	}
	return pool, nil
}

// SetTapePool moves a tape into a pool (ScratchPool returns it to scratch).
func (c *Catalog) SetTapePool(barcode, pool string) error {
	return c.write(func(tx *txn) error {
		return execOne(tx, "tape "+barcode, `UPDATE tapes SET pool = ? WHERE barcode = ?`, pool, barcode)
	})
}

// TapePools returns every tape's pool, by barcode.
func (c *Catalog) TapePools() (map[string]string, error) {
	rows, err := c.db.Query(`SELECT barcode, pool FROM tapes`)
	if err != nil {
		return nil, fmt.Errorf("catalog: tape pools: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var bc, pool string
		if err := rows.Scan(&bc, &pool); err != nil {
			return nil, err
		}
		out[bc] = pool
	}
	return out, rows.Err()
}

// Setting returns a named server setting ("" when unset).
func (c *Catalog) Setting(name string) (string, error) {
	var v string
	err := c.db.QueryRow(`SELECT value FROM settings WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// SetSetting stores a named server setting.
func (c *Catalog) SetSetting(name, value string) error {
	_, err := c.db.Exec(`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, value)
	return err
}
