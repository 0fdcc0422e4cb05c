package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

const adminToken = "kura1-admin-the-admin-token"

// fakeBackend answers the console's calls from fixed records and counts
// the cancels it gets.
type fakeBackend struct {
	api.Service // nil: a call the test did not expect panics
	mu          sync.Mutex
	canceled    []int64
	jobs        []api.Job
	clients     []api.Client
	feed        chan api.Event // nil: a job's events are its end
	submitted   []api.JobRequest
	listings    []api.EntriesQuery
	tokens      []api.TokenRequest
	finds       []api.FindQuery
}

func (f *fakeBackend) Jobs(ctx context.Context, flt api.JobFilter) ([]api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.Job
	for _, j := range f.jobs {
		if (flt.Kind == "" || j.Kind == flt.Kind) && (flt.State == "" || j.State == flt.State) && (flt.Client == "" || j.Client == flt.Client) {
			out = append(out, j)
		}
	}
	if flt.Limit > 0 && len(out) > flt.Limit {
		out = out[:flt.Limit]
	}
	return out, nil
}

func (f *fakeBackend) Job(ctx context.Context, id int64) (*api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range f.jobs {
		if j.ID == id {
			return &j, nil
		}
	}
	return nil, &api.Error{Code: api.CodeNotFound, Message: "no such job"}
}

func (f *fakeBackend) Clients(ctx context.Context) ([]api.Client, error) { return f.clients, nil }

func (f *fakeBackend) Cancel(ctx context.Context, id int64, why string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.canceled = append(f.canceled, id)
	return nil
}

