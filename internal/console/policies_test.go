package console

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// withClient enrolls client web1 with a selection docs in the fixture's
// catalog.
func withClient(t testing.TB, lb *localBackend) {
	t.Helper()
	if err := lb.env.Catalog.EnrollClient(catalog.Client{Name: "web1", CertSerial: "1", CertFingerprint: strings.Repeat("ab", 32)}); err != nil {
		t.Fatal(err)
	}
	if err := lb.env.Catalog.CreateSelection(catalog.Selection{Name: "docs", Client: "web1", Paths: []string{"/srv/docs"}}); err != nil {
		t.Fatal(err)
	}
}

// nightly is the form of a policy: fulls on Saturday, incrementals every
// night, two generations kept.
func nightly() url.Values {
	return url.Values{"name": {"nightly"}, "client": {"web1"}, "selection": {"docs"}, "full_cron": {"0 1 * * 6"},
		"incr_cron": {"0 1 * * *"}, "zone": {"UTC"}, "keep_generations": {"2"}, "keep_days": {"0"}}
}

// dayCell is the text of the calendar's day (2026-05-09).
func dayCell(page, date string) string {
	m := regexp.MustCompile(`(?s)data-date="` + date + `">(.*?)</td>`).FindStringSubmatch(page)
	if m == nil {
		return "(no such day)"
	}
	return regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], " ")
}

// A policy created in the form shows its next runs on a calendar of four
// weeks from today, and the retention preview of its savesets with its
// own rules and with others tried; the edit form changes it.
func TestPolicyPages(t *testing.T) {
	f, lb := newLocalFixture(t) // Monday 4 May 2026, 12:00 UTC
	withClient(t, lb)
	ck, csrf := f.signIn("", adminToken)
	if b := f.page(ck, "/new/policy"); !strings.Contains(b, `<option>web1</option>`) || !strings.Contains(b, `<option value="docs">`) {
		t.Errorf("the new-policy form does not offer client web1 and selection docs")
	}
	form := nightly()
	form.Set("csrf", csrf)
	resp := f.do("POST", "/policies", ck, form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/policies/nightly" {
		t.Fatalf("create: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), errorMessage(readBody(resp)))
	}
	if b := f.page(ck, "/policies"); !strings.Contains(b, `<tr data-policy="nightly">`) || !strings.Contains(b, "full 0 1 * * 6 · incr 0 1 * * * (UTC)") {
		t.Errorf("the list does not show nightly and its schedules")
	}

	b := f.page(ck, "/policies/nightly")
	for date, want := range map[string]string{"2026-05-04": "", "2026-05-05": "01:00 incr", "2026-05-09": "01:00 full", "2026-05-31": "01:00 incr"} {
		got := strings.Join(strings.Fields(strings.TrimPrefix(strings.Join(strings.Fields(dayCell(b, date)), " "), "")), " ")
		if !strings.HasSuffix(got, want) || (want == "" && strings.Contains(got, "01:00")) {
			t.Errorf("calendar %s shows %q; want %q", date, got, want)
		}
	}
	if c := dayCell(b, "2026-06-01"); c != "(no such day)" {
		t.Errorf("the calendar goes past four weeks: 2026-06-01 shows %q", c)
	}
	if !strings.Contains(b, `<time datetime="2026-05-05T01:00:00Z">Tue 5 May 01:00</time> incr`) {
		t.Error("the next runs list does not start with Tuesday's incremental")
	}
	if strings.Contains(b, "first 500 runs") {
		t.Error("the calendar of a nightly policy says it is cut short")
	}
	if !strings.Contains(b, "This policy has no saveset yet.") {
		t.Error("the preview of a policy without savesets does not say so")
	}

	var ids []int64
	for i := range 3 {
		s := &catalog.Saveset{Client: "web1", Selection: "docs", Policy: "nightly", Level: catalog.LevelFull, Status: catalog.StatusComplete,
			Created: f.clk.now().Add(-time.Duration(3-i) * 24 * time.Hour)}
		if err := lb.env.Catalog.CreateSaveset(s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	verdicts := func(path string) (string, map[int64]string) {
		b := f.page(ck, path)
		out := map[int64]string{}
		for _, m := range regexp.MustCompile(`<tr data-saveset="(\d+)" class="(keep|expire)">`).FindAllStringSubmatch(b, -1) {
			var id int64
			fmt.Sscan(m[1], &id)
			out[id] = m[2]
		}
		sum := regexp.MustCompile(`(?s)<p id="retention-summary">(.*?)</p>`).FindStringSubmatch(b)
		return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(sum[1], "")), " "), out
	}
	sum, got := verdicts("/policies/nightly")
	if want := map[int64]string{ids[0]: "expire", ids[1]: "keep", ids[2]: "keep"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("preview with the policy's rules: %v; want %v", got, want)
	}
	if !strings.Contains(sum, "keep 2 and expire 1") {
		t.Errorf("the preview's summary %q", sum)
	}
	sum, got = verdicts("/policies/nightly?keep_generations=3&keep_days=0")
	if want := map[int64]string{ids[0]: "keep", ids[1]: "keep", ids[2]: "keep"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("preview with 3 generations: %v; want %v", got, want)
	}
	if !strings.Contains(sum, "If the policy kept 3 generations") || !strings.Contains(sum, "keep 3 and expire 0") {
		t.Errorf("the what-if summary %q", sum)
	}
	if s, err := lb.env.Catalog.Saveset(ids[0]); err != nil || s.Expired {
		t.Errorf("the previews expired saveset %d (%v)", ids[0], err)
	}

	if b := f.page(ck, "/policies/nightly/edit"); !strings.Contains(b, `name="full_cron" id="pf-full" value="0 1 * * 6"`) {
		t.Error("the edit form does not hold the policy's full schedule")
	}
	edit := nightly()
	edit.Set("csrf", csrf)
	edit.Set("keep_generations", "3")
	edit.Set("full_cron", "0 2 * * 0")
	edit.Set("verify", "on")
	if resp := f.do("POST", "/policies/nightly", ck, edit); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", resp.StatusCode, regexp.MustCompile(`(?s)id="form-error">(.*?)</p>`).FindString(readBody(resp)))
	}
	p, err := lb.Policy(t.Context(), "nightly")
	if err != nil || p.KeepGenerations != 3 || p.FullCron != "0 2 * * 0" || !p.Verify || p.IncrCron != "0 1 * * *" {
		t.Errorf("after the edit: %+v, %v", p, err)
	}
	if c := dayCell(f.page(ck, "/policies/nightly"), "2026-05-10"); !strings.Contains(c, "02:00 full") {
		t.Errorf("after the edit Sunday 10 May shows %q; want the 02:00 full", c)
	}
}

