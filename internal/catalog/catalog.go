// Package catalog is Kura's catalog: libraries, tapes, selection sets,
// savesets and jobs, kept in one SQLite file (catalog.db in the Kura home)
// or in a PostgreSQL database (Open with a postgres:// URL).
//
// The per-file index of a saveset is not stored here; it is a compact index
// file (see internal/index). The catalog holds one row per saveset, job,
// library, tape and selection set, never one row per backed-up file.
//
// Invariants:
//
//   - The schema only moves forward. Each migration runs once, in a
//     transaction, and schema_version records how many have run. A catalog
//     written by a newer Kura is refused with ErrSchemaTooNew.
//   - Saveset and job IDs are never reused, even after a delete: index files
//     and tapes refer to savesets by ID.
//   - Times are stored as UTC Unix nanoseconds (NULL for the zero time) and
//     are returned in UTC.
//   - Every method is safe for concurrent use, and several processes (the CLI
//     and a server) may open the same catalog: write transactions take the
//     catalog's write lock when they begin (SQLite's, in WAL mode; an
//     advisory lock on PostgreSQL), so writers serialise on both, and a
//     writer waits up to BusyTimeout for another one to finish.
//
// Queries are plain SQL with ? placeholders in the subset both databases
// share; the few words that differ are in dialect.go.
package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/kura-backup/kura/internal/private"
)

// Errors returned by the catalog, to be tested with errors.Is.
var (
	// ErrNotFound: the named or numbered record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a record with that name, barcode or ID already exists.
	ErrExists = errors.New("already exists")
	// ErrInUse: the record is still referred to (a library that holds tapes).
	ErrInUse = errors.New("in use")
	// ErrInvalid: a record has a missing or unknown field value.
	ErrInvalid = errors.New("invalid")
	// ErrSchemaTooNew: the catalog was written by a newer version of Kura.
	ErrSchemaTooNew = errors.New("catalog schema is newer than this program")
)

// BusyTimeout is how long a write waits for another connection or process
// holding the write lock before it fails (ErrBusy).
const BusyTimeout = 10 * time.Second

// PostgresConns is how many connections a catalog on PostgreSQL opens at
// most.
const PostgresConns = 24

// ErrBusy: another writer held the catalog for longer than BusyTimeout.
var ErrBusy = errors.New("catalog busy")

// Catalog is an open catalog database. It is safe for concurrent use.
type Catalog struct {
	db  *db
	dsn string // the path or URL it was opened with
}

// Open opens the catalog named by dsn and brings its schema up to date: a
// postgres:// (or postgresql://) URL is a PostgreSQL database, which must
// exist (its tables are created); anything else is the path of a SQLite
// file, created if it does not exist in a folder that must.
func Open(dsn string) (*Catalog, error) {
	if IsURL(dsn) {
		return openPostgres(dsn)
	}
	return openSQLite(dsn)
}

func openSQLite(path string) (*Catalog, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("catalog: bad path %q: %w", path, ErrInvalid)
	}
	// SQLite would create the file 0644; its -wal and -shm files take the
	// mode of the database file, so creating it private covers all three.
	if err := private.Touch(path); err != nil {
		return nil, fmt.Errorf("catalog: opening %s: %w", path, err)
	}
	// synchronous=FULL: a saveset marked complete must stay complete after a
	// power loss (crash-safety invariant 1), so every commit is fsynced.
	dsn := path + "?_txlock=immediate" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds()) +
		"&_pragma=foreign_keys(1)" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)"
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("catalog: opening %s: %w", path, err)
	}
	return open(sdb, &dialect{name: "sqlite"}, path)
}

// openPostgres opens a PostgreSQL catalog through pgx, which reads the
// password, when the URL has none, from PGPASSWORD or the password file
// (PGPASSFILE, else ~/.pgpass) as libpq does.
func openPostgres(url string) (*Catalog, error) {
	if _, err := pgx.ParseConfig(url); err != nil {
		// pgx's parse errors do not repeat the password.
		return nil, fmt.Errorf("catalog: bad URL %s: %v: %w", Redact(url), err, ErrInvalid)
	}
	sdb, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("catalog: opening %s: %w", Redact(url), err)
	}
	// Writers wait for the write lock on a connection each; the bound
	// keeps a busy server within PostgreSQL's connection limit (100 by
	// default) with room for a standby and the CLI.
	sdb.SetMaxOpenConns(PostgresConns)
	sdb.SetMaxIdleConns(4)
	return open(sdb, &dialect{name: "postgres"}, url)
}

func open(sdb *sql.DB, d *dialect, dsn string) (*Catalog, error) {
	c := &Catalog{db: &db{sql: sdb, d: d}, dsn: dsn}
	if !d.postgres() {
		c.db.gate = &gate{timeout: BusyTimeout}
	}
	// Openers racing on a new SQLite file can get SQLITE_BUSY straight away
	// while one of them switches it to WAL (SQLite does not wait for that
	// lock); the condition is transient, so try again for up to BusyTimeout.
	deadline := time.Now().Add(BusyTimeout)
	var err error
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err = c.migrate()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("catalog: opening %s: %w", Redact(dsn), err)
	}
	return c, nil
}

// Dialect is "sqlite" or "postgres".
func (c *Catalog) Dialect() string { return c.db.d.name }

// String is where the catalog is, fit to print (no password).
func (c *Catalog) String() string { return Redact(c.dsn) }

