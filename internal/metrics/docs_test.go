package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

// The example dashboard and alert rules of docs/monitoring, which
// operations.md links to.
var monitoringDir = filepath.Join("..", "..", "docs", "monitoring")

// families are the metric families the collector exports, by name, with
// their labels; a histogram's series are its name with _bucket (and le),
// _sum and _count.
func families(t *testing.T) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 64)
	New(Source{}).Describe(ch)
	close(ch)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range ch {
		n, l := name.FindStringSubmatch(d.String()), labels.FindStringSubmatch(d.String())
		if n == nil || l == nil {
			t.Fatalf("cannot read the name and labels of %s", d)
		}
		var ls []string
		if l[1] != "" {
			ls = strings.Split(l[1], ",")
		}
		out[n[1]] = ls
		if d == descDuration {
			delete(out, n[1])
			out[n[1]+"_bucket"] = append(slices.Clone(ls), "le")
			out[n[1]+"_sum"], out[n[1]+"_count"] = ls, ls
		}
	}
	if len(out) < 10 {
		t.Fatalf("the collector describes %d families; the parse of its descriptors is wrong", len(out))
	}
	return out
}

var (
	metricName = regexp.MustCompile(`\bkura_[a-z0-9_]+`)
	// A selector's label matchers: kura_x{a="…", b=~"…"}.
	selector = regexp.MustCompile(`\b(kura_[a-z0-9_]+)\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	grouping = regexp.MustCompile(`\b(?:by|on|without|ignoring)\s*\(([^)]*)\)`)
)

// checkExpr reports the metric names and labels of a PromQL expression
// that the collector does not export: a name must be a family, a label in
// a selector one of that family's, and a label to group or match on one
// of some family's in the expression.
func checkExpr(where, expr string, fams map[string][]string) (used, problems []string) {
	errorf := func(format string, a ...any) { problems = append(problems, where+": "+fmt.Sprintf(format, a...)) }
	if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") {
		errorf("unbalanced brackets in %q", expr)
	}
	names := metricName.FindAllString(expr, -1)
	if len(names) == 0 {
		errorf("%q uses no Kura metric", expr)
	}
	var all []string
	for _, n := range names {
		ls, ok := fams[n]
		if !ok {
			errorf("%s is not a metric Kura exports", n)
			continue
		}
		used = append(used, n)
		all = append(all, ls...)
	}
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		for _, l := range matcher.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(fams[m[1]], l[1]) {
				errorf("%s has no label %q (it has %q)", m[1], l[1], fams[m[1]])
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(all, l) {
				errorf("groups by %q, which no metric of %q has", l, expr)
			}
		}
	}
	return used, problems
}

// TestMonitoringDocs: every metric name and label the example alert rules
// and Grafana dashboard use is one the collector exports, so the docs
// cannot drift from the code; the rules file is Prometheus's rule-group
// format with the alerts operations.md promises, and the dashboard has the
// panels it promises, each with a query.
func TestMonitoringDocs(t *testing.T) {
	fams := families(t)

	b, err := os.ReadFile(filepath.Join(monitoringDir, "kura-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("kura-alerts.yml: %v", err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Annotations["summary"] == "" {
				t.Errorf("kura-alerts.yml: a rule without a name, an expression or a summary: %+v", r)
			}
			alerts = append(alerts, r.Alert)
			_, problems := checkExpr("alert "+r.Alert, r.Expr, fams)
			for _, p := range problems {
				t.Error("kura-alerts.yml: " + p)
			}
		}
	}
	for _, want := range []string{"KuraNoRecentBackup", "KuraJobsFailed", "KuraNoScratchTapes", "KuraAgentDisconnected"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("kura-alerts.yml has no alert %s (it has %q)", want, alerts)
		}
	}

	b, err = os.ReadFile(filepath.Join(monitoringDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("grafana-dashboard.json: panel %q has no title or no query", p.Title)
		}
		for _, q := range p.Targets {
			names, problems := checkExpr("panel "+p.Title, q.Expr, fams)
			for _, p := range problems {
				t.Error("grafana-dashboard.json: " + p)
			}
			for _, n := range names {
				used[n] = true
			}
		}
	}
	// The panels the issue asks for, by the families they read.
	for what, fam := range map[string]string{"jobs by result": "kura_jobs_total", "throughput": "kura_job_source_bytes_total",
		"last success age per client": "kura_client_last_success_timestamp_seconds", "drives busy": "kura_drives",
		"scratch tapes": "kura_tapes", "queue depth": "kura_job_queue_length", "agents connected": "kura_agents_connected"} {
		if !used[fam] {
			t.Errorf("the dashboard has no panel of %s (%s)", what, fam)
		}
	}
}

// The check itself catches drift: a renamed metric, a label it does not
// have, a grouping by a label no metric in the expression has.
func TestMonitoringCheckCatchesDrift(t *testing.T) {
	fams := families(t)
	for _, expr := range []string{
		`kura_job_total`,
		`kura_jobs_total{status="failed"}`,
		`sum by (client) (kura_jobs_total)`,
		`sum(kura_drives`,
	} {
		if _, problems := checkExpr("test", expr, fams); len(problems) == 0 {
			t.Errorf("%q passes the check", expr)
		}
	}
	if _, problems := checkExpr("test", `sum by (library) (kura_tapes{pool="scratch", state=~"blank|appendable"})`, fams); len(problems) != 0 {
		t.Errorf("a good expression fails the check: %q", problems)
	}
}
