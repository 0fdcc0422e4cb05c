package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Target is where a restore writes a file of a command or plug-in saveset
// instead of a folder: into a command's standard input, or into a
// PostgreSQL database (created with createdb, filled by pg_restore).
type Target struct {
	Command  string `json:"command,omitempty"`  // sh -c COMMAND reads the file on its standard input
	Database string `json:"database,omitempty"` // a new database (or the dropped original) for a pg_dump file
	// Jobs > 1 runs pg_restore with that many jobs; pg_restore needs the
	// dump as a file for that, so it is first written to a temporary file
	// in TempDir (default: $TMPDIR). With 1 the dump is streamed.
	Jobs    int    `json:"jobs,omitempty"`
	TempDir string `json:"temp_dir,omitempty"`
	// Cluster is a new folder to extract a PostgreSQL base backup into;
	// Recovery, when its Cluster is set, makes it recover from Kura's WAL
	// archive.
	Cluster  string   `json:"cluster,omitempty"`
	Recovery Recovery `json:"-"`
	// Allowed, when set, says whether the plug-in a restore into a
	// database needs may run (an agent's Allow); nil allows all.
	Allowed func(kind string) error `json:"-"`
}

func (t Target) allowed(kind string) error {
	if t.Allowed == nil {
		return nil
	}
	return t.Allowed(kind)
}

// MaxJobs bounds Target.Jobs.
const MaxJobs = 64

// IsSet reports whether the target says where to write.
func (t Target) IsSet() bool { return t.Command != "" || t.Database != "" || t.Cluster != "" }

// Validate checks a target before anything runs.
func (t Target) Validate() error {
	n := 0
	for _, set := range []bool{t.Command != "", t.Database != "", t.Cluster != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%w: give one of --to-command, --to-db and --to-cluster", ErrBadSource)
	case t.Cluster != "":
		if t.Jobs > 1 {
			return fmt.Errorf("%w: --jobs goes with --to-db", ErrBadSource)
		}
		if !filepath.IsAbs(t.Cluster) {
			return fmt.Errorf("%w: --to-cluster %q: give an absolute folder", ErrBadSource, t.Cluster)
		}
		if t.Recovery.Cluster != "" {
			return ValidCluster(t.Recovery.Cluster)
		}
		return nil
	case t.Database != "":
		if t.Jobs < 0 || t.Jobs > MaxJobs {
			return fmt.Errorf("%w: --jobs %d (1 to %d)", ErrBadSource, t.Jobs, MaxJobs)
		}
		return ValidDatabase(t.Database)
	case t.Command != "":
		if t.Jobs > 1 {
			return fmt.Errorf("%w: --jobs goes with --to-db", ErrBadSource)
		}
		return nil
	}
	return fmt.Errorf("%w: no command or database to restore into", ErrBadSource)
}

// Open starts writing the file name into the target. Close waits for the
// program(s) and returns how they ended; Abort ends them.
func (t Target) Open(ctx context.Context, name string) (Sink, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if t.Command != "" {
		return startSink(ctx, "command restoring "+name, []string{"/bin/sh", "-c", t.Command})
	}
	if t.Cluster != "" {
		return t.openCluster(ctx, name)
	}
	if MariaDBDatabase(name) != "" {
		if err := t.allowed(KindMariaDB); err != nil {
			return nil, err
		}
		return t.openMariaDB(ctx, name)
	}
	if DumpDatabase(name) == "" {
		return nil, fmt.Errorf("%w: %s is not a database dump (postgresql/NAME.dump, mariadb/NAME.sql); restore it with --to or --to-command", ErrBadSource, name)
	}
	if err := t.allowed(KindPostgreSQL); err != nil {
		return nil, err
	}
	for _, tool := range []string{"createdb", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %s (install the PostgreSQL client tools, or put them on PATH)", ErrMissingTool, tool)
		}
	}
	// createdb fails on a name that exists: a restore never writes into a
	// database that holds something.
	p, err := start(ctx, "createdb "+t.Database, []string{"createdb", "--no-password", "--template=template0", "--", t.Database}, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	restore := []string{"pg_restore", "--no-password", "--exit-on-error", "--dbname=" + t.Database}
	label := "pg_restore into " + t.Database
	if t.Jobs <= 1 {
		return startSink(ctx, label, restore)
	}
	f, err := os.CreateTemp(t.TempDir, "kura-restore-*.dump")
	if err != nil {
		return nil, fmt.Errorf("a temporary file for pg_restore --jobs: %w", err)
	}
	return &fileSink{ctx: ctx, f: f, label: label, argv: append(restore, "--jobs="+strconv.Itoa(t.Jobs), f.Name())}, nil
}

// Sink is an open target: Write the file, then Close (wait for the
// program, its error) or Abort.
type Sink interface {
	io.WriteCloser
	Abort()
}

// procSink streams into a program's standard input.
type procSink struct {
	p  *Proc
	w  *os.File
	ok bool
}

func startSink(ctx context.Context, label string, argv []string) (*procSink, error) {
	pr, pw, err := pipe()
	if err != nil {
		return nil, err
	}
	p, err := start(ctx, label, argv, pr, nil)
	pr.Close()
	if err != nil {
		pw.Close()
		return nil, err
	}
	return &procSink{p: p, w: pw}, nil
}

func (s *procSink) Write(b []byte) (int, error) {
	n, err := s.w.Write(b)
	if err != nil {
		// The program stopped reading: how it ended says why.
		s.w.Close()
		if werr := s.p.Wait(); werr != nil {
			return n, werr
		}
		return n, fmt.Errorf("%s: stopped reading its input: %w", s.p.label, err)
	}
	return n, nil
}

func (s *procSink) Close() error {
	s.w.Close()
	return s.p.Wait()
}

func (s *procSink) Abort() {
	s.w.Close()
	if s.p.cmd.Process != nil {
		_ = s.p.cmd.Cancel()
	}
	_ = s.p.cmd.Wait()
}

// fileSink writes a temporary file, then runs a program on it.
type fileSink struct {
	ctx   context.Context
	f     *os.File
	label string
	argv  []string
}

func (s *fileSink) Write(b []byte) (int, error) { return s.f.Write(b) }

func (s *fileSink) Close() error {
	defer os.Remove(s.f.Name())
	if err := s.f.Close(); err != nil {
		return err
	}
	p, err := start(s.ctx, s.label, s.argv, nil, nil)
	if err != nil {
		return err
	}
	return p.Wait()
}

func (s *fileSink) Abort() {
	s.f.Close()
	os.Remove(s.f.Name())
}
