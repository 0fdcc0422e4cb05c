package console

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/console/browsertest"
)

// The job monitor in a real browser, fed event by event: each progress
// event adds a point to the chart and moves the figures, Average and Peak
// as the job monitor defines them; phase_ended fills the phases table;
// job_ended shows the end and takes the cancel button away. The dashboard
// shows a running job's rate from the same stream.
func TestJobMonitorFollowsEvents(t *testing.T) {
	f := newFixture(t)
	f.b.feed = make(chan api.Event)
	ts := httptest.NewUnstartedServer(f.c)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	t0 := f.b.jobs[0].Started
	send := func(ev api.Event) {
		t.Helper()
		ev.JobID = 5
		select {
		case f.b.feed <- ev:
		case <-time.After(time.Minute): // only a hung browser gets here
			t.Fatalf("no follower took the %s event", ev.Kind)
		}
	}
	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "sign in",
		chromedp.Navigate(ts.URL+"/jobs/5"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#password"), adminToken))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the job monitor", chromedp.WaitVisible(chromedp.CSS("#chart")))
	if n := browsertest.Eval[string](t, ctx, `document.getElementById("chart").getAttribute("data-points")`); n != "0" {
		t.Fatalf("the chart has %s points before any event", n)
	}
	browsertest.Eval[bool](t, ctx, `window.kuraSamePage = true`)

	send(api.Event{Kind: api.EventProgress, Time: t0.Add(time.Second), Phase: "backup", Files: 1, Bytes: 100 << 10, Rate: 100 << 10})
	browsertest.WaitFor(t, ctx, "the first point", `document.getElementById("chart").getAttribute("data-points") === "1"`)
	send(api.Event{Kind: api.EventProgress, Time: t0.Add(2 * time.Second), Phase: "backup", Files: 3, Bytes: 400 << 10, Rate: 300 << 10})
	browsertest.WaitFor(t, ctx, "the second point", `document.getElementById("chart").getAttribute("data-points") === "2"`)
	// The chart's axes say their units, and its legend names the lines.
	texts := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("#chart text")].map(e => e.textContent)`)
	for _, w := range []string{"KB/s", "seconds since the job started", "0 s", "Average", "Peak", "KB/s (each progress event)"} {
		if !slices.Contains(texts, w) {
			t.Errorf("the chart has no text %q (it has %q)", w, texts)
		}
	}
	want := map[string]string{"files": "3", "bytes": "400.00 KiB", "avg": "200", "peak": "300"} // 400 KiB in 2 s; the highest rate
	for id, w := range want {
		if got := browsertest.Eval[string](t, ctx, fmt.Sprintf(`document.getElementById(%q).textContent`, id)); got != w {
			t.Errorf("#%s = %q; want %q", id, got, w)
		}
	}
	if same := browsertest.Eval[bool](t, ctx, `window.kuraSamePage === true`); !same {
		t.Error("the page reloaded to show the events")
	}

	send(api.Event{Kind: api.EventPhaseEnded, Time: t0.Add(3 * time.Second), Phase: "backup", Figures: &api.Figures{
		Phases: []api.PhaseFigures{{Name: "backup", Files: 3, SourceBytes: 400 << 10, MediaBytes: 200 << 10, AvgKBps: 200, PeakKBps: 300, CompressionRatio: "2.00:1"}}}})
	browsertest.WaitFor(t, ctx, "the phase's figures", `document.querySelector("#phases tbody td").textContent === "backup"`)
	if ratio := browsertest.Eval[string](t, ctx, `document.querySelectorAll("#phases tbody td")[5].textContent`); ratio != "2.00:1" {
		t.Errorf("the phase's ratio %q; want 2.00:1", ratio)
	}

	send(api.Event{Kind: api.EventJobEnded, Time: t0.Add(4 * time.Second), Message: "succeeded",
		Figures: &api.Figures{Files: 3, SourceBytes: 400 << 10, AvgKBps: 100, PeakKBps: 300, Warnings: 1}})
	browsertest.WaitFor(t, ctx, "the end", `document.getElementById("state").textContent === "succeeded" && !document.getElementById("cancel")`)
	if avg := browsertest.Eval[string](t, ctx, `document.getElementById("avg").textContent`); avg != "100" {
		t.Errorf("Average KB/s after the end %q; want the job's own figure, 100", avg)
	}

	browsertest.Do(t, ctx, "the dashboard", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#running")))
	send(api.Event{Kind: api.EventProgress, Time: t0.Add(5 * time.Second), Files: 9, Bytes: 9 << 20, Rate: 512 << 10})
	browsertest.WaitFor(t, ctx, "the dashboard's live rate", `document.querySelector('tr[data-job="5"] [data-field="rate"]').textContent === "512"`)
	if b := browsertest.Eval[string](t, ctx, `document.querySelector('tr[data-job="5"] [data-field="bytes"]').textContent`); b != "9.00 MiB" {
		t.Errorf("the dashboard's bytes %q; want 9.00 MiB", b)
	}
}

// In a real browser: sign in, open the savesets page, open saveset 8, open
// its folder data, select a file, restore it into a folder of another
// client, and land on the job monitor of the queued restore.
func TestBrowseAndRestoreInBrowser(t *testing.T) {
	f := newFixture(t)
	f.b.clients = []api.Client{{Name: "c1"}, {Name: "c2"}}
	ts := httptest.NewUnstartedServer(f.c)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "sign in",
		chromedp.Navigate(ts.URL+"/savesets"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#password"), adminToken))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the savesets page", chromedp.WaitVisible(chromedp.CSS("#savesets")))
	browsertest.Screenshot(t, ctx, "console-savesets")
	browsertest.Navigate(t, ctx, "open saveset 8", chromedp.Click(chromedp.CSS(`tr[data-saveset="8"] a[href="/savesets/8"]`)))
	browsertest.Do(t, ctx, "the top of saveset 8", chromedp.WaitVisible(chromedp.CSS("#entries a.dir")))
	browsertest.Navigate(t, ctx, "open the folder data", chromedp.Click(chromedp.CSS("#entries a.dir")))
	browsertest.Do(t, ctx, "the folder data", chromedp.WaitVisible(chromedp.CSS("#next")))
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("#entries tbody tr").length`); n != browsePage {
		t.Errorf("the folder's first page shows %d entries; want %d", n, browsePage)
	}
	browsertest.Do(t, ctx, "select a file and say where",
		chromedp.Click(chromedp.CSS(`input[name="select"][value="/data/f0002.txt"]`)),
		chromedp.SetValue(chromedp.CSS("#to-client"), "c2"),
		chromedp.SendKeys(chromedp.CSS("#to"), "/srv/back"))
	browsertest.Screenshot(t, ctx, "console-browse")
	if status := browsertest.Navigate(t, ctx, "restore", chromedp.Click(chromedp.CSS("#restore"))); status != 200 {
		t.Fatalf("restore: the page after it is %d", status)
	}
	browsertest.Do(t, ctx, "the restore's job monitor", chromedp.WaitVisible(chromedp.CSS("#monitor")))
	if job := browsertest.Eval[string](t, ctx, `document.getElementById("monitor").dataset.job`); job != "101" {
		t.Errorf("after the restore the page shows job %q; want the queued restore, 101", job)
	}
	got := f.b.requests()
	if len(got) != 1 || got[0].Kind != api.KindRestore || got[0].Saveset != 8 || got[0].ToClient != "c2" || got[0].To != "/srv/back" ||
		fmt.Sprint(got[0].RestorePaths) != "[/data/f0002.txt]" || len(got[0].Includes) != 0 {
		t.Errorf("queued %+v; want a restore of saveset 8's /data/f0002.txt to c2:/srv/back", got)
	}
}

