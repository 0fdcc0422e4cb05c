package catalog

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ErrNotEmpty: the catalog a copy goes to already holds records.
var ErrNotEmpty = errors.New("target catalog is not empty")

// ErrCopyMismatch: a table's rows in the copy differ from the original's.
var ErrCopyMismatch = errors.New("copy differs from the original")

// table is a catalog table: its name and its primary key, the order in
// which its rows are copied and summed. Parents come before children.
type table struct {
	name string
	key  string
	// id is how the table's ID key is declared in the schema, "{autoid}"
	// or "{rowid}", or "": a copy raises the counter behind an {autoid}
	// key to the original's (IDs are never reused), and that behind a
	// {rowid} key past its highest ID where explicit IDs do not move it
	// (PostgreSQL's identity columns).
	id string
}

var tables = []table{
	{name: "libraries", key: "name"},
	{name: "tapes", key: "barcode"},
	{name: "selections", key: "client, name"},
	{name: "savesets", key: "id", id: "{autoid}"},
	{name: "saveset_parts", key: "saveset_id, kind, seq"},
	{name: "saveset_copies", key: "saveset_id, copy"},
	{name: "jobs", key: "id", id: "{autoid}"},
	{name: "job_leases", key: "job_id"},
	{name: "drive_leases", key: "library, drive"},
	{name: "server_leases", key: "name"},
	{name: "clients", key: "name"},
	{name: "wal_spools", key: "client, cluster"},
	{name: "tokens", key: "id", id: "{rowid}"},
	{name: "policies", key: "name"},
	{name: "settings", key: "name"},
	{name: "console_sessions", key: "hash"},
}

// TableSum is what a copy checked of one table: its rows and a checksum
// over them, computed the same way on both catalogs (SHA-256 over every
// column of every row, in key order, each value in a typed encoding that
// does not depend on the database).
type TableSum struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	Sum   string `json:"sum"` // hex
}

// reader is *db or *sql.Tx.
type reader interface {
	Query(q string, args ...any) (*sql.Rows, error)
}

// readTx is a read transaction with the dialect's placeholders.
type readTx struct {
	tx *sql.Tx
	d  *dialect
}

func (r readTx) Query(q string, args ...any) (*sql.Rows, error) {
	return r.tx.Query(r.d.rebind(q), r.d.args(args)...)
}

