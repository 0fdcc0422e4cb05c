package plugin

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSourceValidate(t *testing.T) {
	for _, c := range []struct {
		s  Source
		ok bool
	}{
		{Source{Kind: KindCommand, Command: "pg_dumpall", Name: "all.sql"}, true},
		{Source{Kind: KindCommand, Command: "x", Name: "dumps/a.sql"}, true},
		{Source{Kind: KindCommand, Command: " ", Name: "a"}, false},
		{Source{Kind: KindCommand, Command: "x", Name: "../a"}, false},
		{Source{Kind: KindCommand, Command: "x", Name: "/a"}, false},
		{Source{Kind: KindCommand, Command: "x", Name: "a//b"}, false},
		{Source{Kind: KindCommand, Command: "x", Name: "a.kura-part-000002"}, false},
		{Source{Kind: KindCommand, Command: "x", Name: "a", Databases: []string{"d"}}, false},
		{Source{Kind: KindPostgreSQL, Databases: []string{"app", "app2"}}, true},
		{Source{Kind: KindPostgreSQL, AllDatabases: true}, true},
		{Source{Kind: KindPostgreSQL}, false},
		{Source{Kind: KindPostgreSQL, Databases: []string{"a"}, AllDatabases: true}, false},
		{Source{Kind: KindPostgreSQL, Databases: []string{"host=evil"}}, false},
		{Source{Kind: KindPostgreSQL, Databases: []string{"postgres://evil/x"}}, false},
		{Source{Kind: KindPostgreSQL, Databases: []string{"-f/etc/passwd"}}, false},
		{Source{Kind: KindPostgreSQL, Databases: []string{"a/b"}}, false},
		{Source{Kind: KindPostgreSQLCluster}, true},
		{Source{Kind: KindPostgreSQLCluster, Databases: []string{"a"}}, false},
		{Source{Kind: KindPostgreSQLCluster, Name: "reports"}, true}, // the cluster's WAL archive
		{Source{Kind: KindPostgreSQLCluster, Name: "../x"}, false},
		{Source{Kind: KindMariaDBPhysical, Name: "main"}, false},
		{Source{Kind: KindWAL, Name: "main/000000010000000000000003", Path: "pg_wal/x"}, true},
		{Source{Kind: KindWAL, Name: "main/00000002.history", Path: "p"}, true},
		{Source{Kind: KindWAL, Name: "main/000000010000000000000003.00000028.backup", Path: "p"}, true},
		{Source{Kind: KindWAL, Name: "main/../../etc", Path: "p"}, false},
		{Source{Kind: KindWAL, Name: "000000010000000000000003", Path: "p"}, false},
		{Source{Kind: "mysql", Databases: []string{"a"}}, false},
		{Source{}, false},
	} {
		err := c.s.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok=%v", c.s, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBadSource) {
			t.Errorf("%+v: %v does not wrap ErrBadSource", c.s, err)
		}
	}
}

// Names whose parts would not stay together in index order are refused.
func TestCheckNames(t *testing.T) {
	for _, c := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"a.dump", "b.dump"}, true},
		{[]string{"app.dump", "app2.dump"}, true},
		{[]string{"a", "a"}, false},
		{[]string{"a", "a-b"}, false}, // '-' sorts before '.': between a and a.kura-part-…
		{[]string{"a", "a/b"}, false},
		{[]string{"a", "a.b"}, false},
		{[]string{"a", "ab"}, true},
	} {
		var steps []Step
		for _, n := range c.names {
			steps = append(steps, Step{Name: n})
		}
		if err := CheckNames(steps); (err == nil) != c.ok {
			t.Errorf("%v: %v, want ok=%v", c.names, err, c.ok)
		}
	}
}

// A failed program's error says how it ended and the end of its
// standard error, and wraps ErrFailed.
func TestStepFailure(t *testing.T) {
	p, out, err := StartStep(context.Background(), Step{Name: "x", Label: "command for x",
		Argv: []string{"/bin/sh", "-c", "echo data; i=0; while [ $i -lt 300 ]; do echo noise-$i >&2; i=$((i+1)); done; echo 'the real reason' >&2; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out)
	out.Close()
	err = p.Wait()
	if string(b) != "data\n" || !errors.Is(err, ErrFailed) {
		t.Fatalf("output %q, error %v", b, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "command for x") || !strings.Contains(msg, "exit status 4") || !strings.HasSuffix(msg, "the real reason") {
		t.Errorf("error %q: want the label, the status and the stderr tail", msg)
	}
	if len(msg) > tailSize+100 {
		t.Errorf("error of %d bytes: the tail should be at most %d", len(msg), tailSize)
	}
	if _, _, err := StartStep(context.Background(), Step{Name: "x", Label: "l", Argv: []string{"no-such-tool-kura"}}); !errors.Is(err, ErrMissingTool) {
		t.Errorf("a missing program: %v, want ErrMissingTool", err)
	}
}

func TestAllow(t *testing.T) {
	cmd := Source{Kind: KindCommand, Command: "x", Name: "a"}
	pg := Source{Kind: KindPostgreSQL, Databases: []string{"a"}}
	for _, c := range []struct {
		a       Allow
		cmd, pg bool
	}{
		{Allow{}, false, false},
		{Allow{Plugins: []string{KindPostgreSQL}}, false, true},
		{Allow{Commands: true}, true, true},
	} {
		if err := c.a.Source(cmd); (err == nil) != c.cmd || err != nil && !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%+v, command: %v", c.a, err)
		}
		if err := c.a.Source(pg); (err == nil) != c.pg {
			t.Errorf("%+v, postgresql: %v", c.a, err)
		}
		if err := c.a.Target(Target{Command: "x"}); (err == nil) != c.cmd {
			t.Errorf("%+v, --to-command: %v", c.a, err)
		}
		if err := c.a.Target(Target{Database: "x"}); (err == nil) != c.pg {
			t.Errorf("%+v, --to-db: %v", c.a, err)
		}
	}
}

// The recovery settings PostgreSQL reads: quoted, the moment with its zone.
func TestRecoveryWrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "postgresql.auto.conf"), []byte("# Do not edit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 14, 3, 0, 123456000, time.FixedZone("JST", 9*3600))
	r := Recovery{Cluster: "main", At: at, Command: "kura --home '/srv/k' wal get --cluster main %f %p"}
	if err := r.write(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "postgresql.auto.conf"))
	for _, want := range []string{"# Do not edit\n", "restore_command = 'kura --home ''/srv/k'' wal get --cluster main %f %p'\n",
		"recovery_target_time = '2026-12-02 14:03:00.123456+09:00'\n", "recovery_target_action = 'promote'\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("postgresql.auto.conf lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "recovery.signal")); err != nil {
		t.Errorf("recovery.signal: %v", err)
	}
	if err := (Recovery{Cluster: "main", Command: "a\nb"}).write(t.TempDir()); !errors.Is(err, ErrBadSource) {
		t.Errorf("a restore_command with a newline: %v", err)
	}
}
