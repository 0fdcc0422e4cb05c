package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kura-backup/kura/internal/pgtest"
)

// walFile writes a fake WAL segment (PostgreSQL's %p) with content of
// its own.
func walFile(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	data := bytes.Repeat([]byte(fmt.Sprintf("%s:%d;", name, n)), 4096)
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// WAL archiving through an agent: kura wal archive on the agent's
// machine sends each WAL file to the server (a saveset of that client),
// and kura wal get fetches it back through the server. With the server
// down, archive still exits 0 once the file is spooled (synced), kura wal
// spool raises the alarm, and the next archive call, the server back,
// sends the spool in order: every file comes back exactly.
func TestWALArchiveThroughAgent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srvK := newKura(t)
	srv := srvK.start("server", "--listen", addr)
	url := srv.listenURL(t)
	admin := loginAdmin(t, srvK.home, url)
	db := admin.enroll(url, "db1", nil) // no --allow-plugin: a WAL file is read from the spool only
	admin.connected("db1")

	const seg1, seg2, seg3 = "000000010000000000000001", "000000010000000000000002", "000000010000000000000003"
	want := map[string][]byte{seg1: walFile(t, db.dir, seg1, 1)}
	db.ok("wal", "archive", "--cluster", "main", seg1, seg1)
	if r := db.ok("wal", "spool", "--warn-after", "0s"); !strings.Contains(r.stdout, "empty") {
		t.Errorf("after a sent archive the spool should be empty:\n%s", r)
	}
	var sets []struct {
		Client string   `json:"client"`
		Paths  []string `json:"paths"`
	}
	admin.json(0, &sets, "savesets", "--json")
	if len(sets) != 1 || sets[0].Client != "db1" || len(sets[0].Paths) != 1 || !strings.Contains(sets[0].Paths[0], "main/"+seg1) {
		t.Fatalf("the server should hold one WAL saveset of db1: %+v", sets)
	}

	// The server down: spooled, exit 0, and the alarm.
	srv.stop()
	want[seg2] = walFile(t, db.dir, seg2, 2)
	db.ok("wal", "archive", "--cluster", "main", "--send-for", "5s", seg2, seg2)
	r := db.expect(exitWarnings, "wal", "spool", "--warn-after", "0s")
	if !strings.Contains(r.stdout, "1 WAL files spooled") || !strings.Contains(r.stderr, "falls behind") || !strings.Contains(r.stderr, seg2) {
		t.Errorf("the spool should show the unsent file and warn:\n%s", r)
	}
	var sp struct {
		Files         int     `json:"files"`
		Oldest        string  `json:"oldest"`
		OldestSeconds float64 `json:"oldest_seconds"`
		Behind        bool    `json:"behind"`
	}
	db.json(exitWarnings, &sp, "wal", "spool", "--json", "--warn-after", "0s")
	if sp.Files != 1 || sp.Oldest != "main/"+seg2 || sp.OldestSeconds <= 0 || !sp.Behind {
		t.Errorf("kura wal spool --json: %+v", sp)
	}
	// PostgreSQL retries an archive_command: the same file again is fine,
	// a different one under the same name is refused.
	db.ok("wal", "archive", "--cluster", "main", "--send-for", "1s", seg2, seg2)
	if err := os.WriteFile(filepath.Join(db.dir, "other"), []byte("not the same"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := db.expect(exitFailure, "wal", "archive", "--cluster", "main", "--send-for", "1s", "other", seg2); !strings.Contains(r.stderr, "different file") {
		t.Errorf("a different file under a spooled name should be refused:\n%s", r)
	}

	// The server back: the next archive sends the spool, oldest first.
	srvK.start("server", "--listen", addr)
	admin.connected("db1")
	want[seg3] = walFile(t, db.dir, seg3, 3)
	db.ok("wal", "archive", "--cluster", "main", seg3, seg3)
	if r := db.ok("wal", "spool"); !strings.Contains(r.stdout, "empty") {
		t.Errorf("the spool should be sent once the server is back:\n%s", r)
	}
	for _, seg := range []string{seg1, seg2, seg3} {
		dst := filepath.Join(db.dir, "restored-"+seg)
		db.ok("wal", "get", "--cluster", "main", seg, dst)
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, want[seg]) {
			t.Errorf("wal get %s: %d bytes, want %d exactly", seg, len(got), len(want[seg]))
		}
	}
	// Past the end of the archive: exit 1, nothing written.
	dst := filepath.Join(db.dir, "none")
	if r := db.expect(exitFailure, "wal", "get", "--cluster", "main", "000000010000000000000009", dst); !strings.Contains(r.stderr, "holds no") {
		t.Errorf("a WAL file the archive does not hold:\n%s", r)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("wal get of a missing file should write nothing")
	}
}

// WAL retention follows the base backups: prune expires, with its
// reason, the WAL files archived before the oldest kept base backup of
// their client, and keeps every WAL file of a client that has none.
func TestPruneExpiresWALBeforeOldestBase(t *testing.T) {
	t.Parallel()
	s := postgres(t)
	k := newKura(t)
	k.env = s.Env()
	const seg1, seg2 = "000000010000000000000001", "000000010000000000000002"
	walFile(t, k.dir, seg1, 1)
	walFile(t, k.dir, seg2, 2)
	k.ok("wal", "archive", "--cluster", "main", seg1, seg1)
	// No base backup yet: the WAL stays.
	if dry := k.ok("prune", "--dry-run"); strings.Contains(dry.stdout, "Would expire") {
		t.Fatalf("WAL without a base backup should be kept:\n%s", dry)
	}
	base := k.backup("--plugin", "postgresql-cluster")
	k.ok("wal", "archive", "--cluster", "main", seg2, seg2)
	k.ok("prune")
	var sets []struct {
		ID           int64    `json:"id"`
		Paths        []string `json:"paths"`
		Expired      bool     `json:"expired"`
		ExpireReason string   `json:"expire_reason"`
	}
	k.json(0, &sets, "savesets", "--json")
	if len(sets) != 3 {
		t.Fatalf("want 3 savesets: %+v", sets)
	}
	for _, ss := range sets {
		old := strings.Contains(strings.Join(ss.Paths, ","), seg1)
		if ss.Expired != old {
			t.Errorf("saveset %d %v: expired=%v (%q); want only the WAL before base backup %d expired", ss.ID, ss.Paths, ss.Expired, ss.ExpireReason, base.SavesetID)
		}
		if old && !strings.Contains(ss.ExpireReason, "before the oldest kept base backup") {
			t.Errorf("the expired WAL's reason: %q", ss.ExpireReason)
		}
	}
	// What remains replays: the base backup's WAL is still there.
	if r := k.ok("wal", "get", "--cluster", "main", seg2, filepath.Join(k.dir, "back")); r.code != 0 {
		t.Error(r)
	}
}

// Point-in-time recovery through an agent and a server, the server down
// while the cluster archives: archive_command (kura wal archive on the
// agent) spools and exits 0, the spool is sent once the server is back,
// and the base backup restored through the agent to a moment written
// while the server was down replays exactly the rows before it.
func TestPostgreSQLPointInTimeThroughAgent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srvK := newKura(t)
	srv := srvK.start("server", "--listen", addr)
	url := srv.listenURL(t)
	admin := loginAdmin(t, srvK.home, url)
	tok := strings.TrimSpace(admin.ok("token", "create", "--expires", "10m").stdout)
	db := postgresUserKura(t) // the agent runs as PostgreSQL's user: archive_command is that user's
	db.ok("agent", "enroll", "--server", url, "--token", tok, "--name", "db1")

	kura := "GORACE=atexit_sleep_ms=0 " + runMainEnv + "=1 " + db.bin + " --home " + db.home
	s, err := pgtest.Start("fsync=off", "wal_level=replica", "archive_mode=on",
		"archive_command='"+kura+" wal archive --cluster main --send-for 5s %p %f'")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	db.env = s.Env()
	db.start("agent", "run", "--allow-commands")
	admin.connected("db1")
	ctx := context.Background()
	name, err := s.CreateDatabase(ctx, "pitr")
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, s.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	exec1 := func(q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	archived := func(what string) {
		t.Helper()
		var last string
		if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&last); err != nil {
			t.Fatal(err)
		}
		waitFor(t, what+": WAL file "+last+" archived", func() bool {
			var got string
			var failed int64
			err := c.QueryRow(ctx, "SELECT coalesce(last_archived_wal, ''), failed_count FROM pg_stat_archiver").Scan(&got, &failed)
			if err != nil || failed > 0 {
				t.Fatalf("pg_stat_archiver: %v, %d failed (see the server's log in %s)", err, failed, s.Dir)
			}
			return got >= last
		})
	}
	exec1("CREATE TABLE marks (n int PRIMARY KEY, note text)")
	exec1("INSERT INTO marks SELECT g, 'base' FROM generate_series(1, 10) g")
	var base figures
	admin.json(0, &base, "backup", "--client", "db1", "--json", "--plugin", "postgresql-cluster")
	archived("with the server up")

	srv.stop()
	exec1("INSERT INTO marks SELECT g, 'before' FROM generate_series(11, 20) g")
	var at time.Time
	if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&at); err != nil {
		t.Fatal(err)
	}
	exec1("INSERT INTO marks SELECT g, 'after' FROM generate_series(21, 30) g")
	archived("with the server down")
	if r := db.expect(exitWarnings, "wal", "spool", "--warn-after", "0s"); !strings.Contains(r.stdout, "spooled") {
		t.Fatalf("with the server down the WAL should wait in the spool:\n%s", r)
	}

	srvK.start("server", "--listen", addr)
	admin.connected("db1")
	if r := db.ok("wal", "spool", "--send"); !strings.Contains(r.stdout, "empty") {
		t.Fatalf("the spool should be sent once the server is back:\n%s", r)
	}

	dir, err := os.MkdirTemp("", "kura-pitr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	admin.ok("restore", "--client", "db1", itoa64(base.SavesetID), "--to-cluster", data, "--wal", "main",
		"--at", at.Format(time.RFC3339Nano), "--wal-restore-command", kura+" wal get --cluster main %f %p")
	if _, err := os.Stat(filepath.Join(data, "recovery.signal")); err != nil {
		t.Fatalf("no recovery.signal: %v", err)
	}
	port := startCluster(t, s, data)
	rc, err := pgx.Connect(ctx, "postgres://"+s.User+"@127.0.0.1:"+strconv.Itoa(port)+"/"+name+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	waitFor(t, "recovery to end (promotion at the target)", func() bool {
		var rec bool
		return rc.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec) == nil && !rec
	})
	var n int
	var notes string
	if err := rc.QueryRow(ctx, "SELECT count(*), string_agg(DISTINCT note, ',' ORDER BY note) FROM marks").Scan(&n, &notes); err != nil {
		t.Fatal(err)
	}
	if n != 20 || notes != "base,before" {
		t.Errorf("recovered to %s: %d rows (%s); want the 20 rows written before that moment (base,before)", at, n, notes)
	}
}
