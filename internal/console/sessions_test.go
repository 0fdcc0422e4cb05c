package console

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
)

// A session started on one console is valid on a new console over the
// same catalog (a restarted server, a standby that took over), with the
// same CSRF token; signed out on the new one, it is refused on both.
func TestSessionSurvivesRestart(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("alice", "correct horse battery", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	ck, csrf := f.signIn("alice", "correct horse battery")
	tok, tokCSRF := f.signIn("", adminToken)
	old := f.c
	f.clk.add(5 * time.Minute)
	f.restart()
	for _, c := range []struct{ who, ck, csrf string }{{"alice", ck, csrf}, {"the admin token", tok, tokCSRF}} {
		if resp := f.do("GET", "/jobs", c.ck, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s's session after a restart: %d; want 200", c.who, resp.StatusCode)
		}
		if got := f.csrfOf(c.ck); got != c.csrf {
			t.Errorf("%s's CSRF token after a restart: %q; want the one before, %q", c.who, got, c.csrf)
		}
		if resp := f.do("POST", "/jobs/5/cancel", c.ck, url.Values{"csrf": {c.csrf}}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s's cancel after a restart: %d; want 303", c.who, resp.StatusCode)
		}
	}
	if got := f.b.cancels(); len(got) != 2 {
		t.Errorf("cancels %v; want two", got)
	}

	if resp := f.do("POST", "/logout", ck, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	for name, c := range map[string]*Console{"new": f.c, "old": old} {
		f.c = c
		if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the signed-out session on the %s console: %d; want a redirect to sign in", name, resp.StatusCode)
		}
		if resp := f.do("GET", "/jobs", tok, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("the other session on the %s console: %d; want 200", name, resp.StatusCode)
		}
	}
	if _, err := f.cat.ConsoleSessionByHash(hashID(ck)); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("the signed-out session's row: %v; want it deleted", err)
	}
}

// A session idle for longer than Idle is refused and its row deleted; one
// in use ends at its lifetime however busy; a session no browser comes
// back for is pruned by another's request, or at start.
func TestSessionExpiryAndPruning(t *testing.T) {
	f := newFixture(t)
	busy, _ := f.signIn("", adminToken)
	idle, _ := f.signIn("", adminToken)
	f.clk.add(20 * time.Minute)
	f.do("GET", "/jobs", busy, nil)
	f.clk.add(11 * time.Minute) // idle: 31 minutes; busy: 11
	if resp := f.do("GET", "/jobs", busy, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the busy session: %d", resp.StatusCode)
	}
	if _, err := f.cat.ConsoleSessionByHash(hashID(idle)); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("the idle session after another's request: %v; want it pruned", err)
	}
	if resp := f.do("GET", "/jobs", idle, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the idle session: %d; want a redirect to sign in", resp.StatusCode)
	}

	// Busy every 20 minutes, it still ends DefaultLifetime after sign-in.
	start := f.clk.now().Add(-31 * time.Minute)
	for f.clk.now().Add(20 * time.Minute).Before(start.Add(DefaultLifetime)) {
		f.clk.add(20 * time.Minute)
		if resp := f.do("GET", "/jobs", busy, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("the busy session %v after sign-in: %d; want 200", f.clk.now().Sub(start), resp.StatusCode)
		}
	}
	f.clk.add(20 * time.Minute)
	if resp := f.do("GET", "/jobs", busy, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the busy session %v after sign-in: %d; want a redirect to sign in", f.clk.now().Sub(start), resp.StatusCode)
	}
	if _, err := f.cat.ConsoleSessionByHash(hashID(busy)); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("the session past its lifetime: %v; want its row deleted", err)
	}

	// At start: a new console prunes what ended while none ran.
	gone, _ := f.signIn("", adminToken)
	f.clk.add(time.Hour)
	f.restart()
	if _, err := f.cat.ConsoleSessionByHash(hashID(gone)); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("a session idle across a restart: %v; want it pruned at start", err)
	}
}

