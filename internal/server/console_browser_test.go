package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/console"
)

// The browser tests drive one headless Chromium (Debian's chromium
// package, installed by scripts/test.sh), started once for the package by
// the first test that needs it and stopped by TestMain. Each test gets its
// own browser context: its own cookies, as a separate browser would have.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

func startBrowser() {
	path, err := exec.LookPath("chromium")
	if err != nil {
		browser.err = fmt.Errorf("the browser tests need Chromium (apt-get install chromium; scripts/test.sh installs it): %w", err)
		return
	}
	if browser.dir, err = os.MkdirTemp("", "kura-chromium-"); err != nil {
		browser.err = err
		return
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(browser.dir), chromedp.WindowSize(1280, 900),
		// The console's certificate comes from the test server's own CA.
		chromedp.IgnoreCertErrors)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		bcancel()
		acancel()
		browser.err = fmt.Errorf("starting Chromium: %w", err)
		return
	}
	browser.ctx = bctx
	browser.cancel = func() { bcancel(); acancel() }
}

func closeBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
}

// tab is a new tab in a browser context of its own, with a deadline.
func tab(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { tcancel(); cancel() })
	return tctx
}

// startConsole serves the rig's server's console on a port of its own.
func (r *rig) startConsole() string {
	r.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.srv.ServeConsole(ctx, ln, 0); err != nil {
			r.t.Errorf("console: %v", err)
		}
	}()
	r.t.Cleanup(func() { cancel(); <-done })
	return "https://" + ln.Addr().String()
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// screenshot saves the page as NAME.png in the test's artifact folder
// (kept with go test -artifacts; docs/console-*.png are copies).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// In a real browser: a wrong password is refused; an admin signs in, sees
// the running backup on the dashboard with its live rate, watches its
// chart grow from the event stream without a reload, is refused a cancel
// without the CSRF token, cancels it with the button, and sees it end
// canceled.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	users := console.OpenUsers(console.UsersFile(r.home))
	if err := users.Add("alice", "alice's long password", console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	url := r.startConsole()
	r.runAgent("c1")
	src := t.TempDir()
	randomFiles(t, src, 16, 512<<10, 3)
	// 8 MiB at 256 KiB/s: half a minute, unless canceled.
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", BWLimit: 256 << 10})[0]
	r.waitProgress(id)

	ctx := tab(t)
	do(t, ctx, "open the console", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	do(t, ctx, "type a wrong password",
		chromedp.SendKeys(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "not her password"))
	if resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#signin"))); err != nil || resp.Status != 401 {
		t.Fatalf("a wrong password: %v %v; want 401", resp, err)
	}
	do(t, ctx, "the refusal", chromedp.WaitVisible(chromedp.CSS("#login-error")))
	screenshot(t, ctx, "console-signin")
	do(t, ctx, "retype",
		chromedp.SetValue(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice's long password"))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#signin"))); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	do(t, ctx, "the dashboard", chromedp.WaitVisible(chromedp.CSS("#running")))
	if who := eval[string](t, ctx, `document.getElementById("who").textContent`); who != "alice (admin)" {
		t.Errorf("signed in as %q; want alice (admin)", who)
	}
	if cookies := eval[string](t, ctx, `document.cookie`); cookies != "" {
		t.Errorf("the page's script can read the cookies %q; want the session cookie HttpOnly", cookies)
	}
	row := fmt.Sprintf(`tr.live-job[data-job="%d"]`, id)
	do(t, ctx, "the dashboard's live rate",
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const c = document.querySelector('%s [data-field="rate"]'); return c && /^[0-9,]+$/.test(c.textContent); })()`, row),
			chromedp.WithPollingTimeout(30*time.Second)))
	screenshot(t, ctx, "console-dashboard")

	do(t, ctx, "the job monitor", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", url, id)), chromedp.WaitVisible(chromedp.CSS("#chart")))
	points := func() int {
		n, _ := strconv.Atoi(eval[string](t, ctx, `document.getElementById("chart").getAttribute("data-points")`))
		return n
	}
	do(t, ctx, "the chart's first points",
		chromedp.Poll[chromedp.Void](`Number(document.getElementById("chart").getAttribute("data-points")) >= 2`, chromedp.WithPollingTimeout(30*time.Second)))
	n := points()
	eval[bool](t, ctx, `window.kuraSamePage = true`)
	do(t, ctx, "the chart moving without a reload",
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`window.kuraSamePage === true && Number(document.getElementById("chart").getAttribute("data-points")) > %d`, n),
			chromedp.WithPollingTimeout(30*time.Second)))
	if lines := eval[int](t, ctx, `document.querySelectorAll("#chart polyline.rate, #chart line.avg, #chart line.peak").length`); lines != 3 {
		t.Errorf("the chart has %d of its rate, average and peak lines; want 3", lines)
	}
	if peak := eval[string](t, ctx, `document.getElementById("peak").textContent`); peak == "0" || peak == "" {
		t.Errorf("Peak KB/s %q while the job runs", peak)
	}

	screenshot(t, ctx, "console-job")

	// A change without the CSRF token: refused, and the job runs on.
	status := eval[int](t, ctx, fmt.Sprintf(`fetch("/jobs/%d/cancel", {method: "POST"}).then(r => r.status)`, id), chromedp.EvalAwaitPromise)
	if status != 403 {
		t.Errorf("a cancel without the CSRF token: %d; want 403", status)
	}
	if j, err := r.admin.Job(t.Context(), id); err != nil || j.State != catalog.StateRunning {
		t.Fatalf("after the refused cancel the job is %v (%v); want running", j.State, err)
	}

	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#cancel")))
	if err != nil || resp.Status != 200 {
		t.Fatalf("cancel: %v", err)
	}
	do(t, ctx, "the job canceled",
		chromedp.Poll[chromedp.Void](`document.getElementById("state") && document.getElementById("state").textContent === "canceled"`,
			chromedp.WithPollingTimeout(30*time.Second)))
	if j := r.wait(id); j.State != catalog.StateCanceled || j.Error == "" {
		t.Errorf("the job: %s (%q); want canceled by alice", j.State, j.Error)
	}
	r.waitLog("console: job canceled", "user=alice")

	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(".signout button"))); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	do(t, ctx, "the sign-in page after sign-out", chromedp.WaitVisible(chromedp.CSS("#signin")))
	do(t, ctx, "the dashboard after sign-out", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
}
