// Package plugin runs the programs a backup reads from and a restore
// writes into instead of files: any command (its standard output is one
// file of the saveset; a restore pipes the file into a command) and the
// database plug-ins built on the stock tools (PostgreSQL: pg_dump,
// pg_dumpall, pg_restore). It knows nothing of streams or tapes: a Source
// expands into Steps, each a program whose output the producer stores; a
// Target says where a restored file goes.
//
// Connection settings and credentials are never on a command line this
// package builds: the tools read them from their own environment and files
// (PGHOST, PGPORT, PGUSER, PGPASSFILE, ~/.pgpass), which the process
// inherits. Errors name the step and end with the tail of the program's
// standard error; the command text itself is not repeated (it may hold
// secrets a user typed).
package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
)

// Kinds of a Source.
const (
	KindCommand    = "command"    // any shell command's standard output
	KindPostgreSQL = "postgresql" // logical: pg_dump -Fc per database, pg_dumpall --globals-only
	// KindPostgreSQLCluster is physical: the whole cluster as pg_basebackup's
	// tar stream, with the WAL it needs to be consistent.
	KindPostgreSQLCluster = "postgresql-cluster"
	// KindWAL is one file of a PostgreSQL cluster's WAL archive
	// (kura wal archive, PostgreSQL's archive_command).
	KindWAL = "postgresql-wal"
	// KindMariaDB is logical: mariadb-dump per database.
	KindMariaDB = "mariadb"
	// KindMariaDBPhysical is physical: mariadb-backup's xbstream.
	KindMariaDBPhysical = "mariadb-physical"
)

// Plugins are the plug-in names `--plugin` accepts.
var Plugins = []string{KindPostgreSQL, KindPostgreSQLCluster, KindMariaDB, KindMariaDBPhysical}

// Errors of this package; each is wrapped with the detail.
var (
	// ErrBadSource: a source is not valid (no command, a bad name, an
	// unknown plug-in, a database name that cannot be one).
	ErrBadSource = errors.New("invalid source")
	// ErrFailed: a program exited with a non-zero status or was killed.
	ErrFailed = errors.New("command failed")
	// ErrMissingTool: a plug-in's program is not installed (not on PATH).
	ErrMissingTool = errors.New("program not found")
	// ErrNotAllowed: an agent was asked to run a command or plug-in its
	// administrator did not allow.
	ErrNotAllowed = errors.New("not allowed on this agent")
)

// Source is something a backup stores that is not files: a command or a
// plug-in. It travels in API requests and selection sets as JSON.
type Source struct {
	Kind string `json:"kind"` // KindCommand or a plug-in (KindPostgreSQL)
	// Command is a shell command (sh -c) whose standard output is stored
	// as the file Name (KindCommand).
	Command string `json:"command,omitempty"`
	Name    string `json:"name,omitempty"`
	// Databases to dump (plug-ins); AllDatabases dumps every database
	// that accepts connections.
	Databases    []string `json:"databases,omitempty"`
	AllDatabases bool     `json:"all_databases,omitempty"`
	// Path is the file a KindWAL source stores (as WAL name Name).
	Path string `json:"path,omitempty"`
	// (KindPostgreSQLCluster) Name is the cluster's name, as its WAL
	// archive is named (kura wal archive --cluster): retention and
	// point-in-time recovery pair the base backup with that archive.
	// Optional: a client that archives one cluster needs none.
}

// DefaultName is the file a command's output is stored as without --name.
const DefaultName = "stdout"

// PartSuffix joins a file's name and its part number (2, 3, …) for the
// entries after the first of a command's output (see producer). The stock
// recipe appends them, in name order, to the first.
const PartSuffix = ".kura-part-"

// PartName is the entry name of part n (≥ 2) of file name.
func PartName(name string, n int) string { return fmt.Sprintf("%s%s%06d", name, PartSuffix, n) }

