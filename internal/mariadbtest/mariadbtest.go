// Package mariadbtest runs the real MariaDB server that Kura's tests use:
// Debian's `mariadb-server` (installed by scripts/test.sh), a fresh data
// folder made with mariadb-install-db in a temporary folder, listening on
// a socket inside it (no TCP), started once per test package. The stock
// clients (mariadb, mariadb-dump) reach it through Env: MYSQL_HOME names
// a folder whose my.cnf gives them the socket and the user. For tests
// only.
package mariadbtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Package is what scripts/test.sh installs.
const Package = "mariadb-server"

// Server is a running server.
type Server struct {
	Dir    string // socket, log and my.cnf in Dir; data in Dir/data unless Data says
	Data   string
	Socket string
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	n      int
}

// Start makes a data folder in a new temporary folder and starts the
// server on it; Stop removes the folder.
func Start() (*Server, error) {
	for _, tool := range []string{"mariadb-install-db", "mariadbd", "mariadb", "mariadb-dump"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err2 := os.Stat("/usr/sbin/" + tool); err2 != nil {
				return nil, fmt.Errorf("%s not found: install %s (scripts/test.sh does)", tool, Package)
			}
		}
	}
	dir, err := os.MkdirTemp("", "kura-mariadb-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Data: filepath.Join(dir, "data"), Socket: filepath.Join(dir, "mysqld.sock"), done: make(chan struct{})}
	if err := s.start(true); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func sbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

// StartData starts a server on an existing data folder (a restored
// backup); Stop removes its own folder, not the data.
func StartData(data string) (*Server, error) {
	dir, err := os.MkdirTemp("", "kura-mariadb-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Data: data, Socket: filepath.Join(dir, "mysqld.sock"), done: make(chan struct{})}
	if err := s.start(false); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) start(install bool) error {
	data := s.Data
	user := "--user=" + currentUser()
	if install {
		if out, err := exec.Command(sbin("mariadb-install-db"), "--no-defaults", "--datadir="+data, user,
			"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
			return fmt.Errorf("mariadb-install-db: %v: %s", err, out)
		}
	}
	cnf := fmt.Sprintf("[client]\nsocket=%s\nuser=root\n", s.Socket)
	if err := os.WriteFile(filepath.Join(s.Dir, "my.cnf"), []byte(cnf), 0o600); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(s.Dir, "mariadbd.log"))
	if err != nil {
		return err
	}
	s.cmd = exec.Command(sbin("mariadbd"), "--no-defaults", "--datadir="+data, user, "--socket="+s.Socket,
		"--skip-networking", "--pid-file="+filepath.Join(s.Dir, "mariadbd.pid"), "--innodb-flush-log-at-trx-commit=0",
		"--log-error="+filepath.Join(s.Dir, "error.log"))
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	go func() { s.cmd.Wait(); log.Close(); close(s.done) }()
	// Up when a client gets an answer (polling another process, bounded).
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := s.Exec(context.Background(), "", "SELECT 1"); err == nil {
			return nil
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(filepath.Join(s.Dir, "error.log"))
			return fmt.Errorf("mariadbd exited at start: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return errors.New("mariadbd did not answer within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func currentUser() string {
	if os.Geteuid() == 0 {
		return "root"
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "nobody"
}

// Env is the environment that points the stock clients at the server.
func (s *Server) Env() []string { return []string{"MYSQL_HOME=" + s.Dir} }

// Exec runs SQL with the mariadb client in database db ("" for none).
func (s *Server) Exec(ctx context.Context, db, sql string) error {
	_, err := s.Query(ctx, db, sql)
	return err
}

// Query runs SQL and returns the client's tab-separated output.
func (s *Server) Query(ctx context.Context, db, sql string) (string, error) {
	args := []string{"--batch", "--skip-column-names", "-e", sql}
	if db != "" {
		args = append(args, db)
	}
	cmd := exec.CommandContext(ctx, "mariadb", args...)
	cmd.Env = append(os.Environ(), s.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mariadb -e %q: %v: %s", sql, err, out)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// CreateDatabase creates a new, empty database whose name starts with
// prefix and returns its name.
func (s *Server) CreateDatabase(ctx context.Context, prefix string) (string, error) {
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("%s_%d", strings.ToLower(prefix), s.n)
	s.mu.Unlock()
	return name, s.Exec(ctx, "", "CREATE DATABASE `"+name+"`")
}

// Stop stops the server and removes its folder.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return os.RemoveAll(s.Dir)
}
