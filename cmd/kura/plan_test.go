package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The seed 004 examples through the command line, with binary units.
func TestPlanSeedExamples(t *testing.T) {
	for _, c := range []struct {
		args []string
		gens int
	}{
		{[]string{"plan", "--throughput", "25MiB/s", "--window", "8h", "--capacity", "3TiB", "--reserve", "30%", "--json"}, 6},
		{[]string{"plan", "--throughput", "65MiB/s", "--window", "8h", "--capacity", "2TiB", "--reserve", "30%", "--json"}, 1},
	} {
		r := newKura(t).ok(c.args...)
		var plan struct {
			Generations int      `json:"generations"`
			Reasons     []string `json:"reasons"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, r.stdout)
		}
		if plan.Generations != c.gens || len(plan.Reasons) == 0 {
			t.Errorf("%v: %d generations, reasons %q; want %d", c.args, plan.Generations, plan.Reasons, c.gens)
		}
	}
	r := newKura(t).expect(exitUsage, "plan", "--throughput", "25MiB/s")
	if !strings.Contains(r.stderr, "--capacity") {
		t.Errorf("plan without --capacity: %q", r.stderr)
	}
	r = newKura(t).expect(exitFailure, "plan", "--capacity", "1TiB")
	if !strings.Contains(r.stderr, "no finished backup") {
		t.Errorf("plan --throughput auto on an empty catalog: %q", r.stderr)
	}
}

// With --throughput auto (the default), --json prints the plan alone, as
// JSON: where the figures came from is its first reasons, and the text
// form prints the same sentences.
func TestPlanFromHistoryJSONIsJSONAlone(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	k.backup(src)
	var plan struct {
		Reasons []string `json:"reasons"`
	}
	k.json(0, &plan, "plan", "--capacity", "1TiB", "--daily", "auto", "--json")
	if len(plan.Reasons) < 2 || !strings.HasPrefix(plan.Reasons[0], "Throughput: ") || !strings.HasPrefix(plan.Reasons[1], "Daily full: ") {
		t.Fatalf("plan --json reasons: %q", plan.Reasons)
	}
	if r := k.ok("plan", "--capacity", "1TiB", "--daily", "auto"); r.stdout != strings.Join(plan.Reasons, "\n")+"\n" {
		t.Errorf("plan prints other sentences than its --json reasons:\n%s\n%q", r, plan.Reasons)
	}
}
