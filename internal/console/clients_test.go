package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// The fake backend's clients and tokens: tokens are recorded, a revoke
// and a bandwidth change apply to its clients.

func (f *fakeBackend) CreateToken(ctx context.Context, req api.TokenRequest) (*api.TokenResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = append(f.tokens, req)
	return &api.TokenResponse{Token: fmt.Sprintf("kura1-enroll-secret%d", len(f.tokens)), Expires: time.Date(2026, 5, 4, 13, 0, 0, 0, time.UTC)}, nil
}

func (f *fakeBackend) client(name string) (*api.Client, error) {
	for i := range f.clients {
		if f.clients[i].Name == name {
			return &f.clients[i], nil
		}
	}
	return nil, &api.Error{Code: api.CodeNotFound, Field: "client", Message: "no client named " + name}
}

func (f *fakeBackend) RevokeClient(ctx context.Context, name string) (*api.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.client(name)
	if err != nil {
		return nil, err
	}
	c.Revoked, c.Connected = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC), false
	out := *c
	return &out, nil
}

func (f *fakeBackend) UpdateClient(ctx context.Context, name string, req api.ClientUpdate) (*api.Client, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.client(name)
	if err != nil {
		return nil, err
	}
	if req.BWLimit != nil {
		c.BWLimit = *req.BWLimit
	}
	out := *c
	return &out, nil
}

func (f *fakeBackend) ServerURL() string { return "https://backup.example:8420" }

// The clients page lists each client's state, last contact and bandwidth
// limit; a token made there is shown once with the command that enrolls
// an agent with it (and never again); a revoke and a bandwidth limit
// reach the backend.
func TestClientsPage(t *testing.T) {
	f := newFixture(t)
	seen := time.Date(2026, 5, 4, 11, 58, 0, 0, time.UTC)
	f.b.clients = []api.Client{{Name: "web1", Connected: true, LastSeen: seen, Address: "192.0.2.7:5000", BWLimit: 2 << 20},
		{Name: "db1"}, {Name: "old", Revoked: seen}}
	ck, csrf := f.signIn("", adminToken)
	b := f.page(ck, "/clients")
	for name, state := range map[string]string{"web1": "connected", "db1": "offline", "old": "revoked"} {
		if !regexp.MustCompile(`<tr id="client-` + name + `" data-client="` + name + `" class="` + state + `">`).MatchString(b) {
			t.Errorf("client %s is not shown %s", name, state)
		}
	}
	if !strings.Contains(b, `value="2048"> KB/s`) || !strings.Contains(b, "192.0.2.7:5000") {
		t.Errorf("web1's bandwidth limit (2048 KB/s) or address is not shown")
	}

	resp := f.do("POST", "/clients/tokens", ck, url.Values{"csrf": {csrf}, "name": {"web2"}, "expires": {"24h"}})
	b = readBody(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create a token: %d\n%s", resp.StatusCode, errorMessage(b))
	}
	want := "kura agent enroll --server https://backup.example:8420 --token kura1-enroll-secret1 --name web2 &amp;&amp; kura agent run"
	if !strings.Contains(b, want) {
		t.Errorf("the page does not show the command %q:\n%s", want, b)
	}
	if len(f.b.tokens) != 1 || f.b.tokens[0].Name != "web2" || f.b.tokens[0].ExpiresSeconds != 86400 {
		t.Errorf("tokens asked for %+v; want one for web2, a day", f.b.tokens)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the token's page may be cached: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	if b := f.page(ck, "/clients"); strings.Contains(b, "kura1-enroll-secret1") {
		t.Error("the token is shown again on the next visit")
	}

	if resp := f.do("POST", "/clients/db1/bandwidth", ck, url.Values{"csrf": {csrf}, "bwlimit_kbps": {"512"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("set db1's limit: %d\n%s", resp.StatusCode, errorMessage(readBody(resp)))
	}
	if resp := f.do("POST", "/clients/web1/revoke", ck, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke web1: %d", resp.StatusCode)
	}
	b = f.page(ck, "/clients")
	if !strings.Contains(b, `<tr id="client-web1" data-client="web1" class="revoked">`) {
		t.Error("web1 is not shown revoked after the revoke")
	}
	if f.b.clients[1].BWLimit != 512<<10 {
		t.Errorf("db1's limit %d; want 512 KB/s", f.b.clients[1].BWLimit)
	}
}

// Bad input on the clients page is a 4xx that says what is wrong.
func TestClientsBadInput(t *testing.T) {
	f := newFixture(t)
	f.b.clients = []api.Client{{Name: "web1"}}
	ck, csrf := f.signIn("", adminToken)
	for _, c := range []struct {
		path   string
		form   url.Values
		status int
		says   string
	}{
		{"/clients/tokens", url.Values{"name": {"bad name!"}}, 400, "client name"},
		{"/clients/tokens", url.Values{"expires": {"forever"}}, 400, "not a duration"},
		{"/clients/tokens", url.Values{"expires": {"9000h"}}, 400, "expires_seconds"},
		{"/clients/web1/bandwidth", url.Values{"bwlimit_kbps": {"fast"}}, 400, "not a number"},
		{"/clients/web1/bandwidth", url.Values{"bwlimit_kbps": {"-5"}}, 400, "not a number"},
		{"/clients/nobody/bandwidth", url.Values{"bwlimit_kbps": {"5"}}, 404, "nobody"},
		{"/clients/nobody/revoke", url.Values{}, 404, "nobody"},
	} {
		c.form.Set("csrf", csrf)
		resp := f.do("POST", c.path, ck, c.form)
		b := readBody(resp)
		if resp.StatusCode != c.status || !strings.Contains(errorMessage(b), c.says) {
			t.Errorf("POST %s %v: %d; want %d saying %q\n%s", c.path, c.form, resp.StatusCode, c.status, c.says, errorMessage(b))
		}
	}
	if len(f.b.tokens) != 0 || f.b.clients[0].BWLimit != 0 {
		t.Errorf("bad input changed something: tokens %v, limit %d", f.b.tokens, f.b.clients[0].BWLimit)
	}
}

// Operators see the clients but make no token, revoke nothing, set no
// limit; a change without the CSRF token is refused.
func TestClientsOperatorAndCSRF(t *testing.T) {
	f := newFixture(t)
	f.b.clients = []api.Client{{Name: "web1", Connected: true}}
	checkRefusals(t, f, []changeCase{
		{"/clients/tokens", url.Values{"name": {"web2"}}},
		{"/clients/web1/revoke", url.Values{}},
		{"/clients/web1/bandwidth", url.Values{"bwlimit_kbps": {"5"}}},
	}, func() bool {
		return len(f.b.tokens) == 0 && f.b.clients[0].Revoked.IsZero() && f.b.clients[0].BWLimit == 0
	})
	op, _ := f.signIn("olga", "operator password")
	if b := f.page(op, "/clients"); !strings.Contains(b, `data-client="web1"`) || strings.Contains(b, "create-token") || strings.Contains(b, "Revoke") {
		t.Error("the operator's clients page: want web1 listed and no token form or revoke button")
	}
}
