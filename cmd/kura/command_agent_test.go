package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startServerAgents starts a server, logs an admin in, and enrolls and
// runs one agent per name with its own `agent run` flags and the
// environment env.
func startServerAgents(t *testing.T, agents map[string][]string, env ...string) (*kura, map[string]*kura) {
	t.Helper()
	srvK := newKura(t)
	url := srvK.start("server", "--listen", "127.0.0.1:0").listenURL(t)
	admin := loginAdmin(t, srvK.home, url)
	out := map[string]*kura{}
	var names []string
	for name, flags := range agents {
		out[name] = admin.enroll(url, name, env, flags...)
		names = append(names, name)
	}
	admin.connected(names...)
	return admin, out
}

// Through an agent: the command runs on the client (its output stored,
// its exit status deciding), the restore command too — but only on an
// agent whose administrator allowed commands; another refuses, and the
// job says why.
func TestFromCommandThroughAgent(t *testing.T) {
	t.Parallel()
	admin, agents := startServerAgents(t, map[string][]string{"open": {"--allow-commands"}, "closed": nil})
	open, closed := agents["open"], agents["closed"]
	want := randomFile(t, open.dir, "src.bin", 300<<10)

	var fig figures
	admin.json(0, &fig, "backup", "--client", "open", "--json", "--from-command", "cat src.bin", "--name", "out.bin", "--part-size", "128KiB")
	if fig.Status != "completed" || fig.Files != 1 || fig.SourceBytes != int64(len(want)) {
		t.Fatalf("backup through the agent: %+v", fig)
	}
	id := itoa64(fig.SavesetID)
	admin.ok("restore", "--client", "open", id, "--to-command", "cat > back.bin")
	if got, _ := os.ReadFile(filepath.Join(open.dir, "back.bin")); !bytes.Equal(got, want) {
		t.Errorf("--to-command on the agent got %d bytes, want %d", len(got), len(want))
	}
	r := admin.expect(exitFailure, "backup", "--client", "open", "--from-command", "echo half; echo 'no space' >&2; exit 7")
	if !strings.Contains(r.stderr, "exit status 7") || !strings.Contains(r.stderr, "no space") {
		t.Errorf("a failing command through the agent should say its status and stderr:\n%s", r)
	}

	// An agent that was not allowed refuses, for backup and restore.
	r = admin.expect(exitFailure, "backup", "--client", "closed", "--from-command", "touch pwned")
	if !strings.Contains(r.stderr, "not allowed on this agent") || !strings.Contains(r.stderr, "--allow-commands") {
		t.Errorf("a refused command should say so and how to allow it:\n%s", r)
	}
	r = admin.expect(exitFailure, "restore", "--client", "open", "--to-client", "closed", id, "--to-command", "cat > pwned")
	if !strings.Contains(r.stderr, "not allowed on this agent") {
		t.Errorf("a refused restore command should say so:\n%s", r)
	}
	r = admin.expect(exitFailure, "backup", "--client", "closed", "--plugin", "postgresql", "--db", "app")
	if !strings.Contains(r.stderr, "--allow-plugin postgresql") {
		t.Errorf("a refused plug-in should say how to allow it:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(closed.dir, "pwned")); err == nil {
		t.Error("the agent that was not allowed ran a command")
	}
	// The earlier saveset is still restorable.
	admin.ok("restore", "--client", "open", id, "--to-command", "cmp - src.bin")
}

// The PostgreSQL plug-in through an agent allowed to run it: pg_dump on
// the client, and a restore into a new database there; an agent allowed
// only postgresql refuses a command.
func TestPostgreSQLThroughAgent(t *testing.T) {
	t.Parallel()
	s := postgres(t)
	db, err := s.CreateDatabase(context.Background(), "remote")
	if err != nil {
		t.Fatal(err)
	}
	pgTool(t, s, "psql", "--no-psqlrc", "-d", db, "-c", "CREATE TABLE t AS SELECT g AS v FROM generate_series(1, 250) g")
	admin, _ := startServerAgents(t, map[string][]string{"db1": {"--allow-plugin", "postgresql"}}, s.Env()...)
	var fig figures
	admin.json(0, &fig, "backup", "--client", "db1", "--json", "--plugin", "postgresql", "--db", db)
	if fig.Status != "completed" || fig.Files != 2 {
		t.Fatalf("backup through the agent: %+v", fig)
	}
	admin.ok("restore", "--client", "db1", itoa64(fig.SavesetID), "--to-db", db+"_back", "--jobs", "2")
	if out := pgTool(t, s, "psql", "--no-psqlrc", "-At", "-d", db+"_back", "-c", "SELECT count(*), sum(v) FROM t"); strings.TrimSpace(out) != "250|31375" {
		t.Errorf("the database restored through the agent: %q, want 250|31375", out)
	}
	if r := admin.expect(exitFailure, "backup", "--client", "db1", "--from-command", "id"); !strings.Contains(r.stderr, "--allow-commands") {
		t.Errorf("an agent allowed only a plug-in should refuse a command:\n%s", r)
	}
}
