package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
)

// CookieName is the session cookie's name.
const CookieName = "kura_session"

// DefaultLifetime is how long a session lasts at most from its sign-in,
// however busy: a working day and a half, so that an admin signs in once a
// shift and a stolen cookie does not last.
const DefaultLifetime = 12 * time.Hour

// touchEvery is the resolution of a session's last use: a request writes
// it to the store when the recorded one is older than this, so page views
// do not each cost a catalog commit. A session therefore ends between
// Idle minus touchEvery and Idle after its last request.
const touchEvery = time.Minute

// SessionStore keeps the console's sessions where every server of the
// catalog sees them (*catalog.Catalog), so that a sign-in outlives a
// restart and moves to a standby that takes over. It is handed hashes of
// session IDs only.
type SessionStore interface {
	AddConsoleSession(s catalog.ConsoleSession) error
	// ConsoleSessionByHash is catalog.ErrNotFound for a session not there.
	ConsoleSessionByHash(hash string) (*catalog.ConsoleSession, error)
	TouchConsoleSession(hash string, at time.Time) error
	DeleteConsoleSession(hash string) error
	PruneConsoleSessions(now, idleSince time.Time) (int64, error)
}

var _ SessionStore = (*catalog.Catalog)(nil)

// session is one signed-in browser, as this request sees it.
type session struct {
	hash  string // of the ID in the cookie: the store's key
	user  string // "" for the admin token
	role  string
	stamp string // fingerprint of the credential signed in with
	csrf  string
}

// withRole is the session with the user's role now.
func (s *session) withRole(role string) *session {
	c := *s
	c.role = role
	return &c
}

func (s *session) who() string {
	if s.user == "" {
		return "admin (token)"
	}
	return s.user
}