// String describes a source for labels, logs and selection keys; it never
// holds the command text.
func (s Source) String() string {
	switch s.Kind {
	case KindCommand:
		return "command:" + s.Name
	case KindPostgreSQLCluster:
		if s.Name != "" {
			return s.Kind + ":" + s.Name // the cluster, as its WAL archive is named
		}
		return s.Kind
	case KindMariaDBPhysical:
		return s.Kind
	case KindWAL:
		return s.Kind + ":" + s.Name
	case KindPostgreSQL, KindMariaDB:
		if s.AllDatabases {
			return s.Kind + ":*"
		}
		return s.Kind + ":" + strings.Join(s.Databases, ",")
	}
	return s.Kind
}

// Validate checks a source before anything runs.
func (s Source) Validate() error {
	switch s.Kind {
	case KindCommand:
		if strings.TrimSpace(s.Command) == "" {
			return fmt.Errorf("%w: an empty command", ErrBadSource)
		}
		if strings.ContainsRune(s.Command, 0) {
			return fmt.Errorf("%w: a command with a NUL byte", ErrBadSource)
		}
		if len(s.Databases) > 0 || s.AllDatabases {
			return fmt.Errorf("%w: a command takes no databases", ErrBadSource)
		}
		return ValidName(s.Name)
	case KindPostgreSQL, KindMariaDB:
		if s.Command != "" || s.Name != "" {
			return fmt.Errorf("%w: plug-in %s takes databases, not a command or name", ErrBadSource, s.Kind)
		}
		if len(s.Databases) == 0 && !s.AllDatabases {
			return fmt.Errorf("%w: plug-in %s needs --db NAME or --all-databases", ErrBadSource, s.Kind)
		}
		if len(s.Databases) > 0 && s.AllDatabases {
			return fmt.Errorf("%w: give --db or --all-databases, not both", ErrBadSource)
		}
		for _, d := range s.Databases {
			if err := ValidDatabase(d); err != nil {
				return err
			}
		}
		return nil
	case KindWAL:
		// The path is where the file is read, on the machine that reads
		// it (an agent finds it in its spool): Steps checks it.
		if strings.ContainsRune(s.Path, 0) {
			return fmt.Errorf("%w: a WAL file's path with a NUL byte", ErrBadSource)
		}
		return ValidWALName(s.Name)
	case KindPostgreSQLCluster, KindMariaDBPhysical:
		if s.Command != "" || len(s.Databases) > 0 || s.AllDatabases {
			return fmt.Errorf("%w: plug-in %s backs up the whole cluster: it takes no --db or command", ErrBadSource, s.Kind)
		}
		if s.Name != "" && s.Kind == KindMariaDBPhysical {
			return fmt.Errorf("%w: plug-in %s takes no --cluster (a PostgreSQL base backup names its WAL archive)", ErrBadSource, s.Kind)
		}
		if s.Name != "" {
			return ValidCluster(s.Name)
		}
		return nil
	case "":
		return fmt.Errorf("%w: no kind", ErrBadSource)
	}
	return fmt.Errorf("%w: unknown plug-in %q (%s)", ErrBadSource, s.Kind, strings.Join(Plugins, ", "))
}

// ValidName checks the name a command's output is stored as: a clean
// relative path without NUL, "." or "..", that does not look like a part.
func ValidName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) || path.Clean(name) != name ||
		name == "." || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("%w: name %q: give a relative file name such as db.sql or dumps/db.sql", ErrBadSource, name)
	}
	if strings.Contains(path.Base(name), PartSuffix) {
		return fmt.Errorf("%w: name %q: %q is reserved for the parts of a large output", ErrBadSource, name, PartSuffix)
	}
	return nil
}

// ValidDatabase checks a database name before it reaches a tool's
// command line and a file name: no '/', NUL, newline or '=' (a tool
// would read a name with '=' as connection settings), no leading '-'.
func ValidDatabase(d string) error {
	if d == "" || d == "." || d == ".." || strings.ContainsAny(d, "/\x00\n\r=`\\") || strings.HasPrefix(d, "-") ||
		strings.Contains(d, "://") || len(d) > 63 {
		return fmt.Errorf("%w: database name %q", ErrBadSource, d)
	}
	return nil
}

// Step is one program of a backup: its standard output is stored as the
// file Name.
type Step struct {
	Name string
	Argv []string // program and arguments
	// Label names the step in errors and logs ("command for stdout",
	// "pg_dump of app"), without the command text.
	Label string
}