// Close closes the catalog. Calls after Close fail.
func (c *Catalog) Close() error {
	return c.db.Close()
}

// Snapshot writes a consistent copy of the whole catalog to path, which must
// not exist yet (ErrExists). The copy is itself a catalog that Open accepts:
// a SQLite file, whatever the catalog's database (a PostgreSQL catalog is
// copied with CopyTo).
func (c *Catalog) Snapshot(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("catalog: snapshot %s: %w", path, ErrExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("catalog: snapshot: %w", err)
	}
	if c.db.d.postgres() {
		return c.snapshotCopy(path)
	}
	// VACUUM INTO accepts an empty file, and takes its mode.
	if err := private.Touch(path); err != nil {
		return fmt.Errorf("catalog: snapshot: %w", err)
	}
	if _, err := c.db.Exec("VACUUM INTO ?", path); err != nil {
		os.Remove(path)
		return fmt.Errorf("catalog: snapshot %s: %w", path, err)
	}
	return nil
}

// snapshotCopy is Snapshot by CopyTo into a new SQLite catalog.
func (c *Catalog) snapshotCopy(path string) error {
	fail := func(err error) error {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			os.Remove(p)
		}
		return fmt.Errorf("catalog: snapshot %s: %w", path, err)
	}
	dst, err := openSQLite(path)
	if err != nil {
		return fail(err)
	}
	if _, err := c.CopyTo(dst); err != nil {
		dst.Close()
		return fail(err)
	}
	if err := dst.Close(); err != nil {
		return fail(err)
	}
	return nil
}

// migrate applies, in one write transaction, every migration the catalog has
// not seen yet. Concurrent openers serialise on the write lock, so each
// migration runs exactly once.
func (c *Catalog) migrate() error {
	return c.write(func(tx *txn) error {
		if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return err
		}
		var v int
		err := tx.QueryRow(`SELECT version FROM schema_version`).Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.Exec(`INSERT INTO schema_version (version) VALUES (0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("%w (version %d, this program knows %d)", ErrSchemaTooNew, v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			for _, stmt := range migrations[i] {
				if _, err := tx.Exec(c.db.d.ddl(stmt)); err != nil {
					return fmt.Errorf("migration %d: %w", i+1, err)
				}
			}
		}
		if v < len(migrations) {
			if _, err := tx.Exec(`UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
}

// SchemaVersion reports how many migrations the catalog has applied.
func (c *Catalog) SchemaVersion() (int, error) {
	var v int
	if err := c.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("catalog: %w", err)
	}
	return v, nil
}

// write runs fn in a write transaction (BEGIN IMMEDIATE on SQLite, the
// catalog's advisory lock on PostgreSQL), committing if fn returns nil. A
// writer kept waiting too long gets ErrBusy.
func (c *Catalog) write(fn func(tx *txn) error) error { return c.writeTurn(false, fn) }

// writeUrgent is write for a write that starts work (a job queued, the
// drives of the jobs a queue pass starts): on SQLite it goes before this
// process's other writers waiting for the write lock (gate.go).
func (c *Catalog) writeUrgent(fn func(tx *txn) error) error { return c.writeTurn(true, fn) }

func (c *Catalog) writeTurn(urgent bool, fn func(tx *txn) error) error {
	err := c.db.writeTurn(urgent, fn)
	if err != nil && isBusy(err) && !errors.Is(err, ErrBusy) {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return err
}

// execer is *db or *txn.
type execer interface {
	Exec(query string, args ...any) (sql.Result, error)
}

// execOne runs a statement that must change one row; "no row changed" is
// ErrNotFound for what.
func execOne(e execer, what, query string, args ...any) error {
	res, err := e.Exec(query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

// toDB stores a time as UTC Unix nanoseconds; the zero time is NULL.
func toDB(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// fromDB is the inverse of toDB.
func fromDB(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// encodeList stores a list as JSON text; an empty list is "[]".
func encodeList[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// decodeList is the inverse of encodeList; an empty list comes back nil.
func decodeList[T any](s string, what string) ([]T, error) {
	if s == "" || s == "[]" {
		return nil, nil
	}
	var v []T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", what, err)
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// bg is the context of the catalog's transactions.
var bg = context.Background()

// now is the time given to records created without one.
func now() time.Time { return time.Now().UTC().Round(0) }

// oneOf reports whether v is in allowed.
func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// placeholders returns "?, ?, ..." with one ? per column of a
// comma-separated column list.
func placeholders(cols string) string {
	return strings.TrimSuffix(strings.Repeat("?, ", strings.Count(cols, ",")+1), ", ")
}

// assignments returns "a = ?, b = ?, ..." for a comma-separated column list.
func assignments(cols string) string {
	return strings.ReplaceAll(cols, ",", " = ?,") + " = ?"
}

// DatabaseSize is the size in bytes of a PostgreSQL catalog's database
// (pg_database_size). A SQLite catalog's size is that of its files, which
// the caller stats: ok is false.
func (c *Catalog) DatabaseSize() (size int64, ok bool, err error) {
	if !c.db.d.postgres() {
		return 0, false, nil
	}
	if err := c.db.QueryRow(`SELECT pg_database_size(current_database())`).Scan(&size); err != nil {
		return 0, false, fmt.Errorf("catalog: database size: %w", err)
	}
	return size, true, nil
}