// Events sends job_ended at once, or, with feed set, what the test sends
// on feed until job_ended (a send returns when a follower has it).
func (f *fakeBackend) Events(ctx context.Context, id int64) (<-chan api.Event, error) {
	out := make(chan api.Event)
	go func() {
		defer close(out)
		if f.feed == nil {
			select {
			case out <- api.Event{Kind: api.EventJobEnded, JobID: id, Message: "succeeded"}:
			case <-ctx.Done():
			}
			return
		}
		for {
			select {
			case ev := <-f.feed:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Kind == api.EventJobEnded {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (f *fakeBackend) Drives(ctx context.Context, lib string) ([]api.Drive, error) {
	return []api.Drive{{Library: "default", Number: 1, Busy: true}, {Library: "default", Number: 2}}, nil
}

func (f *fakeBackend) Tapes(ctx context.Context, q api.TapeQuery) ([]api.Tape, error) {
	return []api.Tape{{Barcode: "KUR001", Library: "default", State: "appendable"}, {Barcode: "KUR002", Library: "default", State: "blank"}}, nil
}

func (f *fakeBackend) Policies(ctx context.Context) ([]api.Policy, error) { return nil, nil }

func (f *fakeBackend) cancels() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.canceled...)
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     testing.TB
	c     *Console
	b     *fakeBackend
	users *Users
	clk   *clock
	cat   *catalog.Catalog // the sessions
	dbDir string           // where cat's files are (newFixture)
	store SessionStore     // in front of cat when not nil (fault injection)
	stamp string           // the admin token's stamp
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	f := &fixture{t: t, clk: &clock{t: t0}, users: OpenUsers(filepath.Join(t.TempDir(), "users.json")),
		b: &fakeBackend{jobs: []api.Job{{ID: 5, Kind: "backup", State: "running", Client: "c1", Started: t0}}}}
	var err error
	f.dbDir = t.TempDir()
	if f.cat, err = catalog.Open(filepath.Join(f.dbDir, "catalog.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cat.Close() })
	f.restart()
	return f
}

// restart replaces the fixture's console with a new one over the same
// sessions: a restarted server, or a standby that took over.
func (f *fixture) restart() {
	f.t.Helper()
	var store SessionStore = f.cat
	if f.store != nil {
		store = f.store
	}
	var err error
	f.c, err = New(Options{Backend: f.b, Users: f.users, AdminToken: func(s string) bool { return s == adminToken },
		AdminTokenStamp: f.stamp, Sessions: store, Idle: 30 * time.Minute, Now: f.clk.now})
	if err != nil {
		f.t.Fatal(err)
	}
}

// do sends a request with the session cookie (when not "") and form.
func (f *fixture) do(method, path, cookie string, form url.Values, header ...string) *http.Response {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, "https://console.test"+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
	}
	w := httptest.NewRecorder()
	f.c.ServeHTTP(w, req)
	return w.Result()
}

func sessionOf(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	return nil
}

// signIn signs in and returns the session cookie's value and the page's
// CSRF token.
func (f *fixture) signIn(name, password string) (cookie, csrf string) {
	f.t.Helper()
	resp := f.do("POST", "/login", "", url.Values{"name": {name}, "password": {password}})
	ck := sessionOf(resp)
	if resp.StatusCode != http.StatusSeeOther || ck == nil {
		f.t.Fatalf("sign-in as %q: %d, cookie %v", name, resp.StatusCode, ck)
	}
	return ck.Value, f.csrfOf(ck.Value)
}

func (f *fixture) csrfOf(cookie string) string {
	f.t.Helper()
	resp := f.do("GET", "/jobs/5", cookie, nil)
	b, _ := io.ReadAll(resp.Body)
	_, rest, ok := strings.Cut(string(b), `name="csrf-token" content="`)
	if !ok {
		f.t.Fatalf("GET /jobs/5: %d, no CSRF token in the page", resp.StatusCode)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A wrong password, an unknown user and a wrong admin token are refused
// alike and start no session; the right ones start a session whose cookie
// is HttpOnly, Secure and SameSite=Strict.
func TestSignIn(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("alice", "correct horse battery", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, pw string }{{"alice", "wrong password!"}, {"bob", "correct horse battery"}, {"", "kura1-admin-wrong"}, {"", ""}} {
		resp := f.do("POST", "/login", "", url.Values{"name": {c.name}, "password": {c.pw}})
		if resp.StatusCode != http.StatusUnauthorized || sessionOf(resp) != nil {
			t.Errorf("sign-in %q/%q: %d, cookie %v; want 401 and no session", c.name, c.pw, resp.StatusCode, sessionOf(resp))
		}
		if b := body(t, resp); !strings.Contains(b, "Wrong name or password") {
			t.Errorf("sign-in %q: the page does not say why", c.name)
		}
	}
	if resp := f.do("GET", "/", "", nil); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("the dashboard without a session: %d %s; want a redirect to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, c := range []struct{ name, pw string }{{"alice", "correct horse battery"}, {"", adminToken}} {
		resp := f.do("POST", "/login", "", url.Values{"name": {c.name}, "password": {c.pw}, "next": {"/jobs"}})
		ck := sessionOf(resp)
		if resp.StatusCode != http.StatusSeeOther || ck == nil {
			t.Fatalf("sign-in %q: %d, cookie %v", c.name, resp.StatusCode, ck)
		}
		if !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
			t.Errorf("session cookie %+v; want HttpOnly, Secure, SameSite=Strict, Path=/", ck)
		}
		if loc := resp.Header.Get("Location"); loc != "/jobs" {
			t.Errorf("after sign-in: to %q; want /jobs", loc)
		}
		if resp := f.do("GET", "/", ck.Value, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("the dashboard with the session: %d", resp.StatusCode)
		}
	}
	// next never leaves the console.
	resp := f.do("POST", "/login", "", url.Values{"password": {adminToken}, "next": {"//evil.example/x"}})
	if loc := resp.Header.Get("Location"); loc != "/" {
		t.Errorf("next=//evil.example/x: to %q; want /", loc)
	}
}

// A change without the session's CSRF token, or with another one, is
// refused with 403 and changes nothing; with it, it is done.
func TestCSRF(t *testing.T) {
	f := newFixture(t)
	ck, csrf := f.signIn("", adminToken)
	_, other := f.signIn("", adminToken)
	for _, c := range []struct {
		what string
		form url.Values
		hdr  []string
	}{
		{"no token", url.Values{}, nil},
		{"another session's token", url.Values{"csrf": {other}}, nil},
		{"another session's token in the header", nil, []string{"X-CSRF-Token", other}},
	} {
		resp := f.do("POST", "/jobs/5/cancel", ck, c.form, c.hdr...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cancel with %s: %d; want 403", c.what, resp.StatusCode)
		}
	}
	if resp := f.do("POST", "/logout", ck, url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out without the token: %d; want 403", resp.StatusCode)
	}
	if got := f.b.cancels(); len(got) != 0 {
		t.Fatalf("cancels without the CSRF token reached the server: %v", got)
	}
	resp := f.do("POST", "/jobs/5/cancel", ck, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("cancel with the token: %d %s", resp.StatusCode, body(t, resp))
	}
	if resp := f.do("POST", "/jobs/5/cancel", ck, nil, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("cancel with the token in the header: %d", resp.StatusCode)
	}
	if got := f.b.cancels(); len(got) != 2 || got[0] != 5 {
		t.Errorf("cancels %v; want job 5 twice", got)
	}
}

// An operator watches but cannot cancel (403); an admin user can.
func TestOperatorCannotCancel(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("olga", "operator password", RoleOperator); err != nil {
		t.Fatal(err)
	}
	ck, csrf := f.signIn("olga", "operator password")
	for _, p := range []string{"/", "/jobs", "/jobs/5"} {
		if resp := f.do("GET", p, ck, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("operator GET %s: %d; want 200", p, resp.StatusCode)
		}
	}
	if b := body(t, f.do("GET", "/jobs/5", ck, nil)); strings.Contains(b, `id="cancel"`) {
		t.Errorf("the operator's job page offers a cancel button")
	}
	resp := f.do("POST", "/jobs/5/cancel", ck, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body(t, resp), "operator") {
		t.Errorf("operator cancel: %d; want 403 saying operators only watch", resp.StatusCode)
	}
	if got := f.b.cancels(); len(got) != 0 {
		t.Errorf("an operator's cancel reached the server: %v", got)
	}
	// Removed, the user signs out at the next request.
	if err := f.users.Remove("olga"); err != nil {
		t.Fatal(err)
	}
	if resp := f.do("GET", "/jobs/5", ck, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a removed user's session: %d; want a redirect to sign in", resp.StatusCode)
	}
	if _, err := f.cat.ConsoleSessionByHash(hashID(ck)); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("a removed user's session in the catalog: %v; want it deleted", err)
	}
}

// A session ends after Idle without a request; each request restarts the
// idle time; sign-out ends it at once.
func TestIdleExpiryAndSignOut(t *testing.T) {
	f := newFixture(t)
	ck, csrf := f.signIn("", adminToken)
	f.clk.add(29 * time.Minute)
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("after 29 idle minutes: %d; want 200", resp.StatusCode)
	}
	f.clk.add(29 * time.Minute) // 58 minutes since sign-in, 29 since the last request
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("29 minutes after the last request: %d; want 200", resp.StatusCode)
	}
	f.clk.add(31 * time.Minute)
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after 31 idle minutes: %d; want a redirect to sign in", resp.StatusCode)
	}
	if resp := f.do("POST", "/jobs/5/cancel", ck, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a change with the expired session: %d; want 401", resp.StatusCode)
	}
	if got := f.b.cancels(); len(got) != 0 {
		t.Errorf("an expired session's cancel reached the server: %v", got)
	}

	ck, csrf = f.signIn("", adminToken)
	resp := f.do("POST", "/logout", ck, url.Values{"csrf": {csrf}})
	if c := sessionOf(resp); resp.StatusCode != http.StatusSeeOther || c == nil || c.MaxAge >= 0 {
		t.Errorf("sign-out: %d, cookie %+v; want a redirect that deletes the cookie", resp.StatusCode, c)
	}
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the signed-out session: %d; want a redirect to sign in", resp.StatusCode)
	}
}

