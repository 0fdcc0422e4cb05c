package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/console"
	"github.com/kura-backup/kura/internal/console/browsertest"
)

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
		if err := r.srv.ServeConsole(ctx, ln, 0, 0); err != nil {
			r.t.Errorf("console: %v", err)
		}
	}()
	r.t.Cleanup(func() { cancel(); <-done })
	return "https://" + ln.Addr().String()
}

// In a real browser: a wrong password is refused; an admin signs in,
// starts a backup of a client from its Back up now form (typed, sent with
// the keyboard), lands on the job's monitor and watches its chart grow
// from the event stream without a reload, sees the running backup on the
// dashboard with its live rate, is refused a cancel without the CSRF
// token, cancels it with the button, and sees it end canceled.
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
	// 48 MiB at 256 KiB/s (the form's bandwidth limit): over three
	// minutes, longer than the test on a busy machine, so it ends only
	// canceled; a progress event comes with each 1 MiB frame.
	randomFiles(t, src, 48, 1<<20, 3)

	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "open the console", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "type a wrong password",
		chromedp.SendKeys(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "not her password"))
	if status := browsertest.Navigate(t, ctx, "a wrong password", chromedp.Click(chromedp.CSS("#signin"))); status != 401 {
		t.Fatalf("a wrong password: %d; want 401", status)
	}
	browsertest.Do(t, ctx, "the refusal", chromedp.WaitVisible(chromedp.CSS("#login-error")))
	browsertest.Screenshot(t, ctx, "console-signin")
	browsertest.Do(t, ctx, "retype",
		chromedp.SetValue(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice's long password"))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the dashboard", chromedp.WaitVisible(chromedp.CSS("#who")))
	if who := browsertest.Eval[string](t, ctx, `document.getElementById("who").textContent`); who != "alice (admin)" {
		t.Errorf("signed in as %q; want alice (admin)", who)
	}
	if cookies := browsertest.Eval[string](t, ctx, `document.cookie`); cookies != "" {
		t.Errorf("the page's script can read the cookies %q; want the session cookie HttpOnly", cookies)
	}

	// Back up now, from the clients page.
	browsertest.Do(t, ctx, "the clients page", chromedp.Navigate(url+"/clients"), chromedp.WaitVisible(chromedp.CSS(`a.backup-now[data-client="c1"]`)))
	browsertest.Navigate(t, ctx, "open c1's backup form", chromedp.Click(chromedp.CSS(`a.backup-now[data-client="c1"]`)))
	browsertest.Do(t, ctx, "fill the backup form", chromedp.WaitVisible(chromedp.CSS("#backup-form")),
		chromedp.SendKeys(chromedp.CSS("#bf-paths"), src), chromedp.SetValue(chromedp.CSS("#bf-compress"), "none"),
		chromedp.SendKeys(chromedp.CSS("#bf-bw"), "256"))
	browsertest.Screenshot(t, ctx, "console-backup")
	if status := browsertest.Navigate(t, ctx, "start the backup with Enter", chromedp.SendKeys(chromedp.CSS("#bf-bw"), kb.Enter)); status != 200 {
		t.Fatalf("start the backup: the page after it is %d", status)
	}
	browsertest.Do(t, ctx, "the job monitor", chromedp.WaitVisible(chromedp.CSS("#chart")))
	id, err := strconv.ParseInt(browsertest.Eval[string](t, ctx, `document.getElementById("monitor").dataset.job`), 10, 64)
	if err != nil {
		t.Fatalf("the page after the backup form is not a job's monitor: %v", err)
	}
	j, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var req api.JobRequest
	if err := json.Unmarshal(j.Request, &req); err != nil {
		t.Fatalf("job %d's request: %v", id, err)
	}
	want := api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Level: "full", Compress: "none", BWLimit: 256 << 10}
	if !reflect.DeepEqual(req, want) {
		t.Fatalf("job %d is %+v; want the backup the form asked for, %+v", id, req, want)
	}
	points := func() int {
		n, _ := strconv.Atoi(browsertest.Eval[string](t, ctx, `document.getElementById("chart").getAttribute("data-points")`))
		return n
	}
	browsertest.WaitFor(t, ctx, "the chart's first points", `Number(document.getElementById("chart").getAttribute("data-points")) >= 2`)
	n := points()
	browsertest.Eval[bool](t, ctx, `window.kuraSamePage = true`)
	browsertest.WaitFor(t, ctx, "the chart moving without a reload",
		fmt.Sprintf(`window.kuraSamePage === true && Number(document.getElementById("chart").getAttribute("data-points")) > %d`, n))
	if state := browsertest.Eval[string](t, ctx, `document.getElementById("state").textContent + (document.getElementById("reason") ? " " + document.getElementById("reason").textContent : "")`); state != "running" {
		t.Errorf("the monitor of the running job says %q; want running (and no reason it waits)", state)
	}
	if lines := browsertest.Eval[int](t, ctx, `document.querySelectorAll("#chart polyline.rate, #chart line.avg:not(.legend), #chart line.peak:not(.legend)").length`); lines != 3 {
		t.Errorf("the chart has %d of its rate, average and peak lines; want 3", lines)
	}
	if peak := browsertest.Eval[string](t, ctx, `document.getElementById("peak").textContent`); peak == "0" || peak == "" {
		t.Errorf("Peak KB/s %q while the job runs", peak)
	}
	browsertest.Screenshot(t, ctx, "console-job")
	r.waitLog("console: backup started", "user=alice")

	// The dashboard shows it running, with its live rate.
	browsertest.Do(t, ctx, "the dashboard", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#running")))
	row := fmt.Sprintf(`tr.live-job[data-job="%d"]`, id)
	browsertest.WaitFor(t, ctx, "the dashboard's live rate",
		fmt.Sprintf(`(() => { const c = document.querySelector('%s [data-field="rate"]'); return c && /^[0-9,]+$/.test(c.textContent); })()`, row))
	browsertest.Screenshot(t, ctx, "console-dashboard")
	browsertest.Do(t, ctx, "back to the job monitor", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", url, id)), chromedp.WaitVisible(chromedp.CSS("#chart")))

	// A change without the CSRF token: refused, and the job runs on.
	status := browsertest.Eval[int](t, ctx, fmt.Sprintf(`fetch("/jobs/%d/cancel", {method: "POST"}).then(r => r.status)`, id), chromedp.EvalAwaitPromise)
	if status != 403 {
		t.Errorf("a cancel without the CSRF token: %d; want 403", status)
	}
	if j, err := r.admin.Job(t.Context(), id); err != nil {
		t.Fatal(err)
	} else if j.State != catalog.StateRunning {
		t.Fatalf("after the refused cancel the job is %s; want running", j.State)
	}

	if status := browsertest.Navigate(t, ctx, "cancel", chromedp.Click(chromedp.CSS("#cancel"))); status != 200 {
		t.Fatalf("cancel: the page after it is %d", status)
	}
	browsertest.WaitFor(t, ctx, "the job canceled", `document.getElementById("state") && document.getElementById("state").textContent === "canceled"`)
	if j := r.wait(id); j.State != catalog.StateCanceled || j.Error == "" {
		t.Errorf("the job: %s (%q); want canceled by alice", j.State, j.Error)
	}
	r.waitLog("console: job canceled", "user=alice")

	browsertest.Navigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(".signout button")))
	browsertest.Do(t, ctx, "the sign-in page after sign-out", chromedp.WaitVisible(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the dashboard after sign-out", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
}

// In a real browser against a real server: an admin opens a backup in the
// savesets page, opens its folder, selects one file and restores it into
// a folder of the agent's machine; the restore is a queued job, the page
// shows its monitor, and the file (and only it) is on disk. The file is
// named a*.txt: ticked, it is that file, not a glob that also takes ab.txt.
func TestConsoleRestoresAFile(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	users := console.OpenUsers(console.UsersFile(r.home))
	if err := users.Add("alice", "alice's long password", console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	url := r.startConsole()
	r.runAgent("c1")
	src := t.TempDir()
	for name, text := range map[string]string{"a*.txt": "the file to restore\n", "ab.txt": "left alone\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}}).SavesetID
	to := t.TempDir()

	ctx := browsertest.Tab(t)
	browsertest.Do(t, ctx, "open the console", chromedp.Navigate(url+"/savesets"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice's long password"))
	browsertest.Navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS("#signin")))
	browsertest.Do(t, ctx, "the savesets page", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-saveset="%d"]`, id))))
	browsertest.Navigate(t, ctx, "open the saveset", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/savesets/%d"]`, id))))
	browsertest.Do(t, ctx, "the saveset's top", chromedp.WaitVisible(chromedp.CSS("#entries a.dir")))
	browsertest.Do(t, ctx, "open the backed-up folder", chromedp.Navigate(fmt.Sprintf("%s/savesets/%d?path=%s", url, id, src)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`input[name="select"][value="%s/a*.txt"]`, src))))
	browsertest.Do(t, ctx, "select a*.txt and say where",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="select"][value="%s/a*.txt"]`, src))),
		chromedp.SendKeys(chromedp.CSS("#to"), to))
	if status := browsertest.Navigate(t, ctx, "restore", chromedp.Click(chromedp.CSS("#restore"))); status != 200 {
		t.Fatalf("restore: the page after it is %d", status)
	}
	browsertest.Do(t, ctx, "the restore's monitor", chromedp.WaitVisible(chromedp.CSS("#monitor")))
	job, err := strconv.ParseInt(browsertest.Eval[string](t, ctx, `document.getElementById("monitor").dataset.job`), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	j := r.wait(job)
	if j.Kind != api.KindRestore || j.State != catalog.StateSucceeded {
		t.Fatalf("job %d: %s %s (%s); want a succeeded restore", job, j.Kind, j.State, j.Error)
	}
	browsertest.WaitFor(t, ctx, "the monitor shows the end", `document.getElementById("state").textContent === "succeeded"`)
	got, err := os.ReadFile(filepath.Join(to, src, "a*.txt"))
	if err != nil || string(got) != "the file to restore\n" {
		t.Errorf("the restored a*.txt: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(to, src, "ab.txt")); !os.IsNotExist(err) {
		t.Errorf("ab.txt, not selected, was restored too (%v)", err)
	}
	r.waitLog("console: restore started", "user=alice")
}