// In a real browser: search the savesets for a name (client c1's, newest
// first), open the folder of a match, see the saveset's stock-tool recipe,
// and start a verify at level data, which lands on the queued job's
// monitor.
func TestSearchAndVerifyInBrowser(t *testing.T) {
	f := newFixture(t)
	f.b.clients = []api.Client{{Name: "c1"}, {Name: "c2"}}
	ts := httptest.NewUnstartedServer(f.c)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "sign in",
		chromedp.Navigate(ts.URL+"/savesets"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#password"), adminToken))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the savesets page's search", chromedp.WaitVisible(chromedp.CSS("#search-name")),
		chromedp.SendKeys(chromedp.CSS("#search-name"), "report-01"))
	browsertest.Navigate(t, ctx, "search", chromedp.Click(chromedp.CSS("#search")))
	browsertest.Do(t, ctx, "narrow the search to c1", chromedp.WaitVisible(chromedp.CSS("#matches")),
		chromedp.SetValue(chromedp.CSS("#search-client"), "c1"))
	browsertest.Navigate(t, ctx, "search c1", chromedp.Click(chromedp.CSS("#search")))
	browsertest.Do(t, ctx, "the matches", chromedp.WaitVisible(chromedp.CSS("#matches a.found")))
	rows := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("#matches tbody tr")].map(r => r.dataset.saveset + " " + r.querySelector("a.found").textContent)`)
	if len(rows) != 20 || rows[0] != "8 /home/me/report-010.odt" || rows[10] != "7 /home/me/report-010.odt" {
		t.Errorf("the search shows %q; want report-010…019 of saveset 8, then of 7", rows)
	}
	browsertest.Screenshot(t, ctx, "console-search")
	browsertest.Navigate(t, ctx, "open a match's folder", chromedp.Click(chromedp.CSS("#matches a.found")))
	browsertest.Do(t, ctx, "the saveset page", chromedp.WaitVisible(chromedp.CSS("#verify-form")))
	f.b.mu.Lock()
	got := f.b.listings[len(f.b.listings)-1]
	f.b.mu.Unlock()
	if got.SavesetID != 8 || got.Path != "/home/me" {
		t.Errorf("the match opened %+v; want saveset 8's folder /home/me", got)
	}

	browsertest.Navigate(t, ctx, "open the recipe", chromedp.Click(chromedp.CSS("#recipe-link")))
	browsertest.Do(t, ctx, "the recipe", chromedp.WaitVisible(chromedp.CSS("#recipe")))
	if r := browsertest.Eval[string](t, ctx, `document.getElementById("recipe").textContent`); r != "cat /vtl/KUR001/file-8 | zstd -d | tar -xvf - # <b>" {
		t.Errorf("the recipe shows %q", r)
	}
	browsertest.Do(t, ctx, "back to the saveset", chromedp.Navigate(ts.URL+"/savesets/8"), chromedp.WaitVisible(chromedp.CSS("#verify-form")),
		chromedp.SetValue(chromedp.CSS("#verify-level"), "data"))
	browsertest.Screenshot(t, ctx, "console-verify")
	if status := browsertest.Navigate(t, ctx, "verify", chromedp.Click(chromedp.CSS("#verify"))); status != 200 {
		t.Fatalf("verify: the page after it is %d", status)
	}
	browsertest.Do(t, ctx, "the verify's job monitor", chromedp.WaitVisible(chromedp.CSS("#monitor")))
	if job := browsertest.Eval[string](t, ctx, `document.getElementById("monitor").dataset.job`); job != "101" {
		t.Errorf("after the verify the page shows job %q; want the queued verify, 101", job)
	}
	if got := f.b.requests(); len(got) != 1 || got[0].Kind != api.KindVerify || got[0].Saveset != 8 || got[0].Level != "data" {
		t.Errorf("queued %+v; want a data verify of saveset 8", got)
	}
}

// In a real browser: the Benchmarks page's charts load (the console's own
// SVG, allowed by its Content-Security-Policy) and the figures unfold.
func TestBenchmarksInBrowser(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "run1")
	b, err := os.ReadFile(storedReport)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	f.c.opts.BenchDir = filepath.Dir(dir)
	ts := httptest.NewUnstartedServer(f.c)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "sign in",
		chromedp.Navigate(ts.URL+"/benchmarks"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#password"), adminToken))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the Benchmarks page", chromedp.WaitVisible(chromedp.CSS("#bench-run")))
	browsertest.WaitFor(t, ctx, "every chart loaded",
		`[...document.querySelectorAll("img.bench-chart")].every(i => i.complete && i.naturalWidth > 0)`)
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("img.bench-chart").length`); n < 3 {
		t.Errorf("the page shows %d charts; want the report's (table 5-1/5-5, drives, links …)", n)
	}
	browsertest.Do(t, ctx, "unfold the first chart's figures", chromedp.Click(chromedp.CSS("section.bench summary")))
	browsertest.Screenshot(t, ctx, "console-benchmarks")
}
