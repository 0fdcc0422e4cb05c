package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kura-backup/kura/internal/mariadbtest"
)

// maria is the package's MariaDB server, started by the first test that
// needs it and stopped by TestMain.
var maria struct {
	once sync.Once
	srv  *mariadbtest.Server
	err  error
}

func mariadb(t *testing.T) *mariadbtest.Server {
	t.Helper()
	maria.once.Do(func() { maria.srv, maria.err = mariadbtest.Start() })
	if maria.err != nil {
		t.Fatalf("MariaDB for the tests (scripts/test.sh installs it): %v", maria.err)
	}
	return maria.srv
}

func stopMariaDB() {
	if maria.srv != nil {
		maria.srv.Stop()
	}
}

// mariaSnapshot is what a user compares after a restore: each table's
// rows and checksum, the view, the routines, the trigger and the event.
func mariaSnapshot(t *testing.T, s *mariadbtest.Server, db string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	q := func(name, sql string) {
		t.Helper()
		v, err := s.Query(ctx, db, sql)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	q("tables", "SELECT group_concat(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'")
	for _, tb := range strings.Split(out["tables"], ",") {
		q("table "+tb, "SELECT count(*) FROM `"+tb+"`")
		q("checksum "+tb, "CHECKSUM TABLE `"+tb+"` EXTENDED")
	}
	q("view", "SELECT count(*), sum(amount) FROM big_orders")
	q("function", "SELECT order_total(7)")
	q("routines", "SELECT group_concat(routine_name ORDER BY routine_name) FROM information_schema.routines WHERE routine_schema = DATABASE()")
	q("trigger", "SELECT group_concat(trigger_name) FROM information_schema.triggers WHERE trigger_schema = DATABASE()")
	q("event", "SELECT group_concat(event_name) FROM information_schema.events WHERE event_schema = DATABASE()")
	// CHECKSUM TABLE names the table with its database: compare the sums.
	for k, v := range out {
		if strings.HasPrefix(k, "checksum ") {
			out[k] = v[strings.LastIndexByte(v, '\t')+1:]
		}
	}
	return out
}

// A MariaDB database backed up with the mariadb plug-in
// (mariadb-dump --single-transaction with routines, triggers, events),
// dropped, restored under a new name and its own: the same.
func TestMariaDBBackupDropRestore(t *testing.T) {
	t.Parallel()
	s := mariadb(t)
	ctx := context.Background()
	db, err := s.CreateDatabase(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, db, `
		CREATE TABLE orders (id INT PRIMARY KEY AUTO_INCREMENT, customer INT, amount DECIMAL(10,2), note BLOB) ENGINE=InnoDB;
		CREATE TABLE audit (id INT PRIMARY KEY AUTO_INCREMENT, order_id INT) ENGINE=InnoDB;
		INSERT INTO orders (customer, amount, note) SELECT seq % 50, seq * 1.25, UNHEX(SHA2(seq, 256)) FROM seq_1_to_5000;
		CREATE VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 3000;
		CREATE FUNCTION order_total(c INT) RETURNS DECIMAL(12,2) READS SQL DATA RETURN (SELECT sum(amount) FROM orders WHERE customer = c);
		CREATE TRIGGER audit_orders AFTER INSERT ON orders FOR EACH ROW INSERT INTO audit (order_id) VALUES (NEW.id);
		CREATE EVENT nightly ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM audit;
		INSERT INTO orders (customer, amount) VALUES (7, 99.99);`); err != nil {
		t.Fatal(err)
	}
	want := mariaSnapshot(t, s, db)

	k := newKura(t)
	k.env = s.Env()
	f := k.backup("--plugin", "mariadb", "--db", db)
	id := itoa64(f.SavesetID)
	if ls := k.ok("ls", id, "mariadb"); !strings.Contains(ls.stdout, db+".sql") {
		t.Fatalf("ls shows no %s.sql:\n%s", db, ls)
	}
	if err := s.Exec(ctx, "", "DROP DATABASE `"+db+"`"); err != nil {
		t.Fatal(err)
	}
	k.ok("restore", id, "--to-db", db+"_copy")
	sameSnapshot(t, "restored under a new name", want, mariaSnapshot(t, s, db+"_copy"))
	k.ok("restore", id, "--to-db", db)
	sameSnapshot(t, "restored under its name", want, mariaSnapshot(t, s, db))
	if r := k.expect(exitFailure, "restore", id, "--to-db", db); !strings.Contains(r.stderr, "exists") {
		t.Errorf("restoring onto an existing database should say so:\n%s", r)
	}
	r := k.expect(exitFailure, "backup", "--plugin", "mariadb", "--db", "nosuchdb")
	if !strings.Contains(r.stderr, "mariadb-dump of nosuchdb") || !strings.Contains(r.stderr, "Unknown database") {
		t.Errorf("a missing database should fail with mariadb-dump's words:\n%s", r)
	}
	// Every user database: this one among them, the server's own left out.
	all := k.backup("--plugin", "mariadb", "--all-databases")
	ls := k.ok("ls", itoa64(all.SavesetID), "mariadb")
	if !strings.Contains(ls.stdout, db+".sql") || strings.Contains(ls.stdout, "mysql.sql") {
		t.Errorf("--all-databases:\n%s", ls)
	}
}

// A MariaDB server backed up with mariadb-backup's stream, restored into
// a new folder (unpacked and prepared) and started there: it holds what
// was committed when the backup ran.
func TestMariaDBPhysicalBackupRestore(t *testing.T) {
	t.Parallel()
	s := mariadb(t)
	ctx := context.Background()
	db, err := s.CreateDatabase(ctx, "phys")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, db, "CREATE TABLE marks (n INT PRIMARY KEY, note TEXT) ENGINE=InnoDB; INSERT INTO marks SELECT seq, 'before' FROM seq_1_to_100"); err != nil {
		t.Fatal(err)
	}
	k := newKura(t)
	k.env = s.Env()
	f := k.backup("--plugin", "mariadb-physical")
	if err := s.Exec(ctx, db, "INSERT INTO marks SELECT seq, 'after' FROM seq_101_to_200"); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(k.dir, "restored")
	k.ok("restore", itoa64(f.SavesetID), "--to-cluster", data)
	r, err := mariadbtest.StartData(data)
	if err != nil {
		t.Fatalf("starting a server on the restored folder: %v", err)
	}
	defer r.Stop()
	got, err := r.Query(ctx, db, "SELECT count(*), group_concat(DISTINCT note) FROM marks")
	if err != nil {
		t.Fatal(err)
	}
	if got != "100\tbefore" {
		t.Errorf("the restored server holds %q; want the 100 rows written before the backup", got)
	}
}