// CheckNames refuses steps whose names would collide in a saveset: the
// same name twice, or a name that another starts with followed by a byte
// that sorts at or before '/' (its parts would not stay together).
func CheckNames(steps []Step) error {
	for i, a := range steps {
		for j, b := range steps {
			if i == j {
				continue
			}
			if a.Name == b.Name {
				return fmt.Errorf("%w: two sources store %q", ErrBadSource, a.Name)
			}
			if strings.HasPrefix(b.Name, a.Name) && b.Name[len(a.Name)] <= '/' {
				return fmt.Errorf("%w: names %q and %q: one may not start with the other followed by %q", ErrBadSource, a.Name, b.Name, b.Name[len(a.Name)])
			}
		}
	}
	return nil
}

// Expand turns sources into the steps that produce their files. A
// plug-in that dumps all databases lists them first (a query run by its
// tools, on this machine).
func Expand(ctx context.Context, sources []Source) ([]Step, error) {
	var steps []Step
	for _, s := range sources {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		switch s.Kind {
		case KindCommand:
			steps = append(steps, Step{Name: s.Name, Argv: []string{"/bin/sh", "-c", s.Command}, Label: "command for " + s.Name})
		case KindPostgreSQLCluster:
			steps = append(steps, clusterStep())
		case KindMariaDBPhysical:
			steps = append(steps, mariadbPhysicalStep())
		case KindWAL:
			if s.Path == "" {
				return nil, fmt.Errorf("%w: a WAL file needs its path", ErrBadSource)
			}
			steps = append(steps, Step{Name: WALDir + "/" + s.Name, Argv: []string{"cat", "--", s.Path}, Label: "archiving WAL file " + s.Name})
		case KindMariaDB:
			st, err := mariadbSteps(ctx, s)
			if err != nil {
				return nil, err
			}
			steps = append(steps, st...)
		case KindPostgreSQL:
			st, err := postgresSteps(ctx, s)
			if err != nil {
				return nil, err
			}
			steps = append(steps, st...)
		}
	}
	if err := CheckNames(steps); err != nil {
		return nil, err
	}
	return steps, nil
}

// tailSize is how much of a program's standard error an error keeps.
const tailSize = 2048

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, []byte("?"))))
}

// Proc is a running program.
type Proc struct {
	label  string
	cmd    *exec.Cmd
	stderr *tail
}

// start starts argv with stdin and stdout as given (nil: none).
func start(ctx context.Context, label string, argv []string, stdin io.Reader, stdout io.Writer) (*Proc, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("%s: %w: %s (install it, or put it on PATH)", label, ErrMissingTool, argv[0])
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	t := &tail{}
	cmd.Stderr = t
	// Its own process group, so that a cancelled job ends a shell's
	// children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return &Proc{label: label, cmd: cmd, stderr: t}, nil
}

// StartStep starts a step; its standard output is read from the returned
// reader, and Wait says how it ended.
func StartStep(ctx context.Context, s Step) (*Proc, io.ReadCloser, error) {
	if len(s.Argv) == 0 {
		return nil, nil, fmt.Errorf("%w: %s: no program", ErrBadSource, s.Label)
	}
	pr, pw, err := pipe()
	if err != nil {
		return nil, nil, err
	}
	p, err := start(ctx, s.Label, s.Argv, nil, pw)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, nil, err
	}
	return p, pr, nil
}

// Wait waits for the program to end; a non-zero status or a signal is an
// error wrapping ErrFailed with the tail of its standard error.
func (p *Proc) Wait() error {
	err := p.cmd.Wait()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg := fmt.Sprintf("%s: %v", p.label, ErrFailed)
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			msg += fmt.Sprintf(" (killed by %v)", st.Signal())
		} else {
			msg += fmt.Sprintf(" (exit status %d)", ee.ExitCode())
		}
		if t := p.stderr.String(); t != "" {
			msg += ": " + t
		}
		return &Error{msg: msg}
	}
	return fmt.Errorf("%s: %w", p.label, err)
}

// Error is a program that failed: its label, status and standard error's
// tail. It wraps ErrFailed.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return ErrFailed }
