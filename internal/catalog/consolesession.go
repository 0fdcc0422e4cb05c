package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ConsoleSession is one signed-in browser of the web console, as every
// server of the catalog sees it. The catalog keeps only the hash of the
// session's ID (the caller hashes; SHA-256 in the console), never the ID a
// browser holds, so a copy of the catalog signs nobody in.
type ConsoleSession struct {
	Hash     string    // hash of the session ID, hex
	User     string    // "" for the admin token
	Role     string    // the role at sign-in
	Stamp    string    // fingerprint of the credential signed in with
	Created  time.Time // sign-in
	LastUsed time.Time // the last request, to the caller's resolution
	Expires  time.Time // the end of the session's absolute lifetime
}

const consoleSessionColumns = `hash, username, role, stamp, created, last_used, expires`

// AddConsoleSession records a new session. A hash, a creation and an
// expiry time are required (ErrInvalid); a hash already recorded is
// ErrExists. LastUsed is Created when zero.
func (c *Catalog) AddConsoleSession(s ConsoleSession) error {
	switch {
	case s.Hash == "":
		return fmt.Errorf("catalog: console session without a hash: %w", ErrInvalid)
	case s.Created.IsZero() || s.Expires.IsZero():
		return fmt.Errorf("catalog: console session without its times: %w", ErrInvalid)
	}
	if s.LastUsed.IsZero() {
		s.LastUsed = s.Created
	}
	err := c.write(func(tx *txn) error {
		_, err := tx.Exec(`INSERT INTO console_sessions (`+consoleSessionColumns+`) VALUES (`+placeholders(consoleSessionColumns)+`)`,
			s.Hash, s.User, s.Role, s.Stamp, toDB(s.Created), toDB(s.LastUsed), toDB(s.Expires))
		return err
	})
	if isDuplicate(err) {
		return fmt.Errorf("catalog: console session: %w", ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: recording a console session: %w", err)
	}
	return nil
}

// ConsoleSessionByHash is the session with this hash (ErrNotFound when
// there is none), expired or not: the caller decides, and ends it.
func (c *Catalog) ConsoleSessionByHash(hash string) (*ConsoleSession, error) {
	var (
		s                        ConsoleSession
		created, used, expiresAt sql.NullInt64
	)
	err := c.db.QueryRow(`SELECT `+consoleSessionColumns+` FROM console_sessions WHERE hash = ?`, hash).
		Scan(&s.Hash, &s.User, &s.Role, &s.Stamp, &created, &used, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("catalog: console session: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: reading a console session: %w", err)
	}
	s.Created, s.LastUsed, s.Expires = fromDB(created), fromDB(used), fromDB(expiresAt)
	return &s, nil
}

// TouchConsoleSession records a request of the session at time at. It
// never moves LastUsed back (two servers, or two requests, may touch one
// session out of order). A session that is not there is no error: it was
// signed out meanwhile, and stays so.
func (c *Catalog) TouchConsoleSession(hash string, at time.Time) error {
	err := c.write(func(tx *txn) error {
		_, err := tx.Exec(`UPDATE console_sessions SET last_used = ? WHERE hash = ? AND last_used < ?`,
			toDB(at), hash, toDB(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("catalog: touching a console session: %w", err)
	}
	return nil
}

// DeleteConsoleSession ends a session (sign-out); one that is not there
// is no error.
func (c *Catalog) DeleteConsoleSession(hash string) error {
	err := c.write(func(tx *txn) error {
		_, err := tx.Exec(`DELETE FROM console_sessions WHERE hash = ?`, hash)
		return err
	})
	if err != nil {
		return fmt.Errorf("catalog: ending a console session: %w", err)
	}
	return nil
}

// PruneConsoleSessions deletes the sessions that are over at now: past
// their expiry time, or unused since before idleSince. It returns how many
// it deleted.
func (c *Catalog) PruneConsoleSessions(now, idleSince time.Time) (int64, error) {
	var n int64
	err := c.write(func(tx *txn) error {
		res, err := tx.Exec(`DELETE FROM console_sessions WHERE expires <= ? OR last_used < ?`, toDB(now), toDB(idleSince))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("catalog: pruning console sessions: %w", err)
	}
	return n, nil
}
