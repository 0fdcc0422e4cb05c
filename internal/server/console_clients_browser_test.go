package server_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/console"
	"github.com/kura-backup/kura/internal/console/browsertest"
)

// In a real browser against a real server: an admin makes an enrollment
// token on the clients page; the command shown enrolls a real agent (its
// --server, --token and --name, given to agent.Enroll as kura agent enroll
// gives them); the agent shows connected in the list; revoked with the
// button, it is cut off (its Run ends forbidden) and the list says
// revoked; the token, used once, enrolls nothing more.
func TestConsoleEnrollsAndRevokesAClient(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	users := console.OpenUsers(console.UsersFile(r.home))
	if err := users.Add("alice", "alice's long password", console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	url := r.startConsole()

	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "sign in", chromedp.Navigate(url+"/clients"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice's long password"))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the clients page", chromedp.WaitVisible(chromedp.CSS("#create-token")),
		chromedp.SendKeys(chromedp.CSS("#token-name"), "web9"))
	browsertest.Navigate(t, ctx, "create a token", chromedp.Click(chromedp.CSS("#create-token")))
	browsertest.Do(t, ctx, "the token shown", chromedp.WaitVisible(chromedp.CSS("#enroll-command")))
	browsertest.Screenshot(t, ctx, "console-clients-token")
	command := browsertest.Eval[string](t, ctx, `document.getElementById("enroll-command").value`)
	m := regexp.MustCompile(`^kura agent enroll --server (\S+) --token (\S+) --name (\S+) && kura agent run$`).FindStringSubmatch(command)
	if m == nil {
		t.Fatalf("the command shown %q is not kura agent enroll --server URL --token TOKEN --name NAME && kura agent run", command)
	}
	if m[1] != r.url || m[3] != "web9" {
		t.Errorf("the command enrolls %s with %s; want web9 with %s", m[3], m[1], r.url)
	}

	home := t.TempDir()
	if _, err := agent.Enroll(t.Context(), home, m[1], m[2], m[3]); err != nil {
		t.Fatalf("enrolling with the shown command: %v", err)
	}
	_, done := launchAgent(t, home, "web9")
	r.waitOnline("web9", true)
	browsertest.Do(t, ctx, "the list with web9", chromedp.Navigate(url+"/clients"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-client="web9"]`)))
	if state := browsertest.Eval[string](t, ctx, `document.querySelector('tr[data-client="web9"]').className`); state != "connected" {
		t.Errorf("web9 is listed %q; want connected", state)
	}
	browsertest.Screenshot(t, ctx, "console-clients")

	browsertest.Do(t, ctx, "open revoke", chromedp.Click(chromedp.CSS(`tr[data-client="web9"] summary`)))
	browsertest.Navigate(t, ctx, "revoke", chromedp.Click(chromedp.CSS(`button.revoke[data-client="web9"]`)))
	browsertest.Do(t, ctx, "the list after the revoke", chromedp.WaitVisible(chromedp.CSS(`tr[data-client="web9"]`)))
	if state := browsertest.Eval[string](t, ctx, `document.querySelector('tr[data-client="web9"]').className`); state != "revoked" {
		t.Errorf("after the revoke web9 is listed %q; want revoked", state)
	}
	select {
	case err := <-done:
		if c := apiclient.Code(err); c != api.CodeForbidden {
			t.Errorf("the revoked agent's Run: %v (code %q); want forbidden", err, c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the revoked agent kept running")
	}
	r.waitLog("console: client revoked", "user=alice")
	// The server's own answers keep their status: an unknown client is
	// 404, a policy without a client 400.
	post := func(path, body string) int {
		return browsertest.Eval[int](t, ctx, `fetch("`+path+`", {method: "POST", headers: {"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content,
			"Content-Type": "application/x-www-form-urlencoded"}, body: "`+body+`"}).then(r => r.status)`, chromedp.EvalAwaitPromise)
	}
	if st := post("/clients/nobody/revoke", ""); st != 404 {
		t.Errorf("revoking an unknown client: %d; want 404", st)
	}
	if st := post("/clients/nobody/bandwidth", "bwlimit_kbps=5"); st != 404 {
		t.Errorf("the limit of an unknown client: %d; want 404", st)
	}
	if st := post("/tapes/NOPE01/erase", ""); st < 400 || st >= 500 {
		t.Errorf("erasing a tape that does not exist: %d; want a 4xx", st)
	}
	if st := post("/policies", "name=p1&selection=docs&keep_generations=1"); st != 400 {
		t.Errorf("a policy without a client: %d; want 400", st)
	}
	if _, err := agent.Enroll(t.Context(), t.TempDir(), m[1], m[2], "web9"); apiclient.Code(err) != api.CodeTokenUsed {
		t.Errorf("the used token enrolled again: %v; want token_used", err)
	}
}
