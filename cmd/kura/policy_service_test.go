package main

import (
	"path/filepath"
	"strings"
	"testing"
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
	if r := admin.expect(exitUsage, "jobs", "show", "999"); !strings.Contains(r.stderr, "no job 999 (see `kura jobs list`)") {
		t.Errorf("jobs show of a job that does not exist:\n%s", r)
	}
}
