package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kura-backup/kura/internal/pgtest"
)

// startCluster starts PostgreSQL on a restored data folder, as pgtest runs
// its own (as the postgres user when root), on a port of its own; it is
// stopped when the test ends. It returns the port.
func startCluster(t *testing.T, s *pgtest.Server, data string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	sock := filepath.Dir(data)
	run := func(args ...string) *exec.Cmd {
		pgctl := filepath.Join(s.Bin, "pg_ctl")
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", pgctl}, args...)...)
		}
		return exec.Command(pgctl, args...)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(sock, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := filepath.Walk(data, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		}); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(sock, "restored.log")
	opts := "-c listen_addresses=127.0.0.1 -c port=" + strconv.Itoa(port) + " -c unix_socket_directories=" + sock + " -c archive_mode=off"
	if out, err := run("-D", data, "-l", log, "-o", opts, "-w", "-t", "120", "start").CombinedOutput(); err != nil {
		b, _ := os.ReadFile(log)
		t.Fatalf("starting the restored cluster: %v\n%s\n%s", err, out, b)
	}
	t.Cleanup(func() { run("-D", data, "-m", "immediate", "-w", "stop").Run() })
	return port
}

// A whole cluster backed up with pg_basebackup through the
// postgresql-cluster plug-in, restored into a new folder and started
// there: it holds exactly what was committed when the backup ran.
func TestPostgreSQLClusterBackupRestore(t *testing.T) {
	t.Parallel()
	s := postgres(t)
	ctx := context.Background()
	db, err := s.CreateDatabase(ctx, "phys")
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE marks (n int PRIMARY KEY, note text); INSERT INTO marks SELECT g, 'before' FROM generate_series(1, 100) g"); err != nil {
		t.Fatal(err)
	}

	k := newKura(t)
	k.env = s.Env()
	f := k.backup("--plugin", "postgresql-cluster")
	id := itoa64(f.SavesetID)
	if ls := k.ok("ls", id, "postgresql-cluster"); !strings.Contains(ls.stdout, "base.tar") {
		t.Fatalf("ls shows no base.tar:\n%s", ls)
	}
	if _, err := c.Exec(ctx, "INSERT INTO marks SELECT g, 'after' FROM generate_series(101, 200) g"); err != nil {
		t.Fatal(err)
	}

	// A folder the postgres user can reach (a test's TempDir is 0700).
	base, err := os.MkdirTemp("", "kura-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	k.ok("restore", id, "--to-cluster", data)
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("restored cluster folder: %v, %v (want mode 0700)", st, err)
	}
	// Never over files.
	if r := k.expect(exitFailure, "restore", id, "--to-cluster", data); !strings.Contains(r.stderr, "not empty") {
		t.Errorf("restoring over a folder that holds files should fail:\n%s", r)
	}

	port := startCluster(t, s, data)
	rc, err := pgx.Connect(ctx, "postgres://"+s.User+"@127.0.0.1:"+strconv.Itoa(port)+"/"+db+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	var n int
	var notes string
	if err := rc.QueryRow(ctx, "SELECT count(*), string_agg(DISTINCT note, ',') FROM marks").Scan(&n, &notes); err != nil {
		t.Fatal(err)
	}
	if n != 100 || notes != "before" {
		t.Errorf("the restored cluster holds %d rows (%s); want the 100 written before the backup", n, notes)
	}
}

// postgresUserKura returns a runner whose kura runs as the user
// PostgreSQL runs as (postgres under root; else this user), with a home,
// working folder and copy of the test binary that user can reach — the
// archive_command runs kura as that user too.
func postgresUserKura(t *testing.T) *kura {
	t.Helper()
	if os.Geteuid() != 0 {
		k := newKura(t)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		k.bin = exe
		return k
	}
	k := nobodyKura(t)
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	k.cred.Uid, k.cred.Gid = uint32(uid), uint32(gid)
	return k
}

// Point-in-time recovery: the cluster archives its WAL into Kura
// (archive_command = kura wal archive); a base backup, rows written
// after it, a noted moment, more rows; the base backup restored to that
// moment and started replays exactly the rows written before it.
func TestPostgreSQLPointInTime(t *testing.T) {
	t.Parallel()
	k := postgresUserKura(t)
	k.ok("vtl", "list") // the home and its library exist before the archiver's first call
	archive := "GORACE=atexit_sleep_ms=0 " + runMainEnv + "=1 " + k.bin + " --home " + k.home + " wal archive --cluster main %p %f"
	s, err := pgtest.Start("fsync=off", "wal_level=replica", "archive_mode=on", "archive_command='"+archive+"'")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	ctx := context.Background()
	db, err := s.CreateDatabase(ctx, "pitr")
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, s.URL(db))
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
	exec1("CREATE TABLE marks (n int PRIMARY KEY, note text)")
	exec1("INSERT INTO marks SELECT g, 'base' FROM generate_series(1, 10) g")

	k.env = s.Env()
	f := k.backup("--plugin", "postgresql-cluster")

	exec1("INSERT INTO marks SELECT g, 'before' FROM generate_series(11, 20) g")
	var at time.Time
	if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&at); err != nil {
		t.Fatal(err)
	}
	exec1("INSERT INTO marks SELECT g, 'after' FROM generate_series(21, 30) g")
	// Close the WAL file holding all of it, and wait until the archiver
	// has handed it to Kura.
	var last string
	if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&last); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "WAL file "+last+" archived", func() bool {
		var archived string
		var failed int64
		err := c.QueryRow(ctx, "SELECT coalesce(last_archived_wal, ''), failed_count FROM pg_stat_archiver").Scan(&archived, &failed)
		if err != nil || failed > 0 {
			t.Fatalf("pg_stat_archiver: %v, %d failed (see the server's log in %s)", err, failed, s.Dir)
		}
		return archived >= last
	})

	base, err := os.MkdirTemp("", "kura-pitr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	get := "GORACE=atexit_sleep_ms=0 " + runMainEnv + "=1 " + k.bin + " --home " + k.home + " wal get --cluster main %f %p"
	k.ok("restore", itoa64(f.SavesetID), "--to-cluster", data, "--wal", "main", "--at", at.Format(time.RFC3339Nano), "--wal-restore-command", get)
	if _, err := os.Stat(filepath.Join(data, "recovery.signal")); err != nil {
		t.Fatalf("no recovery.signal: %v", err)
	}

	port := startCluster(t, s, data)
	rc, err := pgx.Connect(ctx, "postgres://"+s.User+"@127.0.0.1:"+strconv.Itoa(port)+"/"+db+"?sslmode=disable")
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

// waitFor polls what another process does (PostgreSQL's archiver and
// recovery) until cond holds; the test's deadline bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 90 s for %s", what)
		}
		time.Sleep(100 * time.Millisecond) // polling another process's state, not our own work
	}
}
