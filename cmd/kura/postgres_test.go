package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/pgtest"
)

// pgsrv is the package's PostgreSQL server, started by the first test that
// needs it and stopped by TestMain.
var pgsrv struct {
	once sync.Once
	err  error
	srv  *pgtest.Server
}

func stopPG() {
	if pgsrv.srv != nil {
		pgsrv.srv.Stop()
	}
}

// pgPassword is put in catalog URLs: the test server trusts local
// connections and ignores it, and it must never be printed.
const pgPassword = "pg-SECRET-5ca1ab1e"

// pgCatalog starts the server if needed and returns the URL of a new,
// empty database, with pgPassword in it.
func pgCatalog(t *testing.T) string {
	t.Helper()
	db, err := postgres(t).CreateDatabase(context.Background(), "kura")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(pgsrv.srv.URL(db), "postgres@", "postgres:"+pgPassword+"@", 1)
}

// A server on a PostgreSQL catalog, as a user runs one: an agent enrolls,
// a backup and a restore run through it, savesets, jobs and the catalog
// backup work; the records are in PostgreSQL (no catalog file in the home),
// and the password in the URL is never printed.
func TestServerOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgCatalog(t)
	srvK := newKura(t)
	srv := srvK.start("server", "--listen", "127.0.0.1:0", "--catalog", url)
	addr := srv.listenURL(t)
	if l := srv.line(t, "catalog "); !strings.Contains(l, "postgres://postgres:xxxxx@") || strings.Contains(l, pgPassword) {
		t.Fatalf("the server shows its catalog as %q: want the URL without its password", l)
	}
	admin := loginAdmin(t, srvK.home, addr)

	agent := admin.enroll(addr, "c1", nil)
	admin.connected("c1")

	src := filepath.Join(agent.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	var fig figures
	admin.json(0, &fig, "backup", "--client", "c1", "--json", src)
	if fig.Status != "completed" || fig.SavesetID == 0 {
		t.Fatalf("backup figures: %+v", fig)
	}
	dst := filepath.Join(agent.dir, "restored")
	admin.ok("restore", "--client", "c1", itoa64(fig.SavesetID), "--to", dst)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(dst, src)))

	var sets []struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	admin.json(0, &sets, "savesets", "--json")
	if len(sets) != 1 || sets[0].ID != fig.SavesetID || sets[0].Status != "complete" {
		t.Fatalf("savesets through the server: %+v", sets)
	}
	if r := admin.ok("jobs", "list"); !strings.Contains(r.stdout, "c1") {
		t.Fatalf("jobs list:\n%s", r)
	}
	// The catalog backup of a PostgreSQL catalog: a SQLite snapshot on
	// tape, listed by `kura catalog list` like any other.
	var rec catalogBackup
	admin.json(0, &rec, "catalog", "backup", "--json")
	if rec.Barcode == "" || rec.Savesets != 1 || rec.LastSavesetID != fig.SavesetID {
		t.Fatalf("catalog backup --json: %+v", rec)
	}
	if r := admin.ok("catalog", "list"); !strings.Contains(r.stdout, rec.Barcode) || !strings.Contains(r.stdout, "label ok") {
		t.Errorf("catalog list should show the catalog backup:\n%s", r)
	}

	// The records are in PostgreSQL, not in a file in the home; no job is
	// left holding a lease.
	if _, err := os.Stat(filepath.Join(srvK.home, "catalog.db")); !os.IsNotExist(err) {
		t.Errorf("a catalog file in the home of a server on PostgreSQL: %v", err)
	}
	c, err := catalog.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ss, err := c.Savesets(catalog.SavesetFilter{})
	if err != nil || len(ss) != 1 || ss[0].ID != fig.SavesetID {
		t.Fatalf("savesets in PostgreSQL: %d, %v", len(ss), err)
	}
	leases, err := c.LiveJobLeases(time.Unix(0, 0)) // every lease, expired or not
	if err != nil || len(leases) != 0 {
		t.Errorf("job leases left in PostgreSQL after the jobs ended: %+v, %v", leases, err)
	}

	// A catalog the server cannot reach: a clear error, without the
	// password.
	bad := newKura(t)
	r := bad.expect(exitFailure, "server", "--listen", "127.0.0.1:0", "--catalog", "postgres://kura:"+pgPassword+"@127.0.0.1:1/kura?connect_timeout=5")
	if !strings.Contains(r.stderr, "catalog") || strings.Contains(r.stdout+r.stderr, pgPassword) {
		t.Errorf("server on an unreachable catalog:\n%s", r)
	}
}

