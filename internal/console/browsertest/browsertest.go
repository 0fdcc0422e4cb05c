// Package browsertest runs the web console's browser tests in a real
// headless Chromium (Debian's chromium package; scripts/test.sh installs
// it), driven with chromedp. A test package starts one browser, by its
// first test that needs it, and stops it in TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		browsertest.Close()
//		os.Exit(code)
//	}
//
// Each test gets a tab in a browser context of its own: its own cookies,
// as a separate browser would have.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

func start() {
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
		// The console's certificate comes from a test server's own CA.
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

// Close stops the browser, if one was started, and removes its profile.
func Close() {
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
}

// Tab is a new tab in a browser context of its own, closed when the test
// ends; its context's deadline is generous, only to stop a hung test.
func Tab(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(start)
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { tcancel(); cancel() })
	return tctx
}

// Do runs the steps and fails the test with what when one fails.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Navigate runs the steps (a click that submits a form, a sign-in) and
// waits for the page they load; it returns the page's HTTP status.
func Navigate(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) int64 {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return resp.Status
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t *testing.T, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// WaitFor waits until the JavaScript expression is truthy.
func WaitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	Do(t, ctx, what, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(60*time.Second)))
}

// Screenshot saves the page as NAME.png in the test's artifact folder
// (kept with go test -artifacts).
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
