package console

import (
	"encoding/xml"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stored report of the repository (docs/benchmarks): the seed suite on
// test3, three runs per figure.
var storedReport = filepath.Join("..", "..", "docs", "benchmarks", "seed-0.1-test3-link", "results.json")

// The Benchmarks page shows the newest report folder under BenchDir: its
// run, each chart of the report as an SVG served by the console, and the
// chart's figures (medians and the runs' range) in a table; with no report
// it says how to make one. A chart that is not one of the report's is 404.
func TestBenchmarksPage(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	f.c.opts.BenchDir = dir
	ck, _ := f.signIn("", adminToken)

	if b := body(t, f.do("GET", "/benchmarks", ck, nil)); !strings.Contains(b, `id="no-bench"`) || !strings.Contains(b, "kura bench run --out "+dir) {
		t.Fatalf("with no report the page should say how to make one:\n%s", b)
	}

	b, err := os.ReadFile(storedReport)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "older")
	for _, d := range []string{old, filepath.Join(dir, "newest")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(old, "results.json"), past, past); err != nil {
		t.Fatal(err)
	}
	resp := f.do("GET", "/benchmarks", ck, nil)
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Run <strong>newest</strong>") {
		t.Fatalf("the page does not show the newest report: %d\n%s", resp.StatusCode, page)
	}
	// The report's Table 5-1/5-5 chart: its image, its series and the
	// test3 rows with a median and a range.
	for _, want := range []string{`<img src="/benchmarks/chart-table-5-1-5-5.svg"`, "<th class=\"num\">local</th>",
		"<th>test3 · 256-8193 KiB</th>", `<span class="hint">(`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	resp = f.do("GET", "/benchmarks/chart-table-5-1-5-5.svg", ck, nil)
	svg := body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("the chart: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil || !strings.Contains(svg, "through an agent") {
		t.Errorf("the chart is not the report's SVG (%v):\n%.300s", err, svg)
	}
	if resp := f.do("GET", "/benchmarks/nothing.svg", ck, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a chart that is not: %d; want 404", resp.StatusCode)
	}
}
