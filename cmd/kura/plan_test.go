package main

import (
	"encoding/json"
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