// beginRead starts a transaction that sees one state of the whole catalog.
func (c *Catalog) beginRead() (*sql.Tx, error) {
	if c.db.d.postgres() {
		return c.db.sql.BeginTx(bg, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	// SQLite: every transaction is serializable (and this one, begun
	// IMMEDIATE, keeps writers out while it reads).
	return c.db.sql.BeginTx(bg, nil)
}

// CopyTo copies every record of c into dst, which must be an empty catalog
// (ErrNotEmpty) of the same schema, in one transaction of dst: either all
// of it is copied or nothing is. The ID counters of dst are raised to those
// of c, so that dst never hands out an ID c has used. It then sums every
// table on both sides and returns the sums, or ErrCopyMismatch if any
// differs. c is read in one transaction and may be in use meanwhile.
func (c *Catalog) CopyTo(dst *Catalog) ([]TableSum, error) {
	return c.copyTo(dst, false)
}

// ReplaceWith replaces every record of c with those of src, in one
// transaction of c, as CopyTo would copy them into an empty c; c's ID
// counters never go down. It is how a catalog backup (a SQLite snapshot)
// is restored into a PostgreSQL catalog.
func (c *Catalog) ReplaceWith(src *Catalog) ([]TableSum, error) {
	return src.copyTo(c, true)
}

func (c *Catalog) copyTo(dst *Catalog, replace bool) ([]TableSum, error) {
	sv, err := c.SchemaVersion()
	if err != nil {
		return nil, err
	}
	dv, err := dst.SchemaVersion()
	if err != nil {
		return nil, err
	}
	if sv != dv {
		return nil, fmt.Errorf("catalog: copy: schema version %d to %d: %w", sv, dv, ErrInvalid)
	}
	src, err := c.beginRead()
	if err != nil {
		return nil, fmt.Errorf("catalog: copy: %w", err)
	}
	defer src.Rollback()
	sr := readTx{tx: src, d: c.db.d}
	if err := checkTables(sr, c.db.d); err != nil {
		return nil, err
	}
	var want []TableSum
	err = dst.write(func(tx *txn) error {
		if replace {
			for i := len(tables) - 1; i >= 0; i-- {
				if _, err := tx.Exec(`DELETE FROM ` + tables[i].name); err != nil {
					return fmt.Errorf("table %s: %w", tables[i].name, err)
				}
			}
		}
		for _, tb := range tables {
			var n int64
			if err := tx.QueryRow(`SELECT COUNT(*) FROM ` + tb.name).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%w: table %s has %d rows", ErrNotEmpty, tb.name, n)
			}
		}
		for _, tb := range tables {
			if err := copyTable(sr, tx, tb); err != nil {
				return fmt.Errorf("table %s: %w", tb.name, err)
			}
			if tb.id == "{autoid}" || tb.id == "{rowid}" && tx.d.postgres() {
				last, err := c.db.d.lastID(sr, tb.name)
				if err != nil {
					return fmt.Errorf("table %s: %w", tb.name, err)
				}
				if err := tx.d.raiseSequence(tx, tb.name, last); err != nil {
					return fmt.Errorf("table %s: %w", tb.name, err)
				}
			}
		}
		var err error
		want, err = sumTables(sr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: copy: %w", err)
	}
	got, err := dst.Sums()
	if err != nil {
		return nil, err
	}
	for i := range want {
		if got[i] != want[i] {
			return want, fmt.Errorf("catalog: copy: table %s: %d rows, sum %s; the original has %d rows, sum %s: %w",
				got[i].Table, got[i].Rows, got[i].Sum, want[i].Rows, want[i].Sum, ErrCopyMismatch)
		}
	}
	return want, nil
}

// Sums returns the row count and checksum of every table (see TableSum),
// read in one transaction.
func (c *Catalog) Sums() ([]TableSum, error) {
	tx, err := c.beginRead()
	if err != nil {
		return nil, fmt.Errorf("catalog: sums: %w", err)
	}
	defer tx.Rollback()
	sums, err := sumTables(readTx{tx: tx, d: c.db.d})
	if err != nil {
		return nil, fmt.Errorf("catalog: sums: %w", err)
	}
	return sums, nil
}

// checkTables fails if the catalog has a table the copy does not know, so
// that a table added by a migration cannot be left behind by a copy.
func checkTables(r reader, d *dialect) error {
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'`
	if d.postgres() {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	rows, err := r.Query(q)
	if err != nil {
		return fmt.Errorf("catalog: listing tables: %w", err)
	}
	defer rows.Close()
	known := map[string]bool{"schema_version": true}
	for _, tb := range tables {
		known[tb.name] = true
	}
	var unknown []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("catalog: copy: unknown tables %s: %w", strings.Join(unknown, ", "), ErrInvalid)
	}
	return nil
}

// columns lists the columns of a table, in the order the database has them.
func columns(r reader, name string) ([]string, error) {
	rows, err := r.Query(`SELECT * FROM ` + name + ` WHERE 1 = 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return rows.Columns()
}

// copyTable inserts every row of tb from r into tx.
func copyTable(r reader, tx *txn, tb table) error {
	cols, err := columns(r, tb.name)
	if err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	rows, err := r.Query(`SELECT ` + list + ` FROM ` + tb.name + ` ORDER BY ` + tb.key)
	if err != nil {
		return err
	}
	defer rows.Close()
	ins := `INSERT INTO ` + tb.name + ` (` + list + `) VALUES (` + placeholders(list) + `)`
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if _, err := tx.Exec(ins, vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// sumTables sums every table of tables.
func sumTables(r reader) ([]TableSum, error) {
	var sums []TableSum
	for _, tb := range tables {
		s, err := sumTable(r, tb)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", tb.name, err)
		}
		sums = append(sums, s)
	}
	return sums, nil
}

// sumTable is the TableSum of one table. The columns are taken in name
// order, so that a column's place in the table does not count.
func sumTable(r reader, tb table) (TableSum, error) {
	cols, err := columns(r, tb.name)
	if err != nil {
		return TableSum{}, err
	}
	sort.Strings(cols)
	rows, err := r.Query(`SELECT ` + strings.Join(cols, ", ") + ` FROM ` + tb.name + ` ORDER BY ` + tb.key)
	if err != nil {
		return TableSum{}, err
	}
	defer rows.Close()
	h := sha256.New()
	for _, c := range cols {
		writeField(h, "C", c)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return TableSum{}, err
		}
		n++
		h.Write([]byte{'R'})
		for _, v := range vals {
			if err := sumValue(h, v); err != nil {
				return TableSum{}, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return TableSum{}, err
	}
	return TableSum{Table: tb.name, Rows: n, Sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// sumValue adds one value to h: a type letter, a length and the bytes, so
// that no two different rows encode alike. Text and bytes are alike, as
// the two databases may return a TEXT value as either; text is summed as
// PostgreSQL stores it (bytes that are not UTF-8, and NUL, as U+FFFD), so
// that a copy from SQLite to PostgreSQL sums the same.
func sumValue(h hash.Hash, v any) error {
	switch v := v.(type) {
	case nil:
		h.Write([]byte{'N'})
	case int64:
		writeField(h, "I", strconv.FormatInt(v, 10))
	case float64:
		writeField(h, "F", strconv.FormatUint(math.Float64bits(v), 16))
	case string:
		writeField(h, "S", pgText(v))
	case []byte:
		writeField(h, "S", pgText(string(v)))
	case bool:
		writeField(h, "I", strconv.FormatInt(boolInt(v), 10))
	default:
		return fmt.Errorf("value of type %T: %w", v, ErrInvalid)
	}
	return nil
}

func writeField(h hash.Hash, kind, s string) {
	h.Write([]byte(kind + strconv.Itoa(len(s)) + ":" + s))
}
