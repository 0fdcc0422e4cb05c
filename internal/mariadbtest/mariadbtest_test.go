package mariadbtest

import (
	"context"
	"os"
	"testing"
)

// TestServer: a server starts, a database takes writes through the stock
// client, and Stop removes the folder.
func TestServer(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := s.CreateDatabase(ctx, "Kura")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, db, "CREATE TABLE t (v text); INSERT INTO t VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Query(ctx, db, "SELECT v FROM t"); err != nil || got != "x" {
		t.Fatalf("SELECT: %q, %v", got, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("folder %s after Stop: %v", s.Dir, err)
	}
}
