package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestServer: a cluster starts, each CreateDatabase gives a new database
// that takes writes, the stock tools reach it through Env, and Stop
// removes the folder.
func TestServer(t *testing.T) {
	s, err := Start("fsync=off")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := s.CreateDatabase(ctx, "Kura")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateDatabase(ctx, "kura")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !strings.HasPrefix(a, "kura_") {
		t.Fatalf("databases %q and %q: want two names starting kura_", a, b)
	}
	c, err := pgx.Connect(ctx, s.URL(a))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)

	psql := exec.Command(s.Bin+"/psql", "-At", "-d", a, "-c", "SELECT v FROM t")
	if _, err := os.Stat(psql.Path); err != nil {
		psql.Path = "psql"
	}
	psql.Env = append(os.Environ(), s.Env()...)
	out, err := psql.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "x" {
		t.Fatalf("psql through Env: %v: %q", err, out)
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("folder %s after Stop: %v", s.Dir, err)
	}
}
