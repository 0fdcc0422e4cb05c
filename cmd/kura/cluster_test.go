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
