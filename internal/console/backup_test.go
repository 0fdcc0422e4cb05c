package console

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// backupOf is the backup form of web1 as a user fills it.
func backupOf(kv ...string) url.Values {
	v := url.Values{"level": {"full"}, "compress": {"auto"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// formErrorOf is the reason a refused form shows.
func formErrorOf(page string) string {
	m := regexp.MustCompile(`(?s)id="form-error">(.*?)</p>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

// The clients page links each client to its backup form; the form offers
// the client's selection sets, and a submission is queued as a backup job
// of that client with what was chosen, then the page is the job's monitor.
func TestBackupNowForm(t *testing.T) {
	f, lb := newLocalFixture(t)
	withClient(t, lb)
	ck, csrf := f.signIn("", adminToken)
	if b := f.page(ck, "/clients"); !strings.Contains(b, `<a href="/clients/web1/backup" class="backup-now" data-client="web1">Back up now</a>`) {
		t.Error("the clients page has no Back up now link for web1")
	}
	b := f.page(ck, "/clients/web1/backup")
	for _, want := range []string{`<option>docs</option>`, `<option selected>full</option>`, `<option selected>auto</option>`, `<option>vtl</option>`, `id="start-backup"`} {
		if !strings.Contains(b, want) {
			t.Errorf("the backup form of web1 lacks %s", want)
		}
	}
	if !strings.Contains(b, `<a href="/clients" aria-current="page">`) {
		t.Error("the backup form is not under Clients in the navigation")
	}

	for _, c := range []struct {
		form url.Values
		want api.JobRequest
	}{
		{backupOf("selection", "docs", "level", "incr", "compress", "none", "bwlimit_kbps", "512", "verify", "on", "library", "vtl"),
			api.JobRequest{Kind: api.KindBackup, Client: "web1", Selection: "docs", Level: "incr", Compress: "none", BWLimit: 512 << 10, Verify: true, Library: "vtl"}},
		{backupOf("paths", "/srv/a\r\n\r\n  /srv/b b  \r\n", "level", "diff", "compress", "high"),
			api.JobRequest{Kind: api.KindBackup, Client: "web1", Paths: []string{"/srv/a", "/srv/b b"}, Level: "diff", Compress: "high"}},
	} {
		before := len(lb.requests())
		c.form.Set("csrf", csrf)
		resp := f.do("POST", "/clients/web1/backup", ck, c.form)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("start a backup %v: %d\n%s", c.form, resp.StatusCode, formErrorOf(readBody(resp)))
		}
		reqs := lb.requests()
		if len(reqs) != before+1 || !reflect.DeepEqual(reqs[before], c.want) {
			t.Errorf("queued %+v; want %+v", reqs[before:], c.want)
			continue
		}
		if loc, want := resp.Header.Get("Location"), "/jobs/"+strconv.Itoa(200+before+1); loc != want {
			t.Errorf("after the submission the page goes to %q; want the job's monitor %s", loc, want)
		}
	}
}

// A backup form with a mistake comes back with the reason and what was
// typed (400); nothing is queued. A client that is not enrolled has no
// form (404).
func TestBackupNowBadInput(t *testing.T) {
	f, lb := newLocalFixture(t)
	withClient(t, lb)
	ck, csrf := f.signIn("", adminToken)
	for _, c := range []struct {
		form       url.Values
		says, kept string
	}{
		{backupOf(), "choose a selection set of web1 or type the paths", ""},
		{backupOf("selection", "docs", "paths", "/srv/x"), "not both", "/srv/x</textarea>"},
		{backupOf("selection", "nothing"), `web1 has no selection set &#34;nothing&#34;`, ""},
		{backupOf("paths", "srv/relative"), "must be absolute", "srv/relative</textarea>"},
		{backupOf("paths", "/srv/../etc"), "must be clean", "/srv/../etc</textarea>"},
		{backupOf("paths", "/srv/a", "level", "weekly"), "level", "/srv/a</textarea>"},
		{backupOf("paths", "/srv/a", "compress", "max"), "compression", "/srv/a</textarea>"},
		{backupOf("paths", "/srv/a", "bwlimit_kbps", "fast"), "bandwidth limit", `value="fast"`},
		{backupOf("paths", "/srv/a", "bwlimit_kbps", "-1"), "bandwidth limit", `value="-1"`},
	} {
		c.form.Set("csrf", csrf)
		resp := f.do("POST", "/clients/web1/backup", ck, c.form)
		b := readBody(resp)
		if msg := formErrorOf(b); resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, c.says) {
			t.Errorf("%v: %d %q; want 400 saying %q", c.form, resp.StatusCode, msg, c.says)
			continue
		}
		if !strings.Contains(b, c.kept) {
			t.Errorf("%v: the form lost what was typed (%s)", c.form, c.kept)
		}
	}
	form := backupOf("paths", "/srv/a")
	form.Set("csrf", csrf)
	if resp := f.do("POST", "/clients/ghost/backup", ck, form); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a backup of client ghost: %d; want 404", resp.StatusCode)
	}
	if resp := f.do("GET", "/clients/ghost/backup", ck, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the backup form of client ghost: %d; want 404", resp.StatusCode)
	}
	if reqs := lb.requests(); len(reqs) != 0 {
		t.Errorf("refused forms queued %+v", reqs)
	}
}

// A policy's Run now queues the policy's own job at the level chosen, or
// at its next run's level; the page goes to the job's monitor. A level
// not known is refused, as is a policy not there.
func TestPolicyRunNow(t *testing.T) {
	f, lb := newLocalFixture(t) // Monday 4 May 2026, 12:00 UTC
	withClient(t, lb)
	lb.Local.WithQueue(func(req api.JobRequest) ([]int64, error) { return lb.Submit(context.Background(), req) })
	if _, err := lb.CreatePolicy(t.Context(), api.PolicyCreate{Name: "nightly", Client: "web1", Selection: "docs", FullCron: "0 1 * * 6",
		IncrCron: "0 1 * * *", Zone: "UTC", KeepGenerations: 2, Pool: "night", Verify: true}); err != nil {
		t.Fatal(err)
	}
	ck, csrf := f.signIn("", adminToken)
	if b := f.page(ck, "/policies/nightly"); !strings.Contains(b, `id="run-now"`) || !strings.Contains(b, "its schedule's (incr, as its next run)") {
		t.Errorf("the policy page has no Run now form offering its next run's level (incr):\n%s", regexp.MustCompile(`(?s)<form[^>]*id="run-now".*?</form>`).FindString(f.page(ck, "/policies/nightly")))
	}
	for i, c := range []struct{ level, want string }{{"scheduled", "incr"}, {"full", "full"}, {"diff", "diff"}} {
		resp := f.do("POST", "/policies/nightly/run", ck, url.Values{"csrf": {csrf}, "level": {c.level}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/"+strconv.Itoa(201+i) {
			t.Fatalf("run now at %s: %d to %q\n%s", c.level, resp.StatusCode, resp.Header.Get("Location"), errorMessage(readBody(resp)))
		}
		want := api.JobRequest{Kind: api.KindBackup, Client: "web1", Selection: "docs", Level: c.want, Verify: true, Policy: "nightly", Pool: "night"}
		if got := lb.requests()[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("run now at %s queued %+v; want %+v", c.level, got, want)
		}
	}
	if resp := f.do("POST", "/policies/nightly/run", ck, url.Values{"csrf": {csrf}, "level": {"weekly"}}); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(errorMessage(readBody(resp)), "weekly") {
		t.Errorf("run now at level weekly: %d; want 400 naming it", resp.StatusCode)
	}
	if resp := f.do("POST", "/policies/nope/run", ck, url.Values{"csrf": {csrf}, "level": {"full"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("run now of no policy: %d; want 404", resp.StatusCode)
	}
	if n := len(lb.requests()); n != 3 {
		t.Errorf("%d jobs queued; want the 3 runs alone", n)
	}
}

// Operators get neither form (403) nor the links to them; a start
// without the CSRF token is refused; nothing is queued.
func TestBackupNowOperatorAndCSRF(t *testing.T) {
	f, lb := newLocalFixture(t)
	withClient(t, lb)
	lb.Local.WithQueue(func(req api.JobRequest) ([]int64, error) { return lb.Submit(context.Background(), req) })
	if _, err := lb.CreatePolicy(t.Context(), api.PolicyCreate{Name: "nightly", Client: "web1", Selection: "docs", KeepDays: 7}); err != nil {
		t.Fatal(err)
	}
	checkRefusals(t, f, []changeCase{
		{"/clients/web1/backup", backupOf("selection", "docs")},
		{"/policies/nightly/run", url.Values{"level": {"full"}}},
	}, func() bool { return len(lb.requests()) == 0 })
	op, _ := f.signIn("olga", "operator password")
	if resp := f.do("GET", "/clients/web1/backup", op, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("operator GET /clients/web1/backup: %d; want 403", resp.StatusCode)
	}
	if b := f.page(op, "/clients"); strings.Contains(b, "backup-now") {
		t.Error("the operator's clients page links to the backup form")
	}
	if b := f.page(op, "/policies/nightly"); strings.Contains(b, "run-now") {
		t.Error("the operator's policy page has the Run now form")
	}
}
