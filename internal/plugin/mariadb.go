package plugin

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"
)

// MariaDB/MySQL, logical: one SQL file per database, dumped in one
// transaction (InnoDB tables are a consistent snapshot) with its routines,
// triggers and events, under mariadb/:
//
//	mariadb/NAME.sql    mariadb-dump --single-transaction --routines --triggers --events NAME
//
// The dump names no database (no CREATE DATABASE, no USE), so it restores
// under any name: --to-db NEW creates NEW (mariadb-admin create) and
// feeds the file to the mariadb client. Connection settings and
// credentials come from the clients' option files (~/.my.cnf,
// $MYSQL_HOME/my.cnf, /etc/mysql/) and environment (MYSQL_UNIX_PORT, …).

// MariaDBDir is the folder of a MariaDB saveset's files.
const MariaDBDir = "mariadb"

// MariaDBDump is the file of one database's dump.
func MariaDBDump(db string) string { return MariaDBDir + "/" + db + ".sql" }

// MariaDBDatabase is the database a file of a MariaDB saveset holds ("").
func MariaDBDatabase(name string) string {
	if rest, ok := strings.CutPrefix(name, MariaDBDir+"/"); ok {
		if db, ok := strings.CutSuffix(rest, ".sql"); ok && ValidDatabase(db) == nil {
			return db
		}
	}
	return ""
}

// mariadbSystem are the schemas --all-databases leaves out: the server's
// own, which a dump of users' data does not restore into.
var mariadbSystem = []string{"information_schema", "performance_schema", "sys", "mysql"}

func mariadbSteps(ctx context.Context, s Source) ([]Step, error) {
	dbs := slices.Clone(s.Databases)
	if s.AllDatabases {
		var out strings.Builder
		p, err := start(ctx, "mariadb (listing the databases)", []string{"mariadb", "--batch", "--skip-column-names", "--execute=SHOW DATABASES"}, nil, &out)
		if err != nil {
			return nil, err
		}
		if err := p.Wait(); err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			d := sc.Text()
			if d == "" || slices.Contains(mariadbSystem, d) {
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
	}
	slices.Sort(dbs)
	dbs = slices.Compact(dbs)
	var steps []Step
	for _, d := range dbs {
		steps = append(steps, Step{Name: MariaDBDump(d), Label: "mariadb-dump of " + d,
			Argv: []string{"mariadb-dump", "--single-transaction", "--routines", "--triggers", "--events", "--hex-blob", d}})
	}
	return steps, nil
}

// openMariaDB creates the database and feeds the dump to the client.
func (t Target) openMariaDB(ctx context.Context, name string) (Sink, error) {
	if t.Jobs > 1 {
		return nil, fmt.Errorf("%w: --jobs goes with PostgreSQL dumps; a MariaDB dump is read by one client", ErrBadSource)
	}
	// mariadb-admin create fails on a name that exists: a restore never
	// writes into a database that holds something.
	p, err := start(ctx, "mariadb-admin create "+t.Database, []string{"mariadb-admin", "create", t.Database}, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	return startSink(ctx, "mariadb restoring into "+t.Database, []string{"mariadb", "--batch", "--database=" + t.Database})
}
