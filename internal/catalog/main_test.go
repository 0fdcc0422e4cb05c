package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/pgtest"
)

// pg is the PostgreSQL server the tests run the catalog on, besides SQLite.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		s, err := pgtest.Start("fsync=off")
		if err != nil {
			fmt.Fprintln(os.Stderr, "catalog tests:", err)
			os.Exit(1)
		}
		pg = s
	}
	code := m.Run()
	if err := pg.Stop(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "catalog tests:", err)
		code = 1
	}
	os.Exit(code)
}

// onBoth runs test twice, as subtests: on a SQLite catalog ("sqlite") and
// on a PostgreSQL one ("postgres"). openTemp and newDSN in it give a new
// catalog on that backend.
func onBoth(t *testing.T, test func(t *testing.T)) {
	t.Run("sqlite", test)
	t.Run("postgres", test)
}

// backendOf is the backend of the onBoth subtest t is, or is in: "sqlite"
// or "postgres".
func backendOf(t testing.TB) string {
	parts := strings.Split(t.Name(), "/")
	if len(parts) > 1 && parts[1] == "postgres" {
		return "postgres"
	}
	return "sqlite"
}

// newDSN names a new, empty catalog for t on its backend: a file in a
// temporary folder, or a new PostgreSQL database.
func newDSN(t testing.TB) string {
	t.Helper()
	if backendOf(t) == "postgres" {
		return pgDSN(t)
	}
	return filepath.Join(t.TempDir(), "catalog.db")
}

// pgDSN is the URL of a new, empty PostgreSQL database.
func pgDSN(t testing.TB) string {
	t.Helper()
	if pg == nil {
		// A child process of TestTwoProcesses is given its DSN.
		t.Fatal("no PostgreSQL server in this process")
	}
	db, err := pg.CreateDatabase(context.Background(), "catalog")
	if err != nil {
		t.Fatal(err)
	}
	return pg.URL(db)
}
