package plugin

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
)

// PostgreSQL, logical: one file per database in pg_dump's custom format
// (compressed by Kura, so pg_dump's own compression is off: -Z 0) and the
// roles and tablespaces in plain SQL, under postgresql/:
//
//	postgresql/globals.sql     pg_dumpall --globals-only
//	postgresql/NAME.dump       pg_dump --format=custom -Z 0 NAME
//
// Every pg_dump is a consistent snapshot of its database. Restores use
// pg_restore (into a database made with createdb) or psql for globals.sql.

// PostgresDir is the folder of a PostgreSQL saveset's files.
const PostgresDir = "postgresql"

// PostgresGlobals is the file of the roles and tablespaces.
const PostgresGlobals = PostgresDir + "/globals.sql"

// PostgresDump is the file of one database's dump.
func PostgresDump(db string) string { return PostgresDir + "/" + db + ".dump" }

// DumpDatabase is the database a file of a PostgreSQL saveset holds
// ("" when it is not a database dump).
func DumpDatabase(name string) string {
	if rest, ok := strings.CutPrefix(name, PostgresDir+"/"); ok {
		if db, ok := strings.CutSuffix(rest, ".dump"); ok && ValidDatabase(db) == nil {
			return db
		}
	}
	return ""
}

func postgresSteps(ctx context.Context, s Source) ([]Step, error) {
	dbs := slices.Clone(s.Databases)
	if s.AllDatabases {
		var err error
		if dbs, err = listDatabases(ctx); err != nil {
			return nil, err
		}
	}
	slices.Sort(dbs)
	dbs = slices.Compact(dbs)
	steps := []Step{{Name: PostgresGlobals, Argv: []string{"pg_dumpall", "--globals-only", "--no-password"},
		Label: "pg_dumpall --globals-only"}}
	for _, d := range dbs {
		steps = append(steps, Step{Name: PostgresDump(d), Label: "pg_dump of " + d,
			Argv: []string{"pg_dump", "--format=custom", "--compress=0", "--no-password", "--", d}})
	}
	return steps, nil
}

// listDatabases asks the server (through psql, with the connection
// settings of the environment) for the databases that accept connections.
func listDatabases(ctx context.Context) ([]string, error) {
	const q = "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY 1"
	var out strings.Builder
	p, err := start(ctx, "psql (listing the databases)", []string{"psql", "--no-psqlrc", "--no-password", "--tuples-only",
		"--no-align", "--dbname=postgres", "--command=" + q}, nil, &out)
	if err != nil {
		return nil, err
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	var dbs []string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		d := sc.Text()
		if d == "" {
			continue
		}
		if err := ValidDatabase(d); err != nil {
			return nil, fmt.Errorf("%w (back it up with --from-command instead)", err)
		}
		dbs = append(dbs, d)
	}
	if len(dbs) == 0 {
		return nil, fmt.Errorf("%w: the server lists no database to dump", ErrBadSource)
	}
	return dbs, nil
}

func pipe() (*os.File, *os.File, error) { return os.Pipe() }
