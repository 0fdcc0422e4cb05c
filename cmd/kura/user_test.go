package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/console"
)

// userAdd runs kura user add with the password on stdin.
func (k *kura) userAdd(password string, args ...string) (stdout, stderr string, code int) {
	k.t.Helper()
	cmd := k.command(k.t.Context(), append([]string{"user", "add"}, args...)...)
	cmd.Stdin = strings.NewReader(password + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		k.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// kura user add/list/remove keep the console's users in the home, with
// argon2id hashes; a bad password or name is a usage error and adds
// nobody.
func TestUserCommands(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	if out, errs, code := k.userAdd("long enough password", "alice"); code != 0 || !strings.Contains(out, "alice added (admin)") {
		t.Fatalf("user add alice: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := k.userAdd("another long one", "olga", "--operator"); code != 0 || !strings.Contains(out, "olga added (operator)") {
		t.Fatalf("user add olga --operator: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := k.userAdd("short", "bob"); code != exitUsage || !strings.Contains(errs, "at least 10") {
		t.Errorf("a short password: exit %d %q; want %d saying how long", code, errs, exitUsage)
	}
	if _, _, code := k.userAdd("long enough password", "no spaces"); code != exitUsage {
		t.Errorf("a name with a space: exit %d; want %d", code, exitUsage)
	}
	if _, errs, code := k.userAdd("long enough password", "alice"); code != exitFailure || !strings.Contains(errs, "exists") {
		t.Errorf("alice again: exit %d %q; want %d, exists", code, errs, exitFailure)
	}
	var users []userJSON
	k.json(0, &users, "user", "list", "--json")
	if len(users) != 2 || users[0] != (userJSON{"alice", "admin"}) || users[1] != (userJSON{"olga", "operator"}) {
		t.Errorf("user list --json: %+v", users)
	}
	list := k.ok("user", "list")
	if !strings.Contains(list.stdout, "alice") || !strings.Contains(list.stdout, "olga") || strings.Contains(list.stdout, "bob") {
		t.Errorf("user list:\n%s", list.stdout)
	}
	b, err := os.ReadFile(console.UsersFile(k.home))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "long enough") || !strings.Contains(string(b), "argon2id$") {
		t.Errorf("the user file holds the password or no argon2id hash:\n%s", b)
	}
	if fi, _ := os.Stat(console.UsersFile(k.home)); fi.Mode().Perm() != 0o600 {
		t.Errorf("the user file's mode %v; want 0600", fi.Mode().Perm())
	}
	role, err := console.OpenUsers(console.UsersFile(k.home)).Check("olga", "another long one")
	if err != nil || role != console.RoleOperator {
		t.Errorf("olga signs in as %q (%v); want operator", role, err)
	}
	k.ok("user", "remove", "olga")
	if list := k.ok("user", "list"); strings.Contains(list.stdout, "olga") {
		t.Errorf("olga listed after remove:\n%s", list.stdout)
	}
}

// kura server --console-listen serves the console on its own port with
// the server's certificate: a user added with kura user add signs in; the
// API port answers /metrics for the metrics token it prints.
func TestServerConsoleAndMetrics(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	if _, errs, code := k.userAdd("long enough password", "alice"); code != 0 {
		t.Fatalf("user add: %d %s", code, errs)
	}
	srv := k.start("server", "--listen", "127.0.0.1:0", "--console-listen", "127.0.0.1:0")
	api := strings.TrimSpace(strings.TrimPrefix(srv.line(t, "listening on"), "Kura server listening on"))
	tokenFile := strings.TrimSpace(strings.SplitN(srv.line(t, "Metrics: GET"), "bearer token in", 2)[1])
	consoleURL := strings.Fields(strings.TrimPrefix(srv.line(t, "Web console on"), "Web console on"))[0]

	caPEM, err := os.ReadFile(filepath.Join(k.home, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()

	resp, err := c.PostForm(consoleURL+"/login", url.Values{"name": {"alice"}, "password": {"long enough password"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	resp, err = c.Get(consoleURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "<h1>Dashboard</h1>") || !strings.Contains(string(b), "alice (admin)") {
		t.Errorf("the dashboard: %d\n%s", resp.StatusCode, b)
	}

	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", api+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "kura_build_info{") {
		t.Errorf("/metrics: %d\n%s", resp.StatusCode, b)
	}

	// A console session that would end at once is a usage error.
	if r := newKura(t).run("server", "--listen", "127.0.0.1:0", "--console-lifetime", "0s"); r.code != 2 || !strings.Contains(r.stderr, "--console-lifetime") {
		t.Errorf("a zero --console-lifetime: want exit 2 naming the flag\n%s", r)
	}
}
