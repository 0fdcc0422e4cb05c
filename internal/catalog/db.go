package catalog

import (
	"database/sql"
	"strings"
)

// db is the catalog's database with its dialect: every query goes through
// it, written with ? placeholders.
type db struct {
	sql  *sql.DB
	d    *dialect
	gate *gate // SQLite: this process's writers take turns (gate.go); nil on PostgreSQL
}

// txn is a write transaction on a db.
type txn struct {
	tx *sql.Tx
	d  *dialect
}

func (b *db) Close() error { return b.sql.Close() }

// Exec runs a statement. On PostgreSQL a statement that changes rows runs
// in a write transaction, so that it waits for, and is seen by, the
// catalog's other writers as on SQLite.
func (b *db) Exec(q string, args ...any) (sql.Result, error) {
	if b.d.postgres() && changesRows(q) {
		var res sql.Result
		err := b.write(func(tx *txn) error {
			var err error
			res, err = tx.Exec(q, args...)
			return err
		})
		return res, err
	}
	if b.gate != nil && changesRows(q) {
		if err := b.gate.enter(false); err != nil {
			return nil, err
		}
		defer b.gate.leave()
	}
	return b.sql.Exec(b.d.rebind(q), b.d.args(args)...)
}

func (b *db) Query(q string, args ...any) (*sql.Rows, error) {
	return b.sql.Query(b.d.rebind(q), b.d.args(args)...)
}

func (b *db) QueryRow(q string, args ...any) *sql.Row {
	return b.sql.QueryRow(b.d.rebind(q), b.d.args(args)...)
}

// write runs fn in a write transaction, committing if fn returns nil.
func (b *db) write(fn func(tx *txn) error) error { return b.writeTurn(false, fn) }

// writeTurn is write; an urgent one starts work (gate.go) and goes before
// the other writers waiting.
func (b *db) writeTurn(urgent bool, fn func(tx *txn) error) error {
	if b.gate != nil {
		if err := b.gate.enter(urgent); err != nil {
			return err
		}
		defer b.gate.leave()
	}
	tx, err := b.d.beginWrite(b.sql)
	if err != nil {
		return err
	}
	if err := fn(&txn{tx: tx, d: b.d}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (t *txn) Exec(q string, args ...any) (sql.Result, error) {
	return t.tx.Exec(t.d.rebind(q), t.d.args(args)...)
}

func (t *txn) Query(q string, args ...any) (*sql.Rows, error) {
	return t.tx.Query(t.d.rebind(q), t.d.args(args)...)
}

func (t *txn) QueryRow(q string, args ...any) *sql.Row {
	return t.tx.QueryRow(t.d.rebind(q), t.d.args(args)...)
}

// changesRows reports whether q is an INSERT, UPDATE or DELETE.
func changesRows(q string) bool {
	q = strings.TrimSpace(q)
	i := strings.IndexAny(q, " \t\n(")
	if i < 0 {
		i = len(q)
	}
	switch strings.ToUpper(q[:i]) {
	case "INSERT", "UPDATE", "DELETE":
		return true
	}
	return false
}
