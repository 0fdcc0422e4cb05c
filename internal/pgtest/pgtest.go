// Package pgtest runs the real PostgreSQL server that Kura's tests use:
// Debian's `postgresql` package (installed by scripts/test.sh), a fresh
// cluster made with initdb in a temporary folder, listening on 127.0.0.1
// and on a socket inside that folder, started with pg_ctl. A test package
// starts one in TestMain and gives each test its own database
// (CreateDatabase). For tests, and for kura bench's pglink part, which
// measures backups of a database it builds there.
//
// initdb refuses to run as root, so as root the cluster belongs to the
// postgres user and initdb and pg_ctl run through runuser; as anyone else
// they run as that user.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Package is what scripts/test.sh installs.
const Package = "postgresql"

// Find finds the folder of initdb and pg_ctl: $KURA_POSTGRES_BIN, else
// the newest /usr/lib/postgresql/N/bin. Its error says how to install them.
func Find() (string, error) {
	if d := os.Getenv("KURA_POSTGRES_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("KURA_POSTGRES_BIN=%s: %v", d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) == 0 {
		return "", errors.New("PostgreSQL (the server these tests run against) is not installed: no /usr/lib/postgresql/*/bin/initdb and no $KURA_POSTGRES_BIN; run ./scripts/test.sh, which installs Debian's " + Package + " package")
	}
	return filepath.Dir(dirs[0]), nil
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Server is a running cluster.
type Server struct {
	Bin  string // folder of initdb, pg_ctl
	Dir  string // the temporary folder: data in Dir/data, socket and log in Dir
	Port int
	User string // the superuser, trusted on 127.0.0.1 and the socket

	runAs *user.User // nil: the current user
	mu    sync.Mutex
	n     int
}

// Start makes a cluster in a new temporary folder and starts it; settings
// are extra server settings ("fsync=off", "wal_level=replica", …) given to
// postgres as -c options. Stop removes the folder.
func Start(settings ...string) (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kura-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, Dir: dir, User: "postgres"}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.runAs = u
	}
	if err := s.start(settings); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.Bin, name)
	if s.runAs != nil {
		return exec.Command("runuser", append([]string{"-u", s.runAs.Username, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (s *Server) start(settings []string) error {
	data := filepath.Join(s.Dir, "data")
	if out, err := s.command("initdb", "-D", data, "--auth=trust", "-U", s.User, "-E", "UTF8", "--locale=C.UTF-8", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	opts := []string{"-c listen_addresses=127.0.0.1", "-c port=" + strconv.Itoa(port), "-c unix_socket_directories=" + s.Dir}
	for _, kv := range settings {
		opts = append(opts, "-c "+kv)
	}
	log := filepath.Join(s.Dir, "postgres.log")
	if out, err := s.command("pg_ctl", "-D", data, "-l", log, "-o", strings.Join(opts, " "), "-w", "-t", "120", "start").CombinedOutput(); err != nil {
		b, _ := os.ReadFile(log)
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, b)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the connection URL of database db over TCP.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Port, db)
}

// Env is the libpq environment (PGHOST, PGPORT, PGUSER) that points the
// stock tools (psql, pg_dump, …) at the server.
func (s *Server) Env() []string {
	return []string{"PGHOST=127.0.0.1", "PGPORT=" + strconv.Itoa(s.Port), "PGUSER=" + s.User}
}

// CreateDatabase creates a new, empty database with a unique name that
// starts with prefix (letters, digits and _) and returns its name.
func (s *Server) CreateDatabase(ctx context.Context, prefix string) (string, error) {
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("%s_%d", strings.ToLower(prefix), s.n)
	s.mu.Unlock()
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// Stop stops the server (fast shutdown: connections are ended) and
// removes its folder.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	out, err := s.command("pg_ctl", "-D", filepath.Join(s.Dir, "data"), "-m", "fast", "-w", "-t", "60", "stop").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	// The folder is the postgres user's; root may remove it.
	if rerr := os.RemoveAll(s.Dir); err == nil {
		err = rerr
	}
	return err
}
