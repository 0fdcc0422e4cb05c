package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The job, policy, plan and catalog-list verbs print the same and exit the
// same through a server as locally on the server's home: listings, --json,
// and the errors (a name that names nothing exits 2, bad input exits 2, a
// conflict exits 1); a change made through the server is seen locally.
func TestPolicyJobPlanVerbsSameThroughServerAndLocally(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)

	// Jobs of this machine, made on the server's home: 3 backups, the
	// second of them failing (its folder is gone), and a verify.
	src := filepath.Join(local.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	first := local.backup(src)
	local.expect(exitFailure, "backup", filepath.Join(local.dir, "gone"))
	local.backup(src)
	local.ok("verify", itoa64(first.SavesetID))

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"jobs", "list"}, 0},
		{[]string{"jobs", "list", "--json"}, 0},
		{[]string{"jobs", "list", "--kind", "backup", "--limit", "2", "--json"}, 0},
		{[]string{"jobs", "list", "--state", "failed"}, 0},
		{[]string{"jobs", "list", "--kind", "verify", "--json"}, 0},
		{[]string{"jobs", "list", "--kind", "restore", "--json"}, 0},
		{[]string{"jobs", "show", itoa64(first.JobID)}, 0},
		{[]string{"jobs", "show", itoa64(first.JobID), "--json"}, 0},
		{[]string{"jobs", "show", "999"}, exitUsage},
		{[]string{"jobs", "list", "--state", "runing"}, exitUsage},
		{[]string{"jobs", "list", "--kind", "Backup!"}, exitUsage},
		{[]string{"jobs", "list", "--client", "web1", "--json"}, 0}, // a server's home holds clients' jobs
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	// The filters select before the limit counts: the newest 2 backups
	// are backups, though a verify ran after them.
	var jobs []struct {
		Kind  string `json:"kind"`
		State string `json:"state"`
	}
	admin.json(0, &jobs, "jobs", "list", "--kind", "backup", "--limit", "2", "--json")
	if len(jobs) != 2 || jobs[0].Kind != "backup" || jobs[1].Kind != "backup" {
		t.Errorf("jobs list --kind backup --limit 2: %+v", jobs)
	}
	admin.json(0, &jobs, "jobs", "list", "--state", "failed", "--json")
	if len(jobs) != 1 || jobs[0].State != "failed" {
		t.Errorf("jobs list --state failed: %+v", jobs)
	}
	if got := local.completions("jobs", "list", "--state", "f"); !slices.Equal(got, []string{"failed"}) {
		t.Errorf("jobs list --state f<TAB>: %v", got)
	}
	if r := admin.expect(exitUsage, "jobs", "show", "999"); !strings.Contains(r.stderr, "no job 999 (see `kura jobs list`)") {
		t.Errorf("jobs show of a job that does not exist:\n%s", r)
	}

	// Policies: one of this machine, made on the server's home.
	local.ok("selection", "create", "docs", src)
	local.ok("policy", "create", "daily", "--selection", "docs", "--full", "0 1 * * 0", "--incr", "0 1 * * 1-6",
		"--keep-generations", "2", "--zone", "Asia/Tokyo", "--bwlimit", "10MB/s")
	local.ok("policy", "create", "byhand", "--selection", "docs", "--keep-days", "3")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"policy", "list"}, 0},
		{[]string{"policy", "list", "--json"}, 0},
		{[]string{"policy", "show", "daily"}, 0},
		{[]string{"policy", "show", "daily", "--json"}, 0},
		{[]string{"policy", "next", "daily"}, 0},
		{[]string{"policy", "next", "daily", "--count", "8", "--json"}, 0},
		{[]string{"policy", "next", "byhand"}, 0},
		{[]string{"policy", "show", "nope"}, exitUsage},
		{[]string{"policy", "next", "nope"}, exitUsage},
		{[]string{"policy", "rm", "nope"}, exitUsage},
		{[]string{"policy", "edit", "nope", "--keep-days", "1"}, exitUsage},
		{[]string{"policy", "run", "nope"}, exitUsage},
		{[]string{"policy", "next", "daily", "--count", "0"}, exitUsage},
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	if r := admin.expect(exitUsage, "policy", "show", "nope"); !strings.Contains(r.stderr, "no policy named \"nope\" (see `kura policy list`)") {
		t.Errorf("policy show of a policy that does not exist:\n%s", r)
	}
	// The next runs are the schedules' slots in the policy's zone, a
	// full on Sundays and incrementals on the other days, earliest first.
	var runs []struct {
		Time  time.Time `json:"time"`
		Level string    `json:"level"`
	}
	admin.json(0, &runs, "policy", "next", "daily", "--count", "8", "--json")
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		at := r.Time.In(tokyo)
		want := "incr"
		if at.Weekday() == time.Sunday {
			want = "full"
		}
		if at.Hour() != 1 || at.Minute() != 0 || r.Level != want || i > 0 && at.Sub(runs[i-1].Time) != 24*time.Hour {
			t.Errorf("next run %d: %s %s", i, at, r.Level)
		}
	}
	if len(runs) != 8 {
		t.Errorf("policy next --count 8: %d runs", len(runs))
	}
	// A name taken is a conflict (exit 1); a policy through a server backs
	// up a client, so one without is bad input (exit 2), and nothing changes.
	if r := local.expect(exitFailure, "policy", "create", "daily", "--selection", "docs", "--keep-days", "3"); !strings.Contains(r.stderr, "exists already") {
		t.Errorf("policy create of a name taken:\n%s", r)
	}
	if r := admin.expect(exitUsage, "policy", "create", "p2", "--selection", "docs", "--keep-days", "3"); !strings.Contains(r.stderr, "--client") {
		t.Errorf("policy create through a server without --client:\n%s", r)
	}
	if r := admin.expect(exitUsage, "--client", "c9", "policy", "create", "p2", "--selection", "docs", "--keep-days", "3"); !strings.Contains(r.stderr, `no client named "c9"`) {
		t.Errorf("policy create through a server for a client never enrolled:\n%s", r)
	}
	if r := admin.expect(exitUsage, "policy", "edit", "daily", "--keep-days", "9"); !strings.Contains(r.stderr, "--client") {
		t.Errorf("policy edit through a server of a policy without a client:\n%s", r)
	}
	if r := admin.expect(exitUsage, "policy", "run", "byhand"); !strings.Contains(r.stderr, "client") {
		t.Errorf("policy run through a server of a policy without a client:\n%s", r)
	}
	// A change made locally is seen through the server, and the reverse.
	local.ok("policy", "edit", "daily", "--keep-days", "9", "--bwlimit", "0")
	if r := admin.ok("policy", "show", "daily"); !strings.Contains(r.stdout, "2 gen + 9 days") || strings.Contains(r.stdout, "bwlimit") {
		t.Errorf("a policy changed locally, shown through the server:\n%s", r)
	}
	if r := admin.ok("policy", "rm", "byhand"); !strings.Contains(r.stdout, "Policy byhand removed") {
		t.Errorf("policy rm through the server:\n%s", r)
	}
	if r := local.ok("policy", "list"); strings.Contains(r.stdout, "byhand") {
		t.Errorf("a policy removed through the server is still listed locally:\n%s", r)
	}

	// The catalog backups on tape: the server made one after its first
	// daily prune; through the server, its library folders are searched.
	libDir := filepath.Join(local.home, "vtl", "default")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"catalog", "list"}, 0},
		{[]string{"catalog", "list", "--json"}, 0},
		{[]string{"catalog", "list", "--vtl-dir", libDir, "--vtl-dir", libDir}, 0},
		{[]string{"catalog", "list", "--vtl-dir", filepath.Join(local.dir, "nothing")}, 0},
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	var copies []struct {
		Barcode string `json:"barcode"`
		Label   *struct {
			Savesets int `json:"savesets"`
		} `json:"label"`
	}
	admin.json(0, &copies, "catalog", "list", "--json", "--vtl-dir", libDir)
	if len(copies) == 0 || copies[0].Label == nil || copies[0].Barcode == "" {
		t.Errorf("catalog list --json through the server: %+v", copies)
	}

	// A plan from the history of the server's catalog: the same through
	// the server as on its home, and --json is JSON alone, with where the
	// auto figures came from as its first reasons.
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"plan", "--capacity", "3TiB", "--daily", "auto"}, 0},
		{[]string{"plan", "--capacity", "3TiB", "--daily", "auto", "--full-every", "7", "--change-rate", "3%", "--json"}, 0},
		{[]string{"plan", "--throughput", "25MiB/s", "--capacity", "3TiB", "--json"}, 0},
		{[]string{"plan", "--throughput", "0", "--capacity", "3TiB"}, exitUsage},
		{[]string{"plan", "--capacity", "3TiB", "--window", "0s"}, exitUsage},
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	var plan struct {
		Generations int      `json:"generations"`
		DailyBytes  int64    `json:"daily_bytes"`
		Reasons     []string `json:"reasons"`
	}
	admin.json(0, &plan, "plan", "--capacity", "3TiB", "--daily", "auto", "--json")
	if len(plan.Reasons) < 3 || !strings.HasPrefix(plan.Reasons[0], "Throughput: ") || !strings.Contains(plan.Reasons[0], "median of 2 backup jobs") ||
		!strings.HasPrefix(plan.Reasons[1], "Daily full: ") || plan.DailyBytes <= 0 || plan.Generations <= 0 {
		t.Errorf("plan --json from the history through the server: %+v", plan)
	}

	// The retention preview (last: its policy runs are backup jobs the
	// plan above would count): the same both ways, and it judges the
	// policy's savesets with the rules asked for.
	if r := admin.ok("policy", "preview", "daily"); !strings.Contains(r.stdout, "Policy daily has no savesets yet.") {
		t.Errorf("policy preview of a policy without savesets:\n%s", r)
	}
	local.ok("policy", "run", "daily", "--json")
	local.ok("policy", "run", "daily", "--json")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"policy", "preview", "daily"}, 0},
		{[]string{"policy", "preview", "daily", "--json"}, 0},
		{[]string{"policy", "preview", "daily", "--keep-generations", "1", "--keep-days", "0", "--json"}, 0},
		{[]string{"policy", "preview", "nope"}, exitUsage},
		{[]string{"policy", "preview", "daily", "--keep-generations", "-1"}, exitUsage},
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	// One generation kept instead of 2 (and no days): the older full expires.
	var ds []struct {
		Keep   bool   `json:"keep"`
		Policy string `json:"policy"`
	}
	admin.json(0, &ds, "policy", "preview", "daily", "--keep-generations", "1", "--keep-days", "0", "--json")
	if len(ds) != 2 || ds[0].Keep == ds[1].Keep || ds[0].Policy != "daily" {
		t.Errorf("policy preview daily --keep-generations 1 through the server: %+v", ds)
	}
}
