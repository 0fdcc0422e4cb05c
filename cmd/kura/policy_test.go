package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Policies are checked when they are made: a bad schedule, a missing
// selection or retention that keeps nothing is a usage error naming the
// problem, and nothing is created.
func TestPolicyCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	k.ok("selection", "create", "docs", src)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--selection", "docs", "--incr", "61 1 * * *", "--keep-generations", "2"}, "minute 61 out of range"},
		{[]string{"--selection", "docs", "--incr", "0 1 * *", "--keep-generations", "2"}, "cron"},
		{[]string{"--selection", "nope", "--incr", "0 1 * * *", "--keep-generations", "2"}, `no selection set "nope"`},
		{[]string{"--selection", "docs", "--incr", "0 1 * * *"}, "must keep something"},
		{[]string{"--selection", "docs", "--incr", "0 1 * * *", "--keep-days", "-3"}, `"-3" for "--keep-days"`},
		{[]string{"--selection", "docs", "--incr", "0 1 * * *", "--keep-days", "3", "--zone", "Mars/Olympus"}, "Mars/Olympus"},
		{[]string{"--selection", "docs", "--keep-days", "3", "--vtl", "nowhere"}, `no library named "nowhere"`},
	} {
		r := k.run(append([]string{"policy", "create", "p"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("want exit 2 with %q:\n%s", c.want, r)
		}
	}
	if r := k.ok("policy", "list"); strings.Contains(r.stdout, "\np ") {
		t.Fatalf("a refused policy was created:\n%s", r)
	}
}

// A policy of this machine run by hand, then pruned: savesets carry the
// policy, --why explains each verdict, and prune expires by the rules.
func TestPolicyRunPruneAndWhy(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	k.ok("selection", "create", "docs", src)
	r := k.ok("policy", "create", "daily", "--selection", "docs", "--full", "0 1 * * 0", "--incr", "0 1 * * 1-6",
		"--keep-generations", "1", "--zone", "Asia/Tokyo")
	if !strings.Contains(r.stdout, "Next run") || !strings.Contains(r.stdout, "1 gen") {
		t.Fatalf("policy create:\n%s", r)
	}
	var f1, f2 figures
	k.json(0, &f1, "policy", "run", "daily", "--json")
	writeTree(t, src, map[string]string{"c.txt": "c\n"})
	k.json(0, &f2, "policy", "run", "daily", "--level", "full", "--json")
	why := k.ok("savesets", "--why")
	if !strings.Contains(why.stdout, "generation") || !strings.Contains(why.stdout, "expire") {
		t.Fatalf("savesets --why:\n%s", why)
	}
	// The preview says the same for the policy's savesets, and tries
	// other rules without changing anything: with 2 generations kept,
	// both fulls stay.
	type verdict struct {
		ID   int64  `json:"id"`
		Keep bool   `json:"keep"`
		Rule string `json:"rule"`
	}
	preview := func(args ...string) map[int64]verdict {
		var ds []verdict
		k.json(0, &ds, append([]string{"policy", "preview", "daily", "--json"}, args...)...)
		m := map[int64]verdict{}
		for _, d := range ds {
			m[d.ID] = d
		}
		if len(m) != 2 {
			t.Fatalf("policy preview daily %v: %+v", args, ds)
		}
		return m
	}
	if m := preview(); !m[f2.SavesetID].Keep || m[f1.SavesetID].Keep || m[f1.SavesetID].Rule != "expired-generation" {
		t.Fatalf("policy preview daily --json: %+v", m)
	}
	if m := preview("--keep-generations", "2"); !m[f1.SavesetID].Keep || !m[f2.SavesetID].Keep {
		t.Fatalf("policy preview daily --keep-generations 2 --json: %+v", m)
	}
	if r := k.ok("policy", "preview", "daily"); !strings.Contains(r.stdout, "VERDICT") || !strings.Contains(r.stdout, "expire") {
		t.Fatalf("policy preview daily:\n%s", r)
	}
	if r := k.expect(exitUsage, "policy", "preview", "daily", "--keep-days", "-1"); !strings.Contains(r.stderr, "--keep-days") {
		t.Fatalf("policy preview with a negative --keep-days:\n%s", r)
	}
	if r := k.ok("policy", "show", "daily"); !strings.Contains(r.stdout, "1 gen") {
		t.Fatalf("a preview changed the policy:\n%s", r)
	}
	dry := k.ok("prune", "--dry-run")
	if !strings.Contains(dry.stdout, "Would expire saveset "+itoa64(f1.SavesetID)) {
		t.Fatalf("prune --dry-run:\n%s", dry)
	}
	k.ok("prune")
	var sets []struct {
		ID           int64  `json:"id"`
		Expired      bool   `json:"expired"`
		Policy       string `json:"policy"`
		ExpireReason string `json:"expire_reason"`
	}
	k.json(0, &sets, "savesets", "--json")
	for _, s := range sets {
		if s.Policy != "daily" {
			t.Errorf("saveset %d policy %q", s.ID, s.Policy)
		}
		if (s.ID == f1.SavesetID) != s.Expired {
			t.Errorf("saveset %d expired=%v (reason %q)", s.ID, s.Expired, s.ExpireReason)
		}
	}
	// The kept generation still restores.
	out := filepath.Join(k.dir, "out")
	k.ok("restore", itoa64(f2.SavesetID), "--to", out)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(out, src)))
}

// policy run --level scheduled runs at the level of the policy's next
// run: incremental for a policy whose only schedule is incremental (after
// a full by hand, so nothing upgrades it), full for one without schedules.
func TestPolicyRunAtItsScheduledLevel(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	k.ok("selection", "create", "docs", src)
	k.ok("policy", "create", "nightly", "--selection", "docs", "--incr", "0 1 * * *", "--keep-days", "7")
	k.ok("policy", "create", "byhand", "--selection", "docs", "--keep-days", "7")
	var full, incr, byhand figures
	k.json(0, &full, "policy", "run", "nightly", "--level", "full", "--json")
	writeTree(t, src, map[string]string{"b.txt": "b\n"})
	k.json(0, &incr, "policy", "run", "nightly", "--level", "scheduled", "--json")
	k.json(0, &byhand, "policy", "run", "byhand", "--level", "scheduled", "--json")
	if full.Level != "full" || incr.Level != "incr" || byhand.Level != "full" {
		t.Errorf("levels %s, %s, %s; want full, then incr at nightly's scheduled level, and full for byhand", full.Level, incr.Level, byhand.Level)
	}
	if r := k.run("policy", "run", "nightly", "--level", "weekly"); r.code != exitUsage || !strings.Contains(r.stderr, "scheduled") {
		t.Errorf("--level weekly: want exit 2 naming the levels:\n%s", r)
	}
}
