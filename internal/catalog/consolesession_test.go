package catalog

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// A console session is recorded, read back as written, touched forward
// only, deleted, and pruned once past its expiry or idle; a second catalog
// handle on the same database (a restarted server, a standby) sees it.
func TestConsoleSessions(t *testing.T) { onBoth(t, testConsoleSessions) }

func testConsoleSessions(t *testing.T) {
	c, dsn := openTemp(t)
	a := ConsoleSession{Hash: "aa", User: "alice", Role: "admin", Stamp: "s1", Created: t0, Expires: t0.Add(12 * time.Hour)}
	must(t, c.AddConsoleSession(a))
	if err := c.AddConsoleSession(a); !errors.Is(err, ErrExists) {
		t.Errorf("the same hash twice: %v; want ErrExists", err)
	}
	for _, bad := range []ConsoleSession{{Created: t0, Expires: t0}, {Hash: "x", Expires: t0}, {Hash: "x", Created: t0}} {
		if err := c.AddConsoleSession(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("AddConsoleSession(%+v): %v; want ErrInvalid", bad, err)
		}
	}
	want := a
	want.LastUsed = t0
	if got, err := c.ConsoleSessionByHash("aa"); err != nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("read back: %+v, %v; want %+v", got, err, want)
	}
	if _, err := c.ConsoleSessionByHash("bb"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown hash: %v; want ErrNotFound", err)
	}

	// Touches move LastUsed forward only.
	must(t, c.TouchConsoleSession("aa", t0.Add(5*time.Minute)))
	must(t, c.TouchConsoleSession("aa", t0.Add(2*time.Minute)))
	must(t, c.TouchConsoleSession("gone", t0.Add(2*time.Minute)))
	if got, _ := c.ConsoleSessionByHash("aa"); !got.LastUsed.Equal(t0.Add(5 * time.Minute)) {
		t.Errorf("last used %v after touches at +5 and +2 min; want +5 min", got.LastUsed)
	}

	// Another handle on the same database: a restarted server.
	c2, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := c2.ConsoleSessionByHash("aa"); err != nil || got.User != "alice" {
		t.Fatalf("the session from a second handle: %+v, %v", got, err)
	}

	// Prune: b is idle, d past its lifetime, a still in use.
	must(t, c.AddConsoleSession(ConsoleSession{Hash: "bb", Created: t0, Expires: t0.Add(12 * time.Hour)}))
	must(t, c.AddConsoleSession(ConsoleSession{Hash: "dd", Created: t0.Add(-12 * time.Hour), LastUsed: t0.Add(10 * time.Minute), Expires: t0.Add(11 * time.Minute)}))
	at := t0.Add(31 * time.Minute)
	n, err := c2.PruneConsoleSessions(at, at.Add(-30*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("prune: %d, %v; want 2", n, err)
	}
	for h, kept := range map[string]bool{"aa": true, "bb": false, "dd": false} {
		if _, err := c.ConsoleSessionByHash(h); (err == nil) != kept {
			t.Errorf("after pruning, session %s: %v; kept should be %v", h, err, kept)
		}
	}

	must(t, c2.DeleteConsoleSession("aa"))
	must(t, c2.DeleteConsoleSession("aa"))
	if _, err := c.ConsoleSessionByHash("aa"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted session: %v; want ErrNotFound", err)
	}
}
