package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/pki"
)

// volatile masks what differs between two runs of the same job: its ID,
// its times and its rates.
var volatile = regexp.MustCompile(`(Job|job|Elapsed|Average|Peak) [0-9][^ \t]*`)

func sameRun(s string) string {
	s = volatile.ReplaceAllString(s, "$1 X")
	return strings.Join(strings.Fields(s), " ") // the table's padding follows the widths masked
}

// sameRunJSON drops the keys that differ between two runs of one job (a
// tape's generation counts its erases).
func sameRunJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	var drop func(v any)
	drop = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"job_id", "elapsed_seconds", "avg_kbps", "peak_kbps", "generation"} {
				delete(x, k)
			}
			for _, e := range x {
				drop(e)
			}
		case []any:
			for _, e := range x {
				drop(e)
			}
		}
	}
	drop(v)
	return v
}

// kura verify, copy, prune, catalog backup, tape scan and tape erase print
// the same, and exit the same, when they run as jobs on a server as when
// they run locally on the same home; with the server they are jobs of its
// queue, in its jobs list.
func TestServerJobVerbsPrintAsLocally(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	id := itoa64(k.backup(src).SavesetID)
	k.ok("vtl", "create", "offsite")
	offsite := ""
	for bc := range k.tapes("--vtl", "offsite") {
		offsite = min(offsite, bc)
		if offsite == "" {
			offsite = bc
		}
	}

	// Each command, locally; between the two copies the offsite tape is
	// erased (which drops the copy), so that both write copy 1 to it.
	type run struct {
		args []string
		code int
	}
	runs := []run{
		{[]string{"verify", id}, 0},
		{[]string{"verify", id, "--json"}, 0},
		{[]string{"verify", id, "--level", "media"}, 0},
		{[]string{"copy", id, "--to-vtl", "offsite", "--verify"}, 0},
		{[]string{"verify", id, "--copy", "1", "--json"}, 0},
		{[]string{"tape", "scan", offsite}, 0},
		{[]string{"tape", "erase", offsite}, 1}, // the copy's tape holds an unexpired saveset's copy
		{[]string{"tape", "erase", offsite, "--force"}, 0},
		{[]string{"copy", id, "--to-vtl", "offsite", "--json"}, 0},
		{[]string{"tape", "erase", offsite, "--force", "--json"}, 0},
		{[]string{"verify", id, "--copy", "7"}, exitUsage},
		{[]string{"copy", "999", "--to-vtl", "offsite"}, exitUsage},
		{[]string{"prune", "--dry-run"}, 0},
		{[]string{"prune", "--json"}, 0},
	}
	local := make([]result, len(runs))
	for i, r := range runs {
		local[i] = k.expect(r.code, r.args...)
	}

	// Locally each of them is a job too, in the jobs list.
	var localJobs []struct {
		Kind  string `json:"kind"`
		State string `json:"state"`
	}
	k.json(0, &localJobs, "jobs", "list", "--json")
	ran := map[string]int{}
	for _, j := range localJobs {
		ran[j.Kind+" "+j.State]++
	}
	for want, n := range map[string]int{"verify succeeded": 4, "copy succeeded": 2, "scan succeeded": 1, "erase succeeded": 2, "erase failed": 1, "prune succeeded": 1} {
		if ran[want] != n {
			t.Errorf("locally, %d jobs %q; want %d (%v)", ran[want], want, n, ran)
		}
	}

	srv := k.start("server", "--listen", "127.0.0.1:0")
	url := srv.listenURL(t)
	admin := loginAdmin(t, k.home, url)
	tok, err := os.ReadFile(filepath.Join(k.home, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		got := admin.expect(r.code, r.args...)
		if strings.Contains(strings.Join(r.args, " "), "--json") {
			if w, g := sameRunJSON(t, local[i].stdout), sameRunJSON(t, got.stdout); !reflect.DeepEqual(w, g) {
				t.Errorf("kura %s through the server printed\n%s\nlocally\n%s", strings.Join(r.args, " "), got.stdout, local[i].stdout)
			}
		} else if sameRun(got.stdout) != sameRun(local[i].stdout) {
			t.Errorf("kura %s through the server printed\n%s\nlocally\n%s", strings.Join(r.args, " "), got.stdout, local[i].stdout)
		}
		if sameRun(got.stderr) != sameRun(local[i].stderr) {
			t.Errorf("kura %s through the server said on stderr\n%s\nlocally\n%s", strings.Join(r.args, " "), got.stderr, local[i].stderr)
		}
	}
	// Through the server they ran as jobs of its queue: submitted with a
	// request, not run by a console inside it.
	ptok, err := pki.ParseTokenKind(strings.TrimSpace(string(tok)), pki.KindAdmin)
	if err != nil {
		t.Fatal(err)
	}
	c, err := apiclient.New(url, pki.PinnedTLSConfig(ptok.CAFingerprint, nil), strings.TrimSpace(string(tok)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	jobs, err := c.Jobs(t.Context(), api.JobFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	queued := map[string]int{}
	for _, j := range jobs {
		if len(j.Request) > 0 {
			queued[j.Kind+" "+j.State]++
		}
	}
	for want, n := range map[string]int{"verify succeeded": 4, "copy succeeded": 2, "scan succeeded": 1, "erase succeeded": 2, "erase failed": 1, "prune succeeded": 1} {
		if queued[want] < n { // the server's own daily prune and catalog backup are queued jobs too
			t.Errorf("the server queued %d jobs %q; want %d (%v)", queued[want], want, n, queued)
		}
	}
}
