package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kura-backup/kura/internal/pgtest"
)

// postgres is the package's PostgreSQL server (pgsrv, postgres_test.go),
// started by the first test that needs it and stopped by TestMain.
func postgres(t *testing.T) *pgtest.Server {
	t.Helper()
	pgsrv.once.Do(func() { pgsrv.srv, pgsrv.err = pgtest.Start("fsync=off") })
	if pgsrv.err != nil {
		t.Fatalf("PostgreSQL for the tests (scripts/test.sh installs it): %v", pgsrv.err)
	}
	return pgsrv.srv
}

// pgTool runs one of PostgreSQL's programs against the server.
func pgTool(t *testing.T, s *pgtest.Server, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), s.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// fillDatabase makes a database worth restoring: pgbench's tables and
// data, a sequence, a table that uses it, a view and a function.
func fillDatabase(t *testing.T, s *pgtest.Server, db string) {
	t.Helper()
	pgTool(t, s, "pgbench", "--initialize", "--scale=1", "--quiet", db)
	pgTool(t, s, "psql", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", `
		CREATE SEQUENCE ticket_no START 1000;
		CREATE TABLE tickets (id int PRIMARY KEY DEFAULT nextval('ticket_no'), note text, at timestamptz);
		INSERT INTO tickets (note, at) SELECT 'note ' || g, '2026-12-01'::timestamptz + g * interval '1 minute' FROM generate_series(1, 500) g;
		CREATE VIEW rich AS SELECT aid, abalance FROM pgbench_accounts WHERE abalance > 0 OR aid % 1000 = 0;
		CREATE FUNCTION balance_of(a int) RETURNS int LANGUAGE sql AS 'SELECT abalance FROM pgbench_accounts WHERE aid = a';
		UPDATE pgbench_accounts SET abalance = aid % 97 WHERE aid % 7 = 0;`)
}

// snapshot is what a user compares after a restore: every table's rows
// and a checksum of its contents, the view, the function and the
// sequence.
func snapshot(t *testing.T, s *pgtest.Server, db string) map[string]string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	out := map[string]string{}
	rows, err := c.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 5 {
		t.Fatalf("database %s has only tables %v", db, tables)
	}
	for _, tb := range tables {
		var n int64
		var sum string
		q := fmt.Sprintf("SELECT count(*), coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') FROM %s x", pgx.Identifier{tb}.Sanitize())
		if err := c.QueryRow(ctx, q).Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		out["table "+tb] = fmt.Sprintf("%d rows, md5 %s", n, sum)
	}
	for name, q := range map[string]string{
		"view":     "SELECT count(*)::text || ' ' || sum(abalance)::text FROM rich",
		"function": "SELECT balance_of(49)::text",
		"sequence": "SELECT last_value::text FROM ticket_no",
	} {
		var v string
		if err := c.QueryRow(ctx, q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = v
	}
	return out
}

func sameSnapshot(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d objects compared, want %d", what, len(got), len(want))
	}
}

// A database backed up with the postgresql plug-in, dropped, and restored
// under a new name and under its own (pg_restore with jobs): every table,
// the view, the function and the sequence are as they were.
func TestPostgreSQLBackupDropRestore(t *testing.T) {
	t.Parallel()
	s := postgres(t)
	db, err := s.CreateDatabase(context.Background(), "app")
	if err != nil {
		t.Fatal(err)
	}
	fillDatabase(t, s, db)
	want := snapshot(t, s, db)

	k := newKura(t)
	k.env = s.Env()
	f := k.backup("--plugin", "postgresql", "--db", db)
	if f.Files != 2 {
		t.Errorf("backup stored %d files, want 2 (globals.sql and %s.dump)", f.Files, db)
	}
	id := itoa64(f.SavesetID)
	ls := k.ok("ls", id, "postgresql")
	for _, name := range []string{"globals.sql", db + ".dump"} {
		if !strings.Contains(ls.stdout, name) {
			t.Errorf("ls does not show %s:\n%s", name, ls)
		}
	}
	pgTool(t, s, "dropdb", db)

	k.ok("restore", id, "--to-db", db+"_copy")
	sameSnapshot(t, "restored under a new name", want, snapshot(t, s, db+"_copy"))
	k.ok("restore", id, "--to-db", db, "--jobs", "2")
	sameSnapshot(t, "restored under its name with 2 jobs", want, snapshot(t, s, db))

	// A database that exists is never written into.
	r := k.expect(exitFailure, "restore", id, "--to-db", db)
	if !strings.Contains(r.stderr, "already exists") {
		t.Errorf("restoring onto an existing database should say so:\n%s", r)
	}
	sameSnapshot(t, "the existing database after a refused restore", want, snapshot(t, s, db))

	// As files: the dump is pg_restore's, the globals psql's.
	to := filepath.Join(k.dir, "files")
	k.ok("restore", id, "--to", to)
	list := pgTool(t, s, "pg_restore", "--list", filepath.Join(to, "postgresql", db+".dump"))
	for _, obj := range []string{"TABLE public pgbench_accounts", "VIEW public rich", "FUNCTION public balance_of", "SEQUENCE public ticket_no"} {
		if !strings.Contains(list, obj) {
			t.Errorf("pg_restore --list of the restored file has no %s", obj)
		}
	}
	if b, err := os.ReadFile(filepath.Join(to, "postgresql", "globals.sql")); err != nil || !strings.Contains(string(b), "ROLE") {
		t.Errorf("globals.sql: %v\n%.300s", err, b)
	}
}

// All databases: one dump each; a restore into a database chooses one
// with --include. Failures name their cause and leave no complete saveset.
func TestPostgreSQLAllDatabasesAndFailures(t *testing.T) {
	t.Parallel()
	s := postgres(t)
	db, err := s.CreateDatabase(context.Background(), "all")
	if err != nil {
		t.Fatal(err)
	}
	pgTool(t, s, "psql", "--no-psqlrc", "-d", db, "-c", "CREATE TABLE t AS SELECT g AS v FROM generate_series(1, 100) g")
	k := newKura(t)
	k.env = s.Env()
	f := k.backup("--plugin", "postgresql", "--all-databases")
	id := itoa64(f.SavesetID)
	ls := k.ok("ls", id, "postgresql")
	for _, name := range []string{"globals.sql", db + ".dump", "postgres.dump"} {
		if !strings.Contains(ls.stdout, name) {
			t.Errorf("ls does not show %s:\n%s", name, ls)
		}
	}
	r := k.expect(exitFailure, "restore", id, "--to-db", db+"_x")
	if !strings.Contains(r.stderr, "--include") || !strings.Contains(r.stderr, db+".dump") {
		t.Errorf("several dumps and no --include: the error should list them and say --include:\n%s", r)
	}
	k.ok("restore", id, "--to-db", db+"_x", "--include", "postgresql/"+db+".dump")
	var n int
	c, err := pgx.Connect(context.Background(), s.URL(db+"_x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 100 {
		t.Errorf("restored table t: %d rows, %v; want 100", n, err)
	}

	// A database that does not exist, and a user that does not: the job
	// fails with pg_dump's own words; nothing is complete.
	r = k.expect(exitFailure, "backup", "--plugin", "postgresql", "--db", "nosuchdb")
	if !strings.Contains(r.stderr, "pg_dump of nosuchdb") || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("a missing database should fail naming pg_dump's error:\n%s", r)
	}
	bad := *k
	bad.env = append(append([]string{}, s.Env()...), "PGUSER=nobody_here")
	r = bad.expect(exitFailure, "backup", "--plugin", "postgresql", "--db", db)
	if !strings.Contains(r.stderr, "nobody_here") {
		t.Errorf("wrong credentials should fail naming the role:\n%s", r)
	}
	var sets []struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	k.json(0, &sets, "savesets", "--json")
	for _, ss := range sets {
		if ss.ID != f.SavesetID && ss.Status == "complete" {
			t.Errorf("saveset %d of a failed backup is complete", ss.ID)
		}
	}
	// A name that could be read as connection settings never reaches a tool.
	k.expect(exitUsage, "backup", "--plugin", "postgresql", "--db", "host=evil.example")
	k.expect(exitUsage, "restore", id, "--to-db", "-x")
}