// Every page forbids inline script and framing.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	resp := f.do("GET", "/login", "", nil)
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if resp := f.do("GET", "/static/console.js", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /static/console.js: %d", resp.StatusCode)
	}
}

// The dashboard shows a client whose last successful backup is older than
// StaleAfter (or never was) in red, a recent one not.
func TestDashboardStaleClients(t *testing.T) {
	f := newFixture(t)
	now := f.clk.now()
	f.b.clients = []api.Client{{Name: "fresh"}, {Name: "old"}, {Name: "never"}}
	f.b.jobs = append(f.b.jobs,
		api.Job{ID: 1, Kind: "backup", State: "succeeded", Client: "fresh", Finished: now.Add(-2 * time.Hour)},
		api.Job{ID: 2, Kind: "backup", State: "warnings", Client: "old", Finished: now.Add(-27 * time.Hour)},
		api.Job{ID: 3, Kind: "backup", State: "failed", Client: "fresh", Finished: now.Add(-time.Hour)})
	ck, _ := f.signIn("", adminToken)
	b := body(t, f.do("GET", "/", ck, nil))
	for name, stale := range map[string]bool{"fresh": false, "old": true, "never": true} {
		row := `<tr class="stale" data-client="` + name + `"`
		if strings.Contains(b, row) != stale {
			t.Errorf("client %s: red %v; want %v", name, !stale, stale)
		}
	}
	if !strings.Contains(b, "2 h 0 min ago") || !strings.Contains(b, "27 h 0 min ago") {
		t.Errorf("the dashboard does not show the ages of the last backups:\n%s", b)
	}
}

