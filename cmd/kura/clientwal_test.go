package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// What kura client list and show say of a client's WAL spools: a column
// per client, a table per cluster, and the warning (exit 3) for a spool
// whose oldest file waits longer than --wal-warn-after.
func TestClientWALSpoolOutput(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ok := api.Client{Name: "db2", Connected: true, WALSpools: []api.WALSpool{
		{Cluster: "main", LastArchived: "000000010000000000000004", LastArchivedAt: now.Add(-time.Minute), Reported: now}}}
	behind := api.Client{Name: "db1", WALSpools: []api.WALSpool{
		{Cluster: "main", Files: 3, Oldest: "000000010000000000000009", OldestSince: now.Add(-20 * time.Minute),
			LastError: "job 12 failed: no writable tape", LastErrorAt: now.Add(-time.Minute), Reported: now.Add(-time.Minute)},
		{Cluster: "reports", Files: 1, Oldest: "000000010000000000000002", OldestSince: now.Add(-2 * time.Minute), Reported: now}}}
	none := api.Client{Name: "files", Connected: true}

	for _, c := range []struct {
		cl   api.Client
		want string
	}{
		{none, "-"},
		{ok, "main ok"},
		{behind, "main BEHIND 3 waiting 20m0s, reports 1 waiting 2m0s"},
	} {
		if got := walColumn(c.cl, now, api.WALBehindAfter); got != c.want {
			t.Errorf("%s's WAL column: %q; want %q", c.cl.Name, got, c.want)
		}
	}

	if err := walBehindError([]api.Client{none, ok}, now, api.WALBehindAfter); err != nil {
		t.Errorf("no spool behind, yet: %v", err)
	}
	err := walBehindError([]api.Client{none, ok, behind}, now, api.WALBehindAfter)
	var ee *exitError
	if !errors.As(err, &ee) || ee.Code != exitWarnings {
		t.Fatalf("a spool behind: %v; want exit %d", err, exitWarnings)
	}
	for _, want := range []string{"client db1", "cluster main falls behind", "3 files wait", "000000010000000000000009", "20m0s (more than 15m0s)",
		"no writable tape", "its agent is not connected"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the warning %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "reports") {
		t.Errorf("the warning names a spool that is not behind: %q", err)
	}
	// A longer --wal-warn-after: not behind yet.
	if err := walBehindError([]api.Client{behind}, now, time.Hour); err != nil {
		t.Errorf("with --wal-warn-after 1h: %v", err)
	}
	// A revoked client raises no alarm.
	gone := behind
	gone.Revoked = now
	if err := walBehindError([]api.Client{gone}, now, api.WALBehindAfter); err != nil {
		t.Errorf("a revoked client: %v", err)
	}

	var b bytes.Buffer
	printClient(&b, behind, now, api.WALBehindAfter)
	for _, want := range []string{"Client:", "db1", "State:", "offline", "WAL archive (as the agent reported it):",
		"000000010000000000000009, 20m0s BEHIND", "no writable tape", "reports", "000000010000000000000002, 2m0s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("client show lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	printClient(&b, none, now, api.WALBehindAfter)
	if !strings.Contains(b.String(), "WAL archive: none") {
		t.Errorf("client show of a client without WAL:\n%s", b.String())
	}

	j := toClientJSONAt(behind, now, api.WALBehindAfter)
	if len(j.WALSpools) != 2 || !j.WALSpools[0].Behind || j.WALSpools[0].OldestSeconds != 1200 || j.WALSpools[1].Behind ||
		j.WALSpools[0].LastArchivedAt != nil || j.WALSpools[0].LastErrorAt == nil {
		t.Errorf("client show --json: %+v", j.WALSpools)
	}
}
