package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CookieName is the session cookie's name.
const CookieName = "kura_session"

// session is one signed-in browser.
type session struct {
	id   string
	user string // "" for the admin token
	role string
	csrf string

	mu   sync.Mutex
	seen time.Time
}

// withRole is this request's view of the session with the user's role
// now (the live session is shared by concurrent requests: never written).
func (s *session) withRole(role string) *session {
	return &session{id: s.id, user: s.user, role: role, csrf: s.csrf}
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

// sessions are the live sessions, by ID.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func newSessions() *sessions { return &sessions{m: map[string]*session{}} }

func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (ss *sessions) start(user, role string, now time.Time) *session {
	s := &session{id: randomID(), user: user, role: role, csrf: randomID(), seen: now}
	ss.mu.Lock()
	ss.m[s.id] = s
	ss.mu.Unlock()
	return s
}

// get is the request's live session, touched; nil when there is none or
// it has been idle for longer than idle (it ends then).
func (ss *sessions) get(r *http.Request, now time.Time, idle time.Duration) *session {
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	// Sweep the expired sessions as we go: a map that only grows would
	// hold every browser that ever signed in.
	for id, s := range ss.m {
		s.mu.Lock()
		gone := now.Sub(s.seen) > idle
		s.mu.Unlock()
		if gone {
			delete(ss.m, id)
		}
	}
	s := ss.m[ck.Value]
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.seen = now
	s.mu.Unlock()
	return s
}

func (ss *sessions) end(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
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
	var role string
	ok := false
	if name == "" {
		ok, role = c.opts.AdminToken(strings.TrimSpace(secret)), RoleAdmin
	} else if rl, err := c.opts.Users.Check(name, secret); err == nil {
		ok, role = true, rl
	}
	if !ok {
		c.fails.add(addr, now)
		c.opts.Log.Warn("console: sign-in refused", "user", name, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusUnauthorized)
		return c.render(w, "login", nil, map[string]any{"Next": next, "Name": name,
			"Error": "Wrong name or password (or admin token)."})
	}
	c.fails.clear(addr)
	s := c.sessions.start(name, role, now)
	c.opts.Log.Info("console: signed in", "user", s.who(), "role", role, "remote", r.RemoteAddr)
	http.SetCookie(w, sessionCookie(s.id, 0))
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	c.sessions.end(s.id)
	http.SetCookie(w, sessionCookie("", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}