// csrfOK reports whether a change request carries the session's CSRF
// token, in the form field csrf or the header X-CSRF-Token.
func (s *session) csrfOK(r *http.Request) bool {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
		got = r.PostFormValue("csrf")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// sessions are the sessions in the store: a session's ID is 32 random
// bytes in the browser's cookie; the store keys it by the ID's SHA-256,
// and its CSRF token is another hash of the ID (domain-separated), so the
// store holds nothing that signs in or passes the CSRF check.
type sessions struct {
	store          SessionStore
	idle, lifetime time.Duration
	log            *slog.Logger

	mu     sync.Mutex
	pruned time.Time // the last prune of this process
}

func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashID is the store's key of a session ID.
func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// csrfOf is the CSRF token of a session ID.
func csrfOf(id string) string {
	sum := sha256.Sum256([]byte("kura console csrf\x00" + id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// start records a new session and returns it with the ID for the cookie.
func (ss *sessions) start(user, role, stamp string, now time.Time) (*session, string, error) {
	id := randomID()
	s := &session{hash: hashID(id), user: user, role: role, stamp: stamp, csrf: csrfOf(id)}
	err := ss.store.AddConsoleSession(catalog.ConsoleSession{Hash: s.hash, User: user, Role: role, Stamp: stamp,
		Created: now, LastUsed: now, Expires: now.Add(ss.lifetime)})
	if err != nil {
		return nil, "", err
	}
	return s, id, nil
}

// get is the request's session, its use recorded (to touchEvery); nil
// when there is none or it is over (past its lifetime, or idle for longer
// than idle: it is deleted then). An error is the store's: the caller
// answers it and signs nobody out.
func (ss *sessions) get(r *http.Request, now time.Time) (*session, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	ss.prune(now, false)
	hash := hashID(ck.Value)
	rec, err := ss.store.ConsoleSessionByHash(hash)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !now.Before(rec.Expires) || now.Sub(rec.LastUsed) > ss.idle {
		ss.end(hash)
		return nil, nil
	}
	if now.Sub(rec.LastUsed) >= touchEvery {
		if err := ss.store.TouchConsoleSession(hash, now); err != nil {
			// The request goes on; the session may end up to a minute early.
			ss.log.Warn("console: recording a session's use", "err", err)
		}
	}
	return &session{hash: hash, user: rec.User, role: rec.Role, stamp: rec.Stamp, csrf: csrfOf(ck.Value)}, nil
}

// prune deletes the sessions that are over (of every server of the
// catalog), at most once every touchEvery unless forced (at start).
func (ss *sessions) prune(now time.Time, force bool) {
	ss.mu.Lock()
	due := force || now.Sub(ss.pruned) >= touchEvery
	if due {
		ss.pruned = now
	}
	ss.mu.Unlock()
	if !due {
		return
	}
	if n, err := ss.store.PruneConsoleSessions(now, now.Add(-ss.idle)); err != nil {
		ss.log.Warn("console: pruning sessions", "err", err)
	} else if n > 0 {
		ss.log.Info("console: sessions over", "ended", n)
	}
}

// end deletes a session (sign-out, or over).
func (ss *sessions) end(hash string) {
	if err := ss.store.DeleteConsoleSession(hash); err != nil {
		ss.log.Warn("console: ending a session", "err", err)
	}
}

func sessionCookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode}
}

func urlEscape(s string) string { return url.QueryEscape(s) }

// safeNext is where to go after signing in: a path of this console only.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

// Sign-in throttling: after MaxFailedSignIns wrong answers from one
// address within FailWindow, that address may not try again until the
// oldest of them is FailWindow old. With the slow password hash this
// keeps guessing to a few tries an hour.
const (
	MaxFailedSignIns = 5
	FailWindow       = 15 * time.Minute
)

// failures are the recent failed sign-ins by remote address.
type failures struct {
	mu sync.Mutex
	m  map[string][]time.Time
}

func newFailures() *failures { return &failures{m: map[string][]time.Time{}} }

// recent is addr's failures within the window at now, and how long until
// the oldest leaves it.
func (f *failures) recent(addr string, now time.Time) (int, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a, ts := range f.m { // sweep, so the map does not grow forever
		i := 0
		for i < len(ts) && now.Sub(ts[i]) >= FailWindow {
			i++
		}
		if i == len(ts) {
			delete(f.m, a)
		} else {
			f.m[a] = ts[i:]
		}
	}
	ts := f.m[addr]
	if len(ts) == 0 {
		return 0, 0
	}
	return len(ts), FailWindow - now.Sub(ts[0])
}

func (f *failures) add(addr string, now time.Time) {
	f.mu.Lock()
	f.m[addr] = append(f.m[addr], now)
	f.mu.Unlock()
}

func (f *failures) clear(addr string) {
	f.mu.Lock()
	delete(f.m, addr)
	f.mu.Unlock()
}

// remoteHost is the address part of a request's remote address.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request, _ *session) error {
	return c.render(w, "login", nil, map[string]any{"Next": safeNext(r.URL.Query().Get("next"))})
}

// login signs in with a user's name and password, or with the admin
// token (no name). A wrong answer says no more than that.
func (c *Console) login(w http.ResponseWriter, r *http.Request, _ *session) error {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	name := strings.TrimSpace(r.PostFormValue("name"))
	secret := r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	addr, now := remoteHost(r), c.opts.Now()
	if n, wait := c.fails.recent(addr, now); n >= MaxFailedSignIns {
		c.opts.Log.Warn("console: sign-in refused: too many failures", "user", name, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusTooManyRequests)
		return c.render(w, "login", nil, map[string]any{"Next": next, "Name": name,
			"Error": fmt.Sprintf("Too many failed sign-ins from your address; try again in %d minutes.", int(wait.Minutes())+1)})
	}
	var role, stamp string
	ok := false
	if name == "" {
		ok, role, stamp = c.opts.AdminToken(strings.TrimSpace(secret)), RoleAdmin, c.opts.AdminTokenStamp
	} else if u, err := c.opts.Users.check(name, secret); err == nil {
		ok, role, stamp = true, u.Role, stampOf(u.Hash)
	}
	if !ok {
		c.fails.add(addr, now)
		c.opts.Log.Warn("console: sign-in refused", "user", name, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusUnauthorized)
		return c.render(w, "login", nil, map[string]any{"Next": next, "Name": name,
			"Error": "Wrong name or password (or admin token)."})
	}
	c.fails.clear(addr)
	s, id, err := c.sessions.start(name, role, stamp, now)
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: signed in", "user", s.who(), "role", role, "remote", r.RemoteAddr)
	http.SetCookie(w, sessionCookie(id, 0))
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := c.sessions.store.DeleteConsoleSession(s.hash); err != nil {
		return err // not signed out: say so rather than drop the cookie only
	}
	http.SetCookie(w, sessionCookie("", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}
