package metrics

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// brokenLibraries is a service whose libraries cannot be read.
type brokenLibraries struct{ api.Service }

var errOffline = errors.New("the library's folder is gone")

func (brokenLibraries) Drives(ctx context.Context, lib string) ([]api.Drive, error) {
	return nil, errOffline
}
func (brokenLibraries) Tapes(ctx context.Context, q api.TapeQuery) ([]api.Tape, error) {
	return nil, errOffline
}

// A part that cannot be read is left out and counted in
// kura_scrape_errors, and the server hears why; the rest is served, and
// every family passes the client library's lint.
func TestScrapeWithABrokenPart(t *testing.T) {
	dir := t.TempDir()
	cat, err := catalog.Open(filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	if err := cat.CreateJob(&catalog.Job{Kind: catalog.KindBackup, State: catalog.StateSucceeded, Client: "",
		Started: t0, Finished: t0.Add(time.Minute), Files: 7}); err != nil {
		t.Fatal(err)
	}
	var heard []string
	c := New(Source{Catalog: cat, Service: brokenLibraries{}, Version: "test",
		CatalogFiles: []string{filepath.Join(dir, "catalog.db")},
		OnError:      func(part string, err error) { heard = append(heard, part+": "+err.Error()) }})

	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP kura_scrape_errors Parts of this scrape that could not be read (1 each); the server log says why.
# TYPE kura_scrape_errors gauge
kura_scrape_errors{part="libraries"} 1
# HELP kura_client_last_success_timestamp_seconds When the client's newest backup that ended succeeded or with warnings finished (Unix time). A client that never had one has no series.
# TYPE kura_client_last_success_timestamp_seconds gauge
kura_client_last_success_timestamp_seconds{client="(local)"} 1.76732286e+09
# HELP kura_job_files_total Files the ended jobs of each kind handled.
# TYPE kura_job_files_total counter
kura_job_files_total{kind="backup"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kura_scrape_errors",
		"kura_client_last_success_timestamp_seconds", "kura_job_files_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "kura_drives", "kura_tapes"); n != 0 {
		t.Errorf("%d drive and tape series from libraries that could not be read", n)
	}
	if len(heard) == 0 || !strings.Contains(heard[0], "libraries: the library's folder is gone") {
		t.Errorf("the server heard %q", heard)
	}
}

// The agents' WAL spools, as last reported: files waiting, the oldest
// one's age on the scrape's clock (it grows while the agent is silent),
// the last archived file's time, whether sending fails; a revoked
// client's spools are left out.
func TestWALSpoolFamilies(t *testing.T) {
	dir := t.TempDir()
	cat, err := catalog.Open(filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	fp := strings.Repeat("ab", 32)
	for _, name := range []string{"db1", "gone"} {
		if err := cat.EnrollClient(catalog.Client{Name: name, CertFingerprint: fp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cat.RevokeClient("gone", t0); err != nil {
		t.Fatal(err)
	}
	if err := cat.SetWALSpools("db1", []catalog.WALSpool{
		{Cluster: "main", Files: 4, Oldest: "000000010000000000000009", OldestSince: t0.Add(-20 * time.Minute),
			LastArchived: "000000010000000000000008", LastArchivedAt: t0.Add(-21 * time.Minute), LastError: "job 7 failed", Reported: t0},
		{Cluster: "reports", LastArchived: "000000010000000000000002", LastArchivedAt: t0.Add(-time.Hour), Reported: t0},
	}); err != nil {
		t.Fatal(err)
	}
	if err := cat.SetWALSpools("gone", []catalog.WALSpool{{Cluster: "main", Files: 1, Oldest: "000000010000000000000001", OldestSince: t0, Reported: t0}}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(10 * time.Minute) // ten minutes after the last report
	c := New(Source{Catalog: cat, Service: brokenLibraries{}, Version: "test", Now: func() time.Time { return now }})
	want := fmt.Sprintf(`
# HELP kura_wal_spool_segments WAL files waiting in the agent's spool for the server, per client and PostgreSQL cluster, as the agent last reported (every minute).
# TYPE kura_wal_spool_segments gauge
kura_wal_spool_segments{client="db1",cluster="main"} 4
kura_wal_spool_segments{client="db1",cluster="reports"} 0
# HELP kura_wal_spool_oldest_seconds How long the oldest WAL file in the agent's spool has waited (0 when none waits); it grows while the agent is silent.
# TYPE kura_wal_spool_oldest_seconds gauge
kura_wal_spool_oldest_seconds{client="db1",cluster="main"} 1800
kura_wal_spool_oldest_seconds{client="db1",cluster="reports"} 0
# HELP kura_wal_last_archived_timestamp_seconds When the agent last sent a WAL file of the cluster that the server stored (Unix time). A cluster that sent none yet has no series.
# TYPE kura_wal_last_archived_timestamp_seconds gauge
kura_wal_last_archived_timestamp_seconds{client="db1",cluster="main"} %d
kura_wal_last_archived_timestamp_seconds{client="db1",cluster="reports"} %d
# HELP kura_wal_spool_failing 1 while the agent's last attempt to send the cluster's spool failed, 0 once a file was sent after it.
# TYPE kura_wal_spool_failing gauge
kura_wal_spool_failing{client="db1",cluster="main"} 1
kura_wal_spool_failing{client="db1",cluster="reports"} 0
`, t0.Add(-21*time.Minute).Unix(), t0.Add(-time.Hour).Unix())
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kura_wal_spool_segments", "kura_wal_spool_oldest_seconds",
		"kura_wal_last_archived_timestamp_seconds", "kura_wal_spool_failing"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
