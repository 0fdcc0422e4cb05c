package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/rules"
)

// MaxClientNameLen is the longest client name ValidClientName accepts.
const MaxClientNameLen = rules.MaxClientNameLen

// Client is a machine enrolled with the server: the agent on it connects
// with the certificate the server issued at enrollment.
type Client struct {
	Name            string    `json:"name"`
	CertSerial      string    `json:"cert_serial"`
	CertFingerprint string    `json:"cert_fingerprint"` // hex SHA-256 of the certificate DER, lower case
	Enrolled        time.Time `json:"enrolled"`         // set to now by EnrollClient when zero
	Revoked         time.Time `json:"revoked"`          // zero while the client is active
	LastSeen        time.Time `json:"last_seen"`
	Address         string    `json:"address"` // remote address it last connected from
	BWLimit         int64     `json:"bwlimit"` // default bytes/s for its jobs; 0 = no limit
	// Encrypt: the client's agent encrypts its backups (age, after
	// compression) with a key the server never holds.
	Encrypt bool `json:"encrypt"`
	// Kind is KindAgent (a machine whose files are backed up) or KindNode
	// (a storage node that owns libraries); "" is taken as KindAgent.
	Kind string `json:"kind"`
}

// Kinds of enrolled machines.
const (
	KindAgent = "agent"
	KindNode  = "node"
)

// IsNode reports whether the client is a storage node.
func (cl *Client) IsNode() bool { return cl.Kind == KindNode }

// ValidClientName checks a client name: 1 to MaxClientNameLen characters,
// each a letter, digit, '.', '_' or '-', not starting with '.' or '-'
// (rules.ClientName). The error wraps ErrInvalid.
func ValidClientName(name string) error {
	if err := rules.ClientName(name); err != nil {
		return fmt.Errorf("catalog: %v: %w", err, ErrInvalid)
	}
	return nil
}

// validFingerprint reports whether s is a hex SHA-256 digest.
func validFingerprint(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return true
}

const clientColumns = `name, cert_serial, cert_fingerprint, enrolled, revoked, last_seen, address, bwlimit, encrypt, kind`

func scanClient(row interface{ Scan(...any) error }) (*Client, error) {
	var (
		cl                      Client
		enrolled, revoked, seen sql.NullInt64
	)
	if err := row.Scan(&cl.Name, &cl.CertSerial, &cl.CertFingerprint, &enrolled, &revoked, &seen,
		&cl.Address, &cl.BWLimit, &cl.Encrypt, &cl.Kind); err != nil {
		return nil, err
	}
	cl.Enrolled, cl.Revoked, cl.LastSeen = fromDB(enrolled), fromDB(revoked), fromDB(seen)
	return &cl, nil
}

