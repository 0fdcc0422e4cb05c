// Package console is Kura's web console: server-rendered HTML pages over
// api.Service and the job event stream, served by `kura server` on its
// own HTTPS port with the server's certificate.
//
// Design:
//
//   - Pages are html/template, rendered on the server from typed calls on
//     the Backend (api.Service plus the server's clients, cancel and event
//     stream); the console never reads the catalog but for its sessions.
//     A little plain JavaScript (static/console.js, embedded) follows
//     running jobs over server-sent events and draws the job monitor's
//     chart as inline SVG. No build step, no CDN: everything is in the
//     binary.
//   - Sign-in with the admin token or a named user (argon2id hash in the
//     home's console-users.json, read on every sign-in). A session is a
//     random ID in a cookie (HttpOnly, Secure, SameSite=Strict, path /),
//     kept in the catalog (Options.Sessions) by the ID's SHA-256 only, so
//     it outlives a restart and moves to a standby server that takes over.
//     It ends on sign-out (its row is deleted), after Options.Idle without
//     a request (last use is written at most once a minute), at
//     Options.Lifetime after sign-in, and when the credential it signed in
//     with is gone: its user removed or given a new password, the admin
//     token replaced. Sessions that are over are pruned at start and at
//     most once a minute after.
//   - Every request that is not GET or HEAD carries the session's CSRF
//     token (form field csrf, or header X-CSRF-Token) or gets 403; so does
//     every change an operator asks for, and a request whose Origin is
//     another site. Five failed sign-ins from one address within 15
//     minutes make it wait (429).
//   - Content-Security-Policy allows only the console's own scripts and
//     styles: no inline script runs, so a job's log or a file name shown
//     on a page cannot become code.
//
// Routing: each page is a route in routes() and an entry of nav, and a
// template of its own (library.go, clients.go, policies.go and
// planner.go are the admin pages: a library's picture and its tapes'
// actions, enrollment tokens and revocation, policies with their
// calendar and retention preview, the sizing form; backup.go starts
// backups by hand: a policy's Run now, a client's Back up now).
package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// Backend is what the console calls: the admin service and the parts of
// the server that are not resources of it.
type Backend interface {
	api.Service
	// Clients lists the enrolled clients, with whether each is connected.
	Clients(ctx context.Context) ([]api.Client, error)
	// CreateToken makes a one-time enrollment token (its text is shown
	// once; the server keeps only its hash).
	CreateToken(ctx context.Context, req api.TokenRequest) (*api.TokenResponse, error)
	// RevokeClient revokes a client's certificate and cuts it off.
	RevokeClient(ctx context.Context, name string) (*api.Client, error)
	// UpdateClient changes a client's settings (its bandwidth limit).
	UpdateClient(ctx context.Context, name string, req api.ClientUpdate) (*api.Client, error)
	// ServerURL is the address agents enroll with ("" when the server
	// does not serve its API yet).
	ServerURL() string
	// Cancel cancels a queued or running job.
	Cancel(ctx context.Context, id int64, why string) error
	// Events follows a job: its events until job_ended (sent last, then the
	// channel closes), or until ctx ends. A job that has ended sends only
	// job_ended.
	Events(ctx context.Context, id int64) (<-chan api.Event, error)
	// Submit queues a job (a restore or a verify from the savesets page,
	// a backup from a client's form) and returns its IDs: the job runs in
	// the server's queue, not in a request.
	Submit(ctx context.Context, req api.JobRequest) ([]int64, error)
}

// Options configure a console.
type Options struct {
	Backend Backend
	// Users is the user file (console-users.json in the server home).
	Users *Users
	// AdminToken reports whether s is the server's admin token.
	AdminToken func(s string) bool
	// AdminTokenStamp fingerprints the admin token in use (not the token
	// itself): a session signed in with the token ends when the server
	// runs with another one.
	AdminTokenStamp string
	// Sessions keeps the sessions (the catalog). Required.
	Sessions SessionStore
	// Idle ends a session after this long without a request (30 min; to
	// a minute, see touchEvery).
	Idle time.Duration
	// Lifetime ends a session this long after its sign-in, however busy
	// (DefaultLifetime).
	Lifetime time.Duration
	// StaleAfter marks a client red on the dashboard when its last
	// successful backup is older (26 h: a daily backup missed once, with
	// two hours' slack).
	StaleAfter time.Duration
	Now        func() time.Time
	Log        *slog.Logger
	// BenchDir holds benchmark report folders (kura bench run --out
	// BenchDir/NAME); the Benchmarks page shows the newest. "": none.
	BenchDir string
}

