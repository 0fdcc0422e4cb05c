package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/console/browsertest"
)

// serveAndSignIn serves the fixture's console over TLS and signs a new
// tab in as the admin, landing on path.
func serveAndSignIn(t *testing.T, f *fixture, path string) (context.Context, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(f.c)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "sign in",
		chromedp.Navigate(ts.URL+path), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#password"), adminToken))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	return ctx, ts.URL
}

// inPlace is the JavaScript for the barcode the picture shows in a place
// (a CSS selector of its box), "" when it is empty.
func inPlace(sel string) string {
	return `(() => { const e = document.querySelector('` + sel + ` [data-tape]'); return e ? e.dataset.tape : ""; })()`
}

// In a real browser: the library picture shows VT002 in slot 2; on its
// tape page, with the keyboard only (Tab to the Load button, Enter), it is
// loaded into drive 1 and the picture shows it there, slot 2 its empty
// home; the drive's Unload button puts it back. On a tablet's screen the
// picture fits the width.
func TestLibraryInBrowser(t *testing.T) {
	f, _ := newLocalFixture(t)
	ctx, _ := serveAndSignIn(t, f, "/libraries")
	browsertest.Do(t, ctx, "the library picture", chromedp.WaitVisible(chromedp.CSS("#slots")))
	if got := browsertest.Eval[string](t, ctx, inPlace(`li[data-slot="2"]`)); got != "VT002" {
		t.Fatalf("slot 2 shows %q; want VT002", got)
	}
	browsertest.Screenshot(t, ctx, "console-library")

	browsertest.Navigate(t, ctx, "open VT002", chromedp.Click(chromedp.CSS(`a#tape-VT002`)))
	browsertest.Do(t, ctx, "the tape page", chromedp.WaitVisible(chromedp.CSS("#load")))
	browsertest.Screenshot(t, ctx, "console-tape")
	// Keyboard only: Tab from the top of the page to the Load button.
	browsertest.Eval[bool](t, ctx, `document.activeElement.blur(), true`)
	for i := 0; browsertest.Eval[string](t, ctx, `document.activeElement.id`) != "load"; i++ {
		if i == 40 {
			t.Fatal("40 presses of Tab did not reach the Load button")
		}
		browsertest.Do(t, ctx, "Tab", chromedp.KeyEvent("\t"))
	}
	if outline := browsertest.Eval[string](t, ctx, `getComputedStyle(document.activeElement).outlineStyle`); outline == "none" {
		t.Error("the focused Load button shows no outline")
	}
	browsertest.Navigate(t, ctx, "Enter on Load", chromedp.KeyEvent("\r"))
	browsertest.Do(t, ctx, "the picture after the load", chromedp.WaitVisible(chromedp.CSS("#drives")))
	if got := browsertest.Eval[string](t, ctx, inPlace(`li[data-drive="1"]`)); got != "VT002" {
		t.Errorf("after the load drive 1 shows %q; want VT002", got)
	}
	if got := browsertest.Eval[string](t, ctx, inPlace(`li[data-slot="2"]`)); got != "" {
		t.Errorf("after the load slot 2 shows %q; want it empty", got)
	}
	browsertest.Screenshot(t, ctx, "console-library-loaded")

	browsertest.Navigate(t, ctx, "unload", chromedp.Click(chromedp.CSS(`button.unload[data-tape="VT002"]`)))
	browsertest.Do(t, ctx, "the picture after the unload", chromedp.WaitVisible(chromedp.CSS("#slots")))
	if got := browsertest.Eval[string](t, ctx, inPlace(`li[data-slot="2"]`)); got != "VT002" {
		t.Errorf("after the unload slot 2 shows %q; want VT002", got)
	}
	if got := browsertest.Eval[string](t, ctx, inPlace(`li[data-drive="1"]`)); got != "" {
		t.Errorf("after the unload drive 1 shows %q; want it empty", got)
	}

	browsertest.Do(t, ctx, "a tablet's screen", chromedp.EmulateViewport(768, 1024), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#slots")))
	if wide := browsertest.Eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth`); wide {
		t.Error("on a 768-pixel screen the library page is wider than the screen")
	}
	browsertest.Screenshot(t, ctx, "console-library-tablet")
}

// In a real browser: a policy created in the form shows its runs on the
// calendar and the retention preview of its savesets; a what-if with three
// generations keeps them all; its Run now button queues its next run's
// job and shows that job's monitor. The planner answers seed 004's sizing.
func TestPolicyAndPlannerInBrowser(t *testing.T) {
	f, lb := newLocalFixture(t) // Monday 4 May 2026
	withClient(t, lb)
	for i := range 3 {
		s := &catalog.Saveset{Client: "web1", Selection: "docs", Policy: "nightly", Level: catalog.LevelFull, Status: catalog.StatusComplete,
			Created: f.clk.now().Add(-time.Duration(3-i) * 24 * time.Hour)}
		if err := lb.env.Catalog.CreateSaveset(s); err != nil {
			t.Fatal(err)
		}
	}
	// The server's queue, as Server.Submit keeps it: a queued job in the
	// catalog, so that the monitor shows it.
	lb.Local.WithQueue(func(req api.JobRequest) ([]int64, error) {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		j := &catalog.Job{Kind: req.Kind, State: catalog.StateQueued, Client: req.Client, Selection: req.Selection,
			Level: req.Level, Request: b, Reason: "queued"}
		if err := lb.env.Catalog.CreateJob(j); err != nil {
			return nil, err
		}
		return []int64{j.ID}, nil
	})
	ctx, base := serveAndSignIn(t, f, "/policies")
	browsertest.Navigate(t, ctx, "new policy", chromedp.Click(chromedp.CSS("#new-policy")))
	browsertest.Do(t, ctx, "fill in the form", chromedp.WaitVisible(chromedp.CSS("#policy-form")),
		chromedp.SendKeys(chromedp.CSS("#pf-name"), "nightly"), chromedp.SendKeys(chromedp.CSS("#pf-selection"), "docs"),
		chromedp.SendKeys(chromedp.CSS("#pf-zone"), "UTC"))
	browsertest.Screenshot(t, ctx, "console-policy-new")
	if status := browsertest.Navigate(t, ctx, "create", chromedp.Click(chromedp.CSS("#save-policy"))); status != 200 {
		t.Fatalf("create: the page after it is %d", status)
	}
	browsertest.Do(t, ctx, "the policy's page", chromedp.WaitVisible(chromedp.CSS("#calendar")))
	runs := func(date string) string {
		return browsertest.Eval[string](t, ctx, `Array.from(document.querySelectorAll('td[data-date="`+date+`"] .run')).map(e => e.textContent).join(",")`)
	}
	if got := runs("2026-05-09"); got != "01:00 full" {
		t.Errorf("Saturday 9 May shows %q; want the 01:00 full", got)
	}
	if got := runs("2026-05-05"); got != "01:00 incr" {
		t.Errorf("Tuesday 5 May shows %q; want the 01:00 incremental", got)
	}
	expiring := `document.querySelectorAll("#retention tr.expire").length`
	if n := browsertest.Eval[int](t, ctx, expiring); n != 1 {
		t.Errorf("the preview expires %d savesets; want the oldest of three (two generations kept)", n)
	}
	browsertest.Screenshot(t, ctx, "console-policy")
	browsertest.Do(t, ctx, "try three generations", chromedp.SetValue(chromedp.CSS("#wi-gens"), "3"))
	browsertest.Navigate(t, ctx, "preview", chromedp.Click(chromedp.CSS("#preview")))
	browsertest.Do(t, ctx, "the what-if preview", chromedp.WaitVisible(chromedp.CSS("#retention")))
	if n := browsertest.Eval[int](t, ctx, expiring); n != 0 {
		t.Errorf("with three generations the preview expires %d savesets; want none", n)
	}

	// Run now at the schedule's level (the form's default): the page goes
	// to the job's monitor, and the job is queued as the policy's next
	// run, an incremental (Tuesday's), of its client and selection.
	browsertest.Do(t, ctx, "the policy's page again", chromedp.Navigate(base+"/policies/nightly"), chromedp.WaitVisible(chromedp.CSS("#run-policy")))
	if status := browsertest.Navigate(t, ctx, "Run now", chromedp.Click(chromedp.CSS("#run-policy"))); status != 200 {
		t.Fatalf("Run now: the page after it is %d", status)
	}
	browsertest.Do(t, ctx, "the job monitor", chromedp.WaitVisible(chromedp.CSS("#monitor")))
	id, err := strconv.ParseInt(browsertest.Eval[string](t, ctx, `document.getElementById("monitor").dataset.job`), 10, 64)
	if err != nil {
		t.Fatalf("the page after Run now is not a job's monitor: %v", err)
	}
	if path := browsertest.Eval[string](t, ctx, `location.pathname`); path != fmt.Sprintf("/jobs/%d", id) {
		t.Errorf("after Run now the browser is at %s; want /jobs/%d", path, id)
	}
	if state := browsertest.Eval[string](t, ctx, `document.getElementById("state").textContent`); state != catalog.StateQueued {
		t.Errorf("the monitor says %q; want queued", state)
	}
	j, err := lb.env.Catalog.Job(id)
	if err != nil {
		t.Fatal(err)
	}
	var req api.JobRequest
	if err := json.Unmarshal(j.Request, &req); err != nil {
		t.Fatal(err)
	}
	p, err := lb.Policy(t.Context(), "nightly")
	if err != nil {
		t.Fatal(err)
	}
	want := api.JobRequest{Kind: api.KindBackup, Client: "web1", Selection: "docs", Level: "incr", Policy: "nightly", Pool: p.Pool}
	if j.State != catalog.StateQueued || j.Level != "incr" || !reflect.DeepEqual(req, want) {
		t.Errorf("Run now queued job %d %s at level %q: %+v; want queued at incr, %+v", id, j.State, j.Level, req, want)
	}

	browsertest.Navigate(t, ctx, "the planner", chromedp.Click(chromedp.CSS(`header nav a[href="/planner"]`)))
	browsertest.Do(t, ctx, "the plan", chromedp.WaitVisible(chromedp.CSS("#answer")))
	if g := browsertest.Eval[string](t, ctx, `document.getElementById("generations").textContent`); g != "6" {
		t.Errorf("seed 004's plan keeps %s generations; want 6", g)
	}
	browsertest.Screenshot(t, ctx, "console-planner")

	// On a tablet's screen every page of these fits the width.
	browsertest.Do(t, ctx, "a tablet's screen", chromedp.EmulateViewport(768, 1024))
	for _, p := range []string{"/libraries/vtl", "/tapes/VT001", "/clients", "/policies", "/policies/nightly", "/policies/nightly/edit", "/planner", "/clients/web1/backup"} {
		browsertest.Do(t, ctx, p, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main")))
		if wide := browsertest.Eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth`); wide {
			t.Errorf("on a 768-pixel screen %s is wider than the screen", p)
		}
	}
}
