package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
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
	var role string
	ok := false
	if name == "" {
		ok, role = c.opts.AdminToken(strings.TrimSpace(secret)), RoleAdmin
	} else if rl, err := c.opts.Users.Check(name, secret); err == nil {
		ok, role = true, rl
	}
	if !ok {
		c.opts.Log.Warn("console: sign-in refused", "user", name, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusUnauthorized)
		return c.render(w, "login", nil, map[string]any{"Next": next, "Name": name,
			"Error": "Wrong name or password (or admin token)."})
	}
	s := c.sessions.start(name, role, c.opts.Now())
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