// A form with a mistake comes back with the reason and what was typed;
// nothing is recorded. A bad preview is a 400, an unknown policy a 404.
func TestPolicyBadInput(t *testing.T) {
	f, lb := newLocalFixture(t)
	withClient(t, lb)
	ck, csrf := f.signIn("", adminToken)
	for _, c := range []struct {
		field, value string
		status       int
		says         string
	}{
		{"full_cron", "99 * * * *", 400, "99"},
		{"keep_generations", "two", 400, "not a whole number"},
		{"keep_generations", "0", 400, "keep something"},
		{"selection", "nothing", 0, "nothing"},
		{"client", "ghost", 404, "ghost"},
		{"name", "", 400, "name"},
		{"bwlimit_kbps", "fast", 400, "bandwidth"},
		{"library", "nowhere", 0, "nowhere"},
	} {
		form := nightly()
		form.Set("csrf", csrf)
		form.Set(c.field, c.value)
		resp := f.do("POST", "/policies", ck, form)
		b := readBody(resp)
		msg := regexp.MustCompile(`(?s)id="form-error">(.*?)</p>`).FindStringSubmatch(b)
		if resp.StatusCode < 400 || resp.StatusCode >= 500 || (c.status != 0 && resp.StatusCode != c.status) || msg == nil || !strings.Contains(msg[1], c.says) {
			t.Errorf("%s=%q: %d %v; want %d and the form saying %q", c.field, c.value, resp.StatusCode, msg, c.status, c.says)
			continue
		}
		if c.field != "client" && c.field != "library" && !strings.Contains(b, `value="`+c.value+`"`) {
			t.Errorf("%s=%q: the form lost what was typed", c.field, c.value)
		}
	}
	if ps, err := lb.Policies(t.Context()); err != nil || len(ps) != 0 {
		t.Errorf("refused forms recorded %v, %v", ps, err)
	}
	form := nightly()
	form.Set("csrf", csrf)
	if resp := f.do("POST", "/policies", ck, form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if resp := f.do("POST", "/policies", ck, form); resp.StatusCode != http.StatusConflict {
		t.Errorf("a second nightly: %d; want 409", resp.StatusCode)
	}
	if resp := f.do("GET", "/policies/nightly?keep_days=soon", ck, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a preview of keep_days=soon: %d; want 400", resp.StatusCode)
	}
	if resp := f.do("GET", "/policies/nightly?keep_days=-3", ck, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a preview of keep_days=-3: %d; want 400", resp.StatusCode)
	}
	if resp := f.do("GET", "/policies/nope", ck, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /policies/nope: %d; want 404", resp.StatusCode)
	}
	edit := nightly()
	edit.Set("csrf", csrf)
	edit.Set("incr_cron", "every night")
	if resp := f.do("POST", "/policies/nightly", ck, edit); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an edit with a bad schedule: %d; want 400", resp.StatusCode)
	}
	if p, err := lb.Policy(t.Context(), "nightly"); err != nil || p.IncrCron != "0 1 * * *" {
		t.Errorf("a refused edit changed the policy: %+v, %v", p, err)
	}
}

// Operators see the policies, their runs and the preview; they get no
// form and change nothing (403); a change without the CSRF token is
// refused.
func TestPolicyOperatorAndCSRF(t *testing.T) {
	f, lb := newLocalFixture(t)
	withClient(t, lb)
	if _, err := lb.CreatePolicy(t.Context(), api.PolicyCreate{Name: "nightly", Client: "web1", Selection: "docs", IncrCron: "0 1 * * *", KeepDays: 7}); err != nil {
		t.Fatal(err)
	}
	checkRefusals(t, f, []changeCase{{"/policies", nightly()}, {"/policies/nightly", url.Values{"keep_days": {"1"}, "selection": {"docs"}}}},
		func() bool {
			ps, err := lb.Policies(t.Context())
			return err == nil && len(ps) == 1 && ps[0].KeepDays == 7
		})
	op, _ := f.signIn("olga", "operator password")
	if b := f.page(op, "/policies/nightly"); !strings.Contains(b, `id="calendar"`) || strings.Contains(b, "edit-policy") {
		t.Error("the operator's policy page: want the calendar and no edit link")
	}
	for _, p := range []string{"/new/policy", "/policies/nightly/edit"} {
		if resp := f.do("GET", p, op, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("operator GET %s: %d; want 403", p, resp.StatusCode)
		}
	}
}
