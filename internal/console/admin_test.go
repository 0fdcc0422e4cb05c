package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
)

// localBackend is the console's backend over a real service.Local on a
// temporary home (a real virtual tape library on disk, real policies and
// retention), with the server's parts (clients, tokens, the job queue)
// kept in memory.
type localBackend struct {
	*service.Local
	env *engine.Env

	mu        sync.Mutex
	jobs      []api.Job // the job history, set by the test
	tokens    []api.TokenRequest
	submitted []api.JobRequest
}

var _ Backend = (*localBackend)(nil)

// Clients are the catalog's clients (enrolled by the test).
func (b *localBackend) Clients(ctx context.Context) ([]api.Client, error) {
	cs, err := b.env.Catalog.Clients()
	if err != nil {
		return nil, err
	}
	out := []api.Client{}
	for _, c := range cs {
		out = append(out, api.Client{Name: c.Name, Enrolled: c.Enrolled, Revoked: c.Revoked})
	}
	return out, nil
}

func (b *localBackend) CreateToken(ctx context.Context, req api.TokenRequest) (*api.TokenResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = append(b.tokens, req)
	return &api.TokenResponse{Token: fmt.Sprintf("kura1-enroll-test-%d", len(b.tokens)), Expires: time.Now().Add(time.Hour)}, nil
}

func (b *localBackend) RevokeClient(ctx context.Context, name string) (*api.Client, error) {
	return nil, &api.Error{Code: api.CodeNotFound, Message: "no client " + name}
}

func (b *localBackend) UpdateClient(ctx context.Context, name string, req api.ClientUpdate) (*api.Client, error) {
	return nil, &api.Error{Code: api.CodeNotFound, Message: "no client " + name}
}

// Jobs answers from the test's job history, filtered as the catalog does.
func (b *localBackend) Jobs(ctx context.Context, flt api.JobFilter) ([]api.Job, error) {
	return (&fakeBackend{jobs: b.jobs}).Jobs(ctx, flt)
}

func (b *localBackend) ServerURL() string { return "https://backup.example:8420" }

func (b *localBackend) Cancel(ctx context.Context, id int64, why string) error { return nil }

func (b *localBackend) Events(ctx context.Context, id int64) (<-chan api.Event, error) {
	out := make(chan api.Event)
	close(out)
	return out, nil
}

func (b *localBackend) Submit(ctx context.Context, req api.JobRequest) ([]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.submitted = append(b.submitted, req)
	return []int64{int64(200 + len(b.submitted))}, nil
}

func (b *localBackend) requests() []api.JobRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]api.JobRequest(nil), b.submitted...)
}

// newLocalFixture is a console over a localBackend whose home has a
// library "vtl" of 4 slots, 2 drives and 1 mail slot with tapes VT001 to
// VT004 in slots 1 to 4, at the fixture's clock.
func newLocalFixture(t testing.TB) (*fixture, *localBackend) {
	t.Helper()
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	f := &fixture{t: t, clk: &clock{t: time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)},
		users: OpenUsers(filepath.Join(t.TempDir(), "users.json")), b: &fakeBackend{}}
	lb := &localBackend{Local: service.New(env).WithClock(f.clk.now), env: env}
	if _, err := lb.CreateLibrary(t.Context(), api.LibraryCreate{Name: "vtl", Slots: 4, Drives: 2, TapeSizeBytes: 16 << 20, BarcodePrefix: "VT"}); err != nil {
		t.Fatal(err)
	}
	f.cat = env.Catalog
	f.c, err = New(Options{Backend: lb, Users: f.users, AdminToken: func(s string) bool { return s == adminToken },
		Sessions: env.Catalog, Idle: 30 * time.Minute, Now: f.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return f, lb
}

// page GETs a page and fails unless it is 200.
func (f *fixture) page(cookie, path string) string {
	f.t.Helper()
	resp := f.do("GET", path, cookie, nil)
	b := readBody(resp)
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
	}
	return b
}

func readBody(resp *http.Response) string {
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// changeCase is one change a page offers: its path and a good form.
type changeCase struct {
	path string
	form url.Values
}

// checkRefusals: each change without the CSRF token is 403, and with it
// by an operator 403 saying operators watch; neither reaches the backend
// (unchanged() reports that).
func checkRefusals(t *testing.T, f *fixture, cases []changeCase, unchanged func() bool) {
	t.Helper()
	admin, _ := f.signIn("", adminToken)
	if err := f.users.Add("olga", "operator password", RoleOperator); err != nil {
		t.Fatal(err)
	}
	op, opCSRF := f.signIn("olga", "operator password")
	for _, c := range cases {
		if resp := f.do("POST", c.path, admin, c.form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without the CSRF token: %d; want 403", c.path, resp.StatusCode)
		}
		form := url.Values{"csrf": {opCSRF}}
		for k, v := range c.form {
			form[k] = v
		}
		resp := f.do("POST", c.path, op, form)
		if b := readBody(resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "operators watch") {
			t.Errorf("POST %s by an operator: %d; want 403 saying operators watch", c.path, resp.StatusCode)
		}
	}
	if !unchanged() {
		t.Error("a refused change reached the backend")
	}
}