// Passwords are stored as argon2id hashes, never in clear.
func TestUsersFile(t *testing.T) {
	u := OpenUsers(filepath.Join(t.TempDir(), "users.json"))
	if err := u.Add("al", "short", RoleAdmin); err == nil {
		t.Error("a 5-character password was accepted")
	}
	if err := u.Add("bad name", "long enough password", RoleAdmin); err == nil {
		t.Error("a name with a space was accepted")
	}
	if err := u.Add("al", "long enough password", RoleOperator); err != nil {
		t.Fatal(err)
	}
	if err := u.Add("al", "another password!", RoleAdmin); err == nil {
		t.Error("a second user named al was accepted")
	}
	us, err := u.load()
	if err != nil || len(us) != 1 || !strings.HasPrefix(us[0].Hash, "argon2id$v=19$") || strings.Contains(us[0].Hash, "long enough") {
		t.Fatalf("stored %+v, %v; want one argon2id hash", us, err)
	}
	if role, err := u.Check("al", "long enough password"); err != nil || role != RoleOperator {
		t.Errorf("the right password: %q, %v", role, err)
	}
	if _, err := u.Check("al", "long enough passwore"); err == nil {
		t.Error("a wrong password was accepted")
	}
}

// A job's events reach the browser as server-sent events, the end last.
func TestJobEventStream(t *testing.T) {
	f := newFixture(t)
	ck, _ := f.signIn("", adminToken)
	resp := f.do("GET", "/jobs/5/events", ck, nil)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET /jobs/5/events: %d %s", resp.StatusCode, ct)
	}
	if b := body(t, resp); !strings.HasPrefix(b, `data: {"kind":"job_ended"`) || !strings.Contains(b, `"message":"succeeded"`) {
		t.Errorf("the stream %q; want the job_ended event", b)
	}
	if resp := f.do("GET", "/jobs/5/events", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the stream without a session: %d; want 401", resp.StatusCode)
	}
}

// A change whose Origin is another site is refused, sign-in included; the
// console's own origin passes.
func TestCrossOriginRefused(t *testing.T) {
	f := newFixture(t)
	for _, origin := range []string{"https://evil.example", "null", "http://console.test"} {
		resp := f.do("POST", "/login", "", url.Values{"password": {adminToken}}, "Origin", origin)
		if resp.StatusCode != http.StatusForbidden || sessionOf(resp) != nil {
			t.Errorf("sign-in from %s: %d; want 403 and no session", origin, resp.StatusCode)
		}
	}
	ck, csrf := f.signIn("", adminToken)
	if resp := f.do("POST", "/jobs/5/cancel", ck, url.Values{"csrf": {csrf}}, "Origin", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cancel from another site, CSRF token and all: %d; want 403", resp.StatusCode)
	}
	if got := f.b.cancels(); len(got) != 0 {
		t.Errorf("a cross-origin cancel reached the server: %v", got)
	}
	resp := f.do("POST", "/login", "", url.Values{"password": {adminToken}}, "Origin", "https://console.test")
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in from the console's own origin: %d; want 303", resp.StatusCode)
	}
}