// Console is the web console's HTTP handler and its sessions.
type Console struct {
	opts     Options
	sessions *sessions
	fails    *failures
	pages    map[string]*template.Template
	static   http.Handler
	mux      *http.ServeMux
}

//go:embed templates static
var assets embed.FS

// New makes a console.
func New(opts Options) (*Console, error) {
	if opts.Backend == nil || opts.Users == nil || opts.AdminToken == nil || opts.Sessions == nil {
		return nil, errors.New("console: Backend, Users, AdminToken and Sessions are required")
	}
	if opts.Idle == 0 {
		opts.Idle = 30 * time.Minute
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = 26 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	c := &Console{opts: opts, fails: newFailures(), pages: map[string]*template.Template{},
		sessions: &sessions{store: opts.Sessions, idle: opts.Idle, lifetime: opts.Lifetime, log: opts.Log}}
	c.sessions.prune(opts.Now(), true)
	base, err := template.New("base").Funcs(funcs).ParseFS(assets, "templates/base.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "templates/base.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(assets, n)
		if err != nil {
			return nil, err
		}
		c.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	sub, _ := fs.Sub(assets, "static")
	c.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	c.mux = http.NewServeMux()
	for _, r := range c.routes() {
		c.mux.Handle(r.pattern, c.wrap(r))
	}
	return c, nil
}

// access says who may use a route.
type access int

const (
	open   access = iota // anyone (sign-in page, assets)
	watch                // any signed-in user
	change               // admins only; an operator gets 403
)

type route struct {
	pattern string
	access  access
	h       func(w http.ResponseWriter, r *http.Request, s *session) error
}

// routes is every page and action of the console.
func (c *Console) routes() []route {
	return []route{
		{"GET /static/", open, func(w http.ResponseWriter, r *http.Request, _ *session) error {
			c.static.ServeHTTP(w, r)
			return nil
		}},
		{"GET /login", open, c.loginPage},
		{"POST /login", open, c.login},
		{"POST /logout", watch, c.logout},
		{"GET /{$}", watch, c.dashboard},
		{"GET /jobs", watch, c.jobs},
		{"GET /jobs/{id}", watch, c.job},
		{"GET /jobs/{id}/events", watch, c.jobEvents},
		{"POST /jobs/{id}/cancel", change, c.cancel},
		{"GET /savesets", watch, c.savesets},
		{"GET /savesets/search", watch, c.search},
		{"GET /savesets/{id}", watch, c.browse},
		{"GET /savesets/{id}/recipe", watch, c.recipe},
		{"POST /savesets/{id}/restore", change, c.restore},
		{"GET /libraries", watch, c.libraries},
		{"GET /libraries/{name}", watch, c.library},
		{"POST /libraries/{name}/tapes", change, c.addTapes},
		{"POST /libraries/{name}/drives/{drive}", change, c.setDrive},
		{"GET /tapes/{barcode}", watch, c.tape},
		{"POST /tapes/{barcode}/erase", change, c.eraseTape},
		{"POST /tapes/{barcode}/{action}", change, c.tapeAction},
		{"GET /clients", watch, c.clients},
		{"POST /clients/tokens", change, c.createToken},
		{"POST /clients/{name}/revoke", change, c.revokeClient},
		{"POST /clients/{name}/bandwidth", change, c.setBandwidth},
		{"GET /clients/{name}/backup", change, c.newBackup},
		{"POST /clients/{name}/backup", change, c.startBackup},
		{"GET /policies", watch, c.policies},
		{"GET /new/policy", change, c.newPolicy}, // not /policies/new: that is the page of a policy named new
		{"POST /policies", change, c.createPolicy},
		{"GET /policies/{name}", watch, c.policy},
		{"GET /policies/{name}/edit", change, c.editPolicy},
		{"POST /policies/{name}", change, c.updatePolicy},
		{"POST /policies/{name}/run", change, c.runPolicy},
		{"GET /planner", watch, c.planner},
		{"POST /savesets/{id}/verify", change, c.verify},
		{"GET /benchmarks", watch, c.benchmarks},
		{"GET /benchmarks/{name}", watch, c.benchChartSVG},
	}
}

// navItem is one entry of the page header's navigation: its link and the
// pages (templates) it is current on.
type navItem struct {
	Path, Title string
	Pages       []string
}

// nav is the console's sections, in header order.
var nav = []navItem{{"/", "Dashboard", []string{"dashboard"}}, {"/jobs", "Jobs", []string{"jobs", "job"}},
	{"/savesets", "Savesets", []string{"savesets", "saveset", "search", "recipe"}}, {"/libraries", "Library", []string{"libraries", "library", "tape"}},
	{"/clients", "Clients", []string{"clients", "backup"}}, {"/policies", "Policies", []string{"policies", "policy", "policyedit"}},
	{"/planner", "Planner", []string{"planner"}}, {"/benchmarks", "Benchmarks", []string{"benchmarks"}}}

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: with it a form's Origin is "null"
	h.Set("X-Frame-Options", "DENY")
	h.Set("Strict-Transport-Security", "max-age=31536000")
	c.mux.ServeHTTP(w, r)
}

// statusError is an error answered with its status.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) error {
	return &statusError{status: status, msg: fmt.Sprintf(format, args...)}
}

