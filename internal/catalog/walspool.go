package catalog

import (
	"database/sql"
	"fmt"
	"time"
)

// WALSpool is what an agent last reported of one PostgreSQL cluster's WAL
// spool (kura wal archive on the agent's machine): the files that wait
// there for the server, and how the last sends went. Times are the
// server's: the server turns the ages the agent reports into moments on
// its own clock, so a client's wrong clock cannot hide a backlog.
type WALSpool struct {
	Client, Cluster string
	Files           int       // WAL files waiting in the spool
	Oldest          string    // the oldest waiting file; "" when none waits
	OldestSince     time.Time // when it was spooled; zero when none waits
	LastArchived    string    // the last file the server stored
	LastArchivedAt  time.Time // when; zero when none was yet
	LastError       string    // why the last send failed; "" once a file was sent after it
	LastErrorAt     time.Time
	Reported        time.Time // when the agent reported this state
}

const walSpoolColumns = `client, cluster, files, oldest, oldest_since, last_archived, last_archived_at, last_error, last_error_at, reported`

// SetWALSpools replaces what is recorded of client's WAL spools with
// spools (each one's Client is client), in one transaction: a cluster the
// report does not name any more is forgotten. ErrInvalid for a negative
// file count.
func (c *Catalog) SetWALSpools(client string, spools []WALSpool) error {
	for _, s := range spools {
		if s.Files < 0 || s.Cluster == "" {
			return fmt.Errorf("catalog: WAL spool %s/%s of %d files: %w", client, s.Cluster, s.Files, ErrInvalid)
		}
	}
	err := c.write(func(tx *txn) error {
		if _, err := tx.Exec(`DELETE FROM wal_spools WHERE client = ?`, client); err != nil {
			return err
		}
		for _, s := range spools {
			if _, err := tx.Exec(`INSERT INTO wal_spools (`+walSpoolColumns+`) VALUES (`+placeholders(walSpoolColumns)+`)`,
				client, s.Cluster, s.Files, s.Oldest, toDB(s.OldestSince), s.LastArchived, toDB(s.LastArchivedAt),
				s.LastError, toDB(s.LastErrorAt), toDB(s.Reported)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("catalog: recording the WAL spools of %s: %w", client, err)
	}
	return nil
}

// WALSpools lists the recorded WAL spools of every client (client == "")
// or of one, by client and cluster.
func (c *Catalog) WALSpools(client string) ([]WALSpool, error) {
	q, args := `SELECT `+walSpoolColumns+` FROM wal_spools ORDER BY client, cluster`, []any(nil)
	if client != "" {
		q, args = `SELECT `+walSpoolColumns+` FROM wal_spools WHERE client = ? ORDER BY cluster`, []any{client}
	}
	rows, err := c.db.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing WAL spools: %w", err)
	}
	defer rows.Close()
	var out []WALSpool
	for rows.Next() {
		var (
			s                                  WALSpool
			since, archived, errAt, reportedAt sql.NullInt64
		)
		if err := rows.Scan(&s.Client, &s.Cluster, &s.Files, &s.Oldest, &since, &s.LastArchived, &archived,
			&s.LastError, &errAt, &reportedAt); err != nil {
			return nil, fmt.Errorf("catalog: listing WAL spools: %w", err)
		}
		s.OldestSince, s.LastArchivedAt, s.LastErrorAt, s.Reported = fromDB(since), fromDB(archived), fromDB(errAt), fromDB(reportedAt)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing WAL spools: %w", err)
	}
	return out, nil
}