// After MaxFailedSignIns wrong answers from one address, that address
// waits out FailWindow, even with the right password; another address
// does not wait, and a success clears the count.
func TestSignInThrottled(t *testing.T) {
	f := newFixture(t)
	wrong := url.Values{"password": {"kura1-admin-guess"}}
	for range MaxFailedSignIns {
		if resp := f.do("POST", "/login", "", wrong); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong token: %d; want 401", resp.StatusCode)
		}
		f.clk.add(time.Minute)
	}
	resp := f.do("POST", "/login", "", url.Values{"password": {adminToken}})
	if resp.StatusCode != http.StatusTooManyRequests || sessionOf(resp) != nil || !strings.Contains(body(t, resp), "try again in 11 minutes") {
		t.Errorf("the right token after %d failures: %d; want 429 and to wait 11 minutes", MaxFailedSignIns, resp.StatusCode)
	}
	req := httptest.NewRequest("POST", "https://console.test/login", strings.NewReader("password="+url.QueryEscape(adminToken)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = "192.0.2.9:4444"
	w := httptest.NewRecorder()
	f.c.ServeHTTP(w, req)
	if w.Code != http.StatusSeeOther {
		t.Errorf("the right token from another address: %d; want 303", w.Code)
	}
	f.clk.add(11 * time.Minute) // the first failure is 16 minutes old
	if resp := f.do("POST", "/login", "", url.Values{"password": {adminToken}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token once the oldest failure left the window: %d; want 303", resp.StatusCode)
	}
	for range MaxFailedSignIns - 1 { // the success cleared the count
		f.do("POST", "/login", "", wrong)
	}
	if resp := f.do("POST", "/login", "", url.Values{"password": {adminToken}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after a success and %d failures: %d; want 303", MaxFailedSignIns-1, resp.StatusCode)
	}
}

// The dashboard's day counts the jobs that ended in the last 24 hours, by
// result, and says "500+" rather than read without bound.
func TestDashboardDay(t *testing.T) {
	f := newFixture(t)
	now := f.clk.now()
	add := func(n int, state string, ago time.Duration) {
		for range n {
			f.b.jobs = append(f.b.jobs, api.Job{ID: int64(len(f.b.jobs) + 10), Kind: "backup", State: state, Finished: now.Add(-ago)})
		}
	}
	add(2, "succeeded", 2*time.Hour)
	add(3, "succeeded", 30*time.Hour) // yesterday's
	add(1, "failed", time.Hour)
	add(dayScan+1, "warnings", 3*time.Hour)
	ck, _ := f.signIn("", adminToken)
	b := body(t, f.do("GET", "/", ck, nil))
	for _, want := range []string{
		`<tr class="result-succeeded"><td>succeeded</td><td class="num"><a href="/jobs?state=succeeded">2</a></td></tr>`,
		`<tr class="result-failed"><td>failed</td><td class="num"><a href="/jobs?state=failed">1</a></td></tr>`,
		`<tr class="result-warnings"><td>warnings</td><td class="num"><a href="/jobs?state=warnings">500+</a></td></tr>`,
		`<tr><td>canceled</td><td class="num">0</td></tr>`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the dashboard has no %s", want)
		}
	}
}

// Concurrent requests of one session (a page and its event streams) share
// it safely (run with -race).
func TestConcurrentRequestsOfASession(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("alice", "correct horse battery", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	ck, _ := f.signIn("alice", "correct horse battery")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range []string{"/jobs/5", "/jobs/5/events", "/jobs"} {
				if resp := f.do("GET", p, ck, nil); resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s: %d", p, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
}

// A user file that cannot be read answers 500 and signs nobody out; once
// it is readable again the session goes on.
func TestUnreadableUserFile(t *testing.T) {
	f := newFixture(t)
	if err := f.users.Add("alice", "correct horse battery", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	ck, _ := f.signIn("alice", "correct horse battery")
	good, err := os.ReadFile(f.users.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.users.path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("with a damaged user file: %d; want 500", resp.StatusCode)
	}
	if err := os.WriteFile(f.users.path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if resp := f.do("GET", "/jobs", ck, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("with the user file mended: %d; want 200 (still signed in)", resp.StatusCode)
	}
}

// The job history filters by kind, state and client; a bad filter is a
// 400 that says why, and a job that does not exist a 404.
func TestJobHistoryFilters(t *testing.T) {
	f := newFixture(t)
	f.b.jobs = append(f.b.jobs,
		api.Job{ID: 6, Kind: "backup", State: "failed", Client: "c2"},
		api.Job{ID: 7, Kind: "restore", State: "succeeded", Client: "c1"})
	ck, _ := f.signIn("", adminToken)
	for q, want := range map[string][]int64{"": {5, 6, 7}, "?state=failed": {6}, "?kind=restore": {7}, "?client=c1": {5, 7}, "?kind=backup&client=c1": {5}} {
		b := body(t, f.do("GET", "/jobs"+q, ck, nil))
		for _, id := range []int64{5, 6, 7} {
			link := fmt.Sprintf(`<a href="/jobs/%d">`, id)
			if strings.Contains(b, link) != slices.Contains(want, id) {
				t.Errorf("/jobs%s lists job %d: %v; want %v", q, id, !slices.Contains(want, id), slices.Contains(want, id))
			}
		}
	}
	resp := f.do("GET", "/jobs?state=lost", ck, nil)
	if b := body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "not a job state") {
		t.Errorf("/jobs?state=lost: %d\n%s", resp.StatusCode, b)
	}
	if resp := f.do("GET", "/jobs/999", ck, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/jobs/999: %d; want 404", resp.StatusCode)
	}
}
