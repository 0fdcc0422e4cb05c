package console

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// field is the text of the element with the id in a page (an element
// that holds no element of its own kind).
func field(page, id string) string {
	m := regexp.MustCompile(`<(\w+)[^>]* id="` + id + `"[^>]*>`).FindStringSubmatchIndex(page)
	if m == nil {
		return "(none)"
	}
	tag, rest := page[m[2]:m[3]], page[m[1]:]
	end := strings.Index(rest, "</"+tag+">")
	if end < 0 {
		return "(unclosed)"
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(rest[:end], "")), " ")
}

// The planner opens on seed 004's RAID-5 server and answers as the seed
// does (6 generations of 492 GiB); other inputs give their plan; the
// measured throughput of recent backups is offered, and planning with it
// uses it.
func TestPlannerPage(t *testing.T) {
	f, lb := newLocalFixture(t)
	ck, _ := f.signIn("", adminToken)
	b := f.page(ck, "/planner")
	if g, d := field(b, "generations"), field(b, "daily-bytes"); g != "6" || d != "492.2 GiB" {
		t.Errorf("seed 004's plan: %s generations of %s; want 6 of 492.2 GiB", g, d)
	}
	if !strings.Contains(field(b, "measured"), "No backup has finished yet") {
		t.Errorf("without history the page offers %q", field(b, "measured"))
	}
	b = f.page(ck, "/planner?throughput=100MiB%2Fs&window=8h&capacity=10TiB&reserve=30&daily=1TiB&change=5&full_every=7&diff=on")
	if g, c := field(b, "generations"), field(b, "cycle-bytes"); g != "4" || c != "2.05 TiB" {
		t.Errorf("a weekly full with differentials: %s generations of %s; want 4 of 2.05 TiB", g, c)
	}
	if !strings.Contains(b, "daily differentials at 5.0 % change") {
		t.Error("the plan's reasons are not shown")
	}

	// Three finished backups at 20, 30 and 40 MB/s: the median is 30 MB/s.
	for i, rate := range []float64{20e6, 40e6, 30e6} {
		lb.jobs = append(lb.jobs, api.Job{ID: int64(i + 1), Kind: api.KindBackup, State: "succeeded", Client: "web1",
			AvgRate: rate, SourceBytes: 1 << 30, Finished: f.clk.now().Add(-time.Duration(i+1) * time.Hour)})
	}
	b = f.page(ck, "/planner")
	if m := field(b, "measured"); !strings.Contains(m, "28.6 MiB/s") || !strings.Contains(m, "3 jobs") {
		t.Errorf("the measured throughput offered: %q; want the median 30 MB/s (28.6 MiB/s) of 3 jobs", m)
	}
	use := regexp.MustCompile(`id="use-measured" href="([^"]+)"`).FindStringSubmatch(b)
	if use == nil {
		t.Fatal("no link to plan with the measured throughput")
	}
	b = f.page(ck, strings.ReplaceAll(use[1], "&amp;", "&"))
	if !strings.Contains(b, `id="pl-throughput" value="30.00MB/s"`) || !strings.Contains(b, "28.6 MiB/s for 8h") {
		t.Errorf("planning with the measured throughput: the form or the plan does not use 30 MB/s")
	}
}

// Bad inputs come back on the form, with what was typed and why (400).
func TestPlannerBadInput(t *testing.T) {
	f, _ := newLocalFixture(t)
	ck, _ := f.signIn("", adminToken)
	for q, says := range map[string]string{
		"throughput=fast&window=8h&capacity=3TiB":                 "throughput",
		"throughput=25MiB/s&window=all+night&capacity=3TiB":       "window",
		"throughput=25MiB/s&window=8h&capacity=lots":              "capacity",
		"throughput=25MiB/s&window=8h&capacity=3TiB&reserve=100":  "reserve",
		"throughput=25MiB/s&window=8h&capacity=3TiB&change=120":   "change rate",
		"throughput=25MiB/s&window=8h&capacity=3TiB&full_every=0": "full every",
	} {
		resp := f.do("GET", "/planner?"+q, ck, nil)
		b := readBody(resp)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(field(b, "form-error"), says) {
			t.Errorf("%s: %d %q; want 400 about %s", q, resp.StatusCode, field(b, "form-error"), says)
		}
		if !strings.Contains(b, `id="pl-window" value="`) || strings.Contains(b, `id="answer"`) {
			t.Errorf("%s: want the form back and no plan", q)
		}
	}
}