// `kura catalog migrate --to URL` moves a home's catalog into an empty
// PostgreSQL database, prints what it checked, and the home then works on
// it (KURA_CATALOG): the savesets restore, and new IDs go on past the old
// ones. A target that holds records is refused and
// keeps them.
func TestCatalogMigrateToPostgres(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	full := k.backup(src)
	incr := k.backup(src, "--level", "incr")
	want := readTree(t, src)

	url := pgCatalog(t)
	r := k.ok("catalog", "migrate", "--to", url)
	for _, s := range []string{"savesets", "jobs", "the same count and checksum on both sides", "kura server --catalog postgres://postgres:xxxxx@"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("catalog migrate should say %q:\n%s", s, r)
		}
	}
	if strings.Contains(r.stdout+r.stderr, pgPassword) {
		t.Errorf("catalog migrate printed the password:\n%s", r)
	}
	var sums []catalog.TableSum
	k.json(0, &sums, "catalog", "migrate", "--to", pgCatalog(t), "--json")
	for _, s := range sums {
		if s.Table == "savesets" && s.Rows != 2 || len(s.Sum) != 64 {
			t.Errorf("migrate --json: %+v", s)
		}
	}

	pk := *k
	pk.env = append(pk.env, "KURA_CATALOG="+url)
	var sets []struct {
		ID int64 `json:"id"`
	}
	pk.json(0, &sets, "savesets", "--json")
	if len(sets) != 2 || sets[0].ID != full.SavesetID {
		t.Fatalf("savesets on the migrated catalog: %+v", sets)
	}
	out := filepath.Join(k.dir, "out")
	pk.ok("restore", itoa64(full.SavesetID), "--to", out)
	sameTree(t, want, readTree(t, restoredAt(out, src)))
	next := pk.backup(src, "--level", "incr")
	if next.SavesetID <= incr.SavesetID || next.JobID <= incr.JobID {
		t.Errorf("first backup on the migrated catalog: saveset %d, job %d; want past the home's %d and %d",
			next.SavesetID, next.JobID, incr.SavesetID, incr.JobID)
	}

	// Once more into the same database: refused, and it keeps its records.
	r = k.expect(exitFailure, "catalog", "migrate", "--to", url)
	if !strings.Contains(r.stderr, "not empty") || strings.Contains(r.stdout+r.stderr, pgPassword) {
		t.Errorf("migrate into a catalog with records:\n%s", r)
	}
	pk.json(0, &sets, "savesets", "--json")
	if len(sets) != 3 {
		t.Fatalf("savesets after a refused migrate: %+v", sets)
	}
	k.expect(exitUsage, "catalog", "migrate")
}

// Disaster recovery on PostgreSQL: the catalog backup of a PostgreSQL
// catalog restores into a new, empty database (the old one was lost) and,
// with --force, over one that holds records (kept as a SQLite copy in the
// home), and into the home's SQLite file; the savesets made after the
// backup come back from the tape scan.
func TestCatalogRestoreIntoPostgres(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	k.env = append(k.env, "KURA_CATALOG="+pgCatalog(t))
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	full := k.backup(src)
	var rec catalogBackup
	k.json(0, &rec, "catalog", "backup", "--json")
	writeTree(t, src, map[string]string{"later.txt": "written after the catalog backup\n"})
	incr := k.backup(src, "--level", "incr")
	want := readTree(t, src)

	check := func(k *kura) {
		t.Helper()
		var sets []struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		}
		k.json(0, &sets, "savesets", "--json")
		if len(sets) != 2 || sets[0].ID != full.SavesetID || sets[1].ID != incr.SavesetID || sets[1].Status != "complete" {
			t.Fatalf("savesets after the restore: %+v", sets)
		}
		out := filepath.Join(t.TempDir(), "out")
		k.ok("restore", itoa64(incr.SavesetID), "--to", out)
		sameTree(t, want, readTree(t, restoredAt(out, src)))
	}

	// The database is lost: a new one.
	lost := *k
	lost.env = append(append([]string(nil), k.env...), "KURA_CATALOG="+pgCatalog(t))
	r := lost.ok("catalog", "restore")
	if !strings.Contains(r.stdout, "Catalog restored from tape "+rec.Barcode) || !strings.Contains(r.stdout, "rebuilt saveset "+itoa64(incr.SavesetID)) {
		t.Errorf("catalog restore into a new database:\n%s", r)
	}
	check(&lost)
	if _, err := os.Stat(filepath.Join(k.home, "catalog.db")); !os.IsNotExist(err) {
		t.Errorf("a catalog file in the home after a restore into PostgreSQL: %v", err)
	}

	// Over the old one, which holds records: --force, and a copy is kept.
	k.expect(exitFailure, "catalog", "restore")
	r = k.ok("catalog", "restore", "--force")
	if !strings.Contains(r.stdout, "catalog.db.replaced-") || strings.Contains(r.stdout, pgPassword) {
		t.Errorf("catalog restore --force over a PostgreSQL catalog:\n%s", r)
	}
	check(k)

	// And back to SQLite: the same backup restores into the home's own
	// catalog file.
	plain := *k
	plain.env = nil
	plain.ok("catalog", "restore")
	check(&plain)
	if _, err := os.Stat(filepath.Join(k.home, "catalog.db")); err != nil {
		t.Errorf("restore without KURA_CATALOG: %v", err)
	}
}

// Two servers on one PostgreSQL catalog: the second stands by while the
// first leads, and after the first is killed (kill -9) takes over within
// the lease (--leader-ttl) and a third of it: it listens and leads.
func TestSecondServerTakesOver(t *testing.T) {
	t.Parallel()
	url := pgCatalog(t)
	a := newKura(t)
	srvA := a.start("server", "--listen", "127.0.0.1:0", "--catalog", url, "--leader-ttl", "3s")
	srvA.line(t, "listening on")
	c, err := catalog.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	la, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}

	b := newKura(t)
	srvB := b.start("server", "--listen", "127.0.0.1:0", "--catalog", url, "--leader-ttl", "3s")
	if l := srvB.line(t, "Standing by"); !strings.Contains(l, la.Holder) {
		t.Fatalf("the second server should name the leader %s:\n%s", la.Holder, l)
	}
	srvA.kill()
	// Within the lease and a third of it; line fails the test after 30 s.
	addr := srvB.listenURL(t)
	lb, err := c.Leader()
	if err != nil || lb.Holder == la.Holder {
		t.Fatalf("leader after the takeover: %+v, %v", lb, err)
	}
	// The new leader runs the queue: a job goes through it.
	admin := loginAdmin(t, b.home, addr)
	var rec catalogBackup
	admin.json(0, &rec, "catalog", "backup", "--json")
	if rec.Barcode == "" {
		t.Fatalf("catalog backup through the new leader: %+v", rec)
	}
}