// EnrollClient records a newly enrolled client. The name must pass
// ValidClientName and the fingerprint be a hex SHA-256 digest (it is stored in
// lower case); BWLimit must not be negative. A name already recorded, revoked
// or not, is ErrExists: enrolling it again needs RemoveClient first.
func (c *Catalog) EnrollClient(cl Client) error {
	if err := ValidClientName(cl.Name); err != nil {
		return err
	}
	if !validFingerprint(cl.CertFingerprint) {
		return fmt.Errorf("catalog: client %q: certificate fingerprint %q is not a hex SHA-256 digest: %w",
			cl.Name, cl.CertFingerprint, ErrInvalid)
	}
	if cl.BWLimit < 0 {
		return fmt.Errorf("catalog: client %q: bandwidth limit %d: %w", cl.Name, cl.BWLimit, ErrInvalid)
	}
	if cl.Enrolled.IsZero() {
		cl.Enrolled = now()
	}
	if cl.Kind == "" {
		cl.Kind = KindAgent
	}
	if !oneOf(cl.Kind, KindAgent, KindNode) {
		return fmt.Errorf("catalog: client %q: kind %q: %w", cl.Name, cl.Kind, ErrInvalid)
	}
	_, err := c.db.Exec(`INSERT INTO clients (`+clientColumns+`) VALUES (`+placeholders(clientColumns)+`)`,
		cl.Name, cl.CertSerial, strings.ToLower(cl.CertFingerprint), toDB(cl.Enrolled), toDB(cl.Revoked),
		toDB(cl.LastSeen), cl.Address, cl.BWLimit, cl.Encrypt, cl.Kind)
	if isDuplicate(err) {
		return fmt.Errorf("catalog: client %q: %w", cl.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: enrolling client %q: %w", cl.Name, err)
	}
	return nil
}

// Client returns the named client, or ErrNotFound.
func (c *Catalog) Client(name string) (*Client, error) {
	cl, err := scanClient(c.db.QueryRow(`SELECT `+clientColumns+` FROM clients WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("catalog: client %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: client %q: %w", name, err)
	}
	return cl, nil
}

// Clients lists every client, revoked ones included, by name.
func (c *Catalog) Clients() ([]*Client, error) {
	rows, err := c.db.Query(`SELECT ` + clientColumns + ` FROM clients ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing clients: %w", err)
	}
	defer rows.Close()
	var out []*Client
	for rows.Next() {
		cl, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing clients: %w", err)
		}
		out = append(out, cl)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing clients: %w", err)
	}
	return out, nil
}

// RevokeClient marks the named client revoked at time at (now when zero).
// Revoking a revoked client changes nothing: the first time is kept.
// ErrNotFound if there is no such client.
func (c *Catalog) RevokeClient(name string, at time.Time) error {
	if at.IsZero() {
		at = now()
	}
	err := execOne(c.db, "client "+quote(name),
		`UPDATE clients SET revoked = COALESCE(revoked, ?) WHERE name = ?`, toDB(at), name)
	if err != nil {
		return fmt.Errorf("catalog: revoking client: %w", err)
	}
	return nil
}

// RemoveClient forgets the named client, so that the name can be enrolled
// again, and what its agent reported of its WAL spools (the machine that
// takes the name over reports its own). ErrNotFound if there is no such
// client.
func (c *Catalog) RemoveClient(name string) error {
	err := c.write(func(tx *txn) error {
		if err := execOne(tx, "client "+quote(name), `DELETE FROM clients WHERE name = ?`, name); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM wal_spools WHERE client = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("catalog: removing client: %w", err)
	}
	return nil
}

// SeenClient records that the named client connected from addr at time at
// (now when zero). ErrNotFound if there is no such client.
func (c *Catalog) SeenClient(name, addr string, at time.Time) error {
	if at.IsZero() {
		at = now()
	}
	err := execOne(c.db, "client "+quote(name),
		`UPDATE clients SET last_seen = ?, address = ? WHERE name = ?`, toDB(at), addr, name)
	if err != nil {
		return fmt.Errorf("catalog: recording client seen: %w", err)
	}
	return nil
}

// ClientSeen is a sighting of a client: when and from where it called.
type ClientSeen struct {
	Name string
	Addr string
	At   time.Time
}

// SeenClients records many sightings in one write transaction (a server
// with many agents saves them in batches, not one commit per call). A
// name that is not (or no longer) a client is skipped.
func (c *Catalog) SeenClients(seen []ClientSeen) error {
	if len(seen) == 0 {
		return nil
	}
	err := c.write(func(tx *txn) error {
		for _, s := range seen {
			if _, err := tx.Exec(`UPDATE clients SET last_seen = ?, address = ? WHERE name = ?`, toDB(s.At), s.Addr, s.Name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("catalog: recording clients seen: %w", err)
	}
	return nil
}

// SetClientBWLimit sets the default bandwidth limit, in bytes/s, of the named
// client's jobs; 0 removes it. ErrInvalid when negative, ErrNotFound if there
// is no such client.
func (c *Catalog) SetClientBWLimit(name string, bps int64) error {
	if bps < 0 {
		return fmt.Errorf("catalog: client %q: bandwidth limit %d: %w", name, bps, ErrInvalid)
	}
	err := execOne(c.db, "client "+quote(name), `UPDATE clients SET bwlimit = ? WHERE name = ?`, bps, name)
	if err != nil {
		return fmt.Errorf("catalog: setting client bandwidth limit: %w", err)
	}
	return nil
}

// SetClientEncrypt turns the encryption of the named client's new backups
// on or off (savesets already made keep theirs). ErrNotFound if there is no
// such client.
func (c *Catalog) SetClientEncrypt(name string, on bool) error {
	err := execOne(c.db, "client "+quote(name), `UPDATE clients SET encrypt = ? WHERE name = ?`, on, name)
	if err != nil {
		return fmt.Errorf("catalog: setting client encryption: %w", err)
	}
	return nil
}