// A cookie changed by one character, or set to what the catalog stores,
// signs nobody in; the catalog's files hold neither the cookie nor the
// CSRF token.
func TestSessionCookieTamperedAndNotStored(t *testing.T) {
	f := newFixture(t)
	ck, csrf := f.signIn("", adminToken)
	flip := []byte(ck)
	flip[len(flip)/2] ^= 1
	for what, bad := range map[string]string{"one bit flipped": string(flip), "the stored hash": hashID(ck), "cut short": ck[:len(ck)-1]} {
		if resp := f.do("GET", "/jobs", bad, nil); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("cookie (%s): %d; want a redirect to sign in", what, resp.StatusCode)
		}
		if resp := f.do("POST", "/jobs/5/cancel", bad, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a change with a cookie (%s): %d; want 401", what, resp.StatusCode)
		}
	}
	if got := f.b.cancels(); len(got) != 0 {
		t.Errorf("cancels with bad cookies reached the server: %v", got)
	}
	if s, err := f.cat.ConsoleSessionByHash(hashID(ck)); err != nil || s.Hash == ck {
		t.Fatalf("the session's row: %+v, %v", s, err)
	}
	// The row is in the database file or its write-ahead log: read both.
	files, _ := filepath.Glob(filepath.Join(f.dbDir, "catalog.db*"))
	var all []byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if !bytes.Contains(all, []byte(hashID(ck))) {
		t.Fatalf("the catalog's files %v do not hold the session's hash: the test looks in the wrong place", files)
	}
	if bytes.Contains(all, []byte(ck)) || bytes.Contains(all, []byte(csrf)) {
		t.Errorf("the catalog's files hold the session's cookie or CSRF token")
	}
}

// A user removed, or removed and added again with a new password, is
// signed out of every session, on every console; so is a session of an
// admin token that has been replaced.
func TestSessionsEndWithTheirCredential(t *testing.T) {
	f := newFixture(t)
	f.stamp = "token-1"
	f.restart()
	if err := f.users.Add("alice", "correct horse battery", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	ck, _ := f.signIn("alice", "correct horse battery")
	tok, _ := f.signIn("", adminToken)
	if err := f.users.Remove("alice"); err != nil {
		t.Fatal(err)
	}
	if err := f.users.Add("alice", "a new password, at last", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	f.restart()
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session of alice's old password: %d; want a redirect to sign in", resp.StatusCode)
	}
	if _, err := f.cat.ConsoleSessionByHash(hashID(ck)); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("the ended session's row: %v; want it deleted", err)
	}
	fresh, _ := f.signIn("alice", "a new password, at last")
	if resp := f.do("GET", "/jobs", fresh, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("alice signed in again: %d; want 200", resp.StatusCode)
	}
	if resp := f.do("GET", "/jobs", tok, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the admin token's session, same token: %d; want 200", resp.StatusCode)
	}
	f.stamp = "token-2" // the server restarted with a new admin.token
	f.restart()
	if resp := f.do("GET", "/jobs", tok, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session of the replaced admin token: %d; want a redirect to sign in", resp.StatusCode)
	}
}

// faultyStore is a SessionStore whose reads fail while failing is set,
// and which counts the writes of last use.
type faultyStore struct {
	SessionStore
	mu      sync.Mutex
	failing bool
	touches int
}

func (s *faultyStore) ConsoleSessionByHash(hash string) (*catalog.ConsoleSession, error) {
	s.mu.Lock()
	failing := s.failing
	s.mu.Unlock()
	if failing {
		return nil, errors.New("catalog unreachable")
	}
	return s.SessionStore.ConsoleSessionByHash(hash)
}

func (s *faultyStore) TouchConsoleSession(hash string, at time.Time) error {
	s.mu.Lock()
	s.touches++
	s.mu.Unlock()
	return s.SessionStore.TouchConsoleSession(hash, at)
}

func (s *faultyStore) set(failing bool) { s.mu.Lock(); s.failing = failing; s.mu.Unlock() }
func (s *faultyStore) touched() int     { s.mu.Lock(); defer s.mu.Unlock(); return s.touches }

// Page views within a minute write the session's last use once at most;
// a catalog that cannot be read answers 500 and signs nobody out.
func TestSessionTouchesAndStoreFailure(t *testing.T) {
	f := newFixture(t)
	fs := &faultyStore{SessionStore: f.cat}
	f.store = fs
	f.restart()
	ck, _ := f.signIn("", adminToken)
	for range 10 {
		f.clk.add(5 * time.Second)
		if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /jobs: %d", resp.StatusCode)
		}
	}
	if n := fs.touched(); n != 0 {
		t.Errorf("10 page views in 50 s after sign-in wrote the last use %d times; want 0", n)
	}
	f.clk.add(15 * time.Second)
	for range 3 {
		f.do("GET", "/jobs", ck, nil)
	}
	if n := fs.touched(); n != 1 {
		t.Errorf("3 page views a minute after sign-in wrote the last use %d times; want 1", n)
	}
	if s, _ := f.cat.ConsoleSessionByHash(hashID(ck)); !s.LastUsed.Equal(f.clk.now()) {
		t.Errorf("last use %v; want %v", s.LastUsed, f.clk.now())
	}

	fs.set(true)
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("with the catalog unreadable: %d; want 500", resp.StatusCode)
	}
	fs.set(false)
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("with the catalog back: %d; want 200 (still signed in)", resp.StatusCode)
	}
}
