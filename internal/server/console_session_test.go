package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/console"
)

// consoleDo sends one request to a server's console handler, with the
// session cookie when not "".
func consoleDo(t *testing.T, r *rig, method, path, cookie string, form url.Values) *http.Response {
	t.Helper()
	h, err := r.srv.Console(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(method, "https://console.test"+path, strings.NewReader(form.Encode()))
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Result()
}

// A console sign-in outlives a restart of the server (the session is in
// the catalog, the admin token's stamp the same); a restart with a new
// admin token ends the sessions of the old one.
func TestConsoleSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := startServer(t, home, "")
	tok, err := os.ReadFile(r.srv.AdminTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	resp := consoleDo(t, r, "POST", "/login", "", url.Values{"password": {strings.TrimSpace(string(tok))}})
	var ck string
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			ck = c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || ck == "" {
		t.Fatalf("sign-in with the admin token: %d, cookie %q", resp.StatusCode, ck)
	}
	r.stop()

	r = startServer(t, home, "")
	if resp := consoleDo(t, r, "GET", "/jobs", ck, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the session after a restart: %d; want 200", resp.StatusCode)
	}
	r.stop()

	if err := os.Remove(r.srv.AdminTokenPath()); err != nil { // the next start makes a new one
		t.Fatal(err)
	}
	r = startServer(t, home, "")
	if resp := consoleDo(t, r, "GET", "/jobs", ck, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the old admin token's session after the token was replaced: %d; want a redirect to sign in", resp.StatusCode)
	}
}