// wrap checks the session, the CSRF token and the role before a handler.
func (c *Console) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			c.opts.Log.Warn("console: refused a cross-origin request", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
			c.fail(w, r, nil, refuse(http.StatusForbidden, "a request from another site (%s) is refused", r.Header.Get("Origin")))
			return
		}
		var s *session
		if rt.access != open {
			var err error
			if s, err = c.sessions.get(r, c.opts.Now()); err != nil {
				c.fail(w, r, nil, err) // the store failed: no sign-out for that
				return
			}
			if s != nil {
				if s, err = c.current(s); err != nil {
					c.fail(w, r, nil, err)
					return
				}
			}
			if s == nil {
				if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") {
					http.Redirect(w, r, "/login?next="+urlEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				c.fail(w, r, nil, refuse(http.StatusUnauthorized, "sign in first"))
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && s != nil && !s.csrfOK(r) {
			c.opts.Log.Warn("console: refused a change without its CSRF token", "path", r.URL.Path, "user", s.who(), "remote", r.RemoteAddr)
			c.fail(w, r, s, refuse(http.StatusForbidden, "this form is out of date or was not sent by the console; reload the page and try again"))
			return
		}
		if rt.access == change && s.role != RoleAdmin {
			c.opts.Log.Warn("console: refused a change by an operator", "path", r.URL.Path, "user", s.who())
			c.fail(w, r, s, refuse(http.StatusForbidden, "%s is an operator: operators watch, only admins change things", s.who()))
			return
		}
		if err := rt.h(w, r, s); err != nil {
			c.fail(w, r, s, err)
		}
	})
}

// current is s with its user's role now, or nil (and s deleted) when the
// credential it signed in with is gone: the user removed, or removed and
// added again (another password hash), or the admin token replaced. An
// error is the user file's: no sign-out for that.
func (c *Console) current(s *session) (*session, error) {
	stamp, role := c.opts.AdminTokenStamp, RoleAdmin
	if s.user != "" {
		var err error
		role, stamp, err = c.opts.Users.Credential(s.user)
		switch {
		case errors.Is(err, ErrNoSuchUser):
			stamp = "" // never a user's stamp
		case err != nil:
			return nil, err
		}
	}
	if (s.user != "" && stamp == "") || subtle.ConstantTimeCompare([]byte(stamp), []byte(s.stamp)) != 1 {
		c.opts.Log.Info("console: session ended: its credential is gone", "user", s.who())
		c.sessions.end(s.hash)
		return nil, nil
	}
	return s.withRole(role), nil
}

// sameOrigin reports whether a request's Origin, when the browser sent
// one, is this console: a second line of defence beside the CSRF token and
// SameSite, and the only one for the sign-in form (no session yet).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser, or an old one: the CSRF token decides
	}
	u, err := url.Parse(o)
	return err == nil && u.Scheme == "https" && u.Host == r.Host
}

// fail answers an error as a page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := http.StatusInternalServerError
	var se *statusError
	var ae *api.Error
	switch {
	case errors.As(err, &se):
		status = se.status
	case errors.As(err, &ae):
		status = api.HTTPStatus(ae.Code)
	default:
		c.opts.Log.Error("console: request failed", "path", r.URL.Path, "err", err)
	}
	w.WriteHeader(status)
	_ = c.render(w, "error", s, map[string]any{"Status": status, "StatusText": http.StatusText(status), "Message": err.Error()})
}

// render executes a page with the layout's data around data.
func (c *Console) render(w http.ResponseWriter, page string, s *session, data any) error {
	t := c.pages[page]
	if t == nil {
		return fmt.Errorf("console: no page %q", page)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	v := layout{Page: page, Nav: nav, Data: data, Now: c.opts.Now()}
	if s != nil {
		v.User, v.Role, v.CSRF = s.who(), s.role, s.csrf
	}
	return t.ExecuteTemplate(w, "base", v)
}

// layout is what every page's template gets.
type layout struct {
	Page             string
	Nav              []navItem
	User, Role, CSRF string
	Now              time.Time
	Data             any
}

func pathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, refuse(http.StatusNotFound, "no job %q", r.PathValue("id"))
	}
	return id, nil
}
