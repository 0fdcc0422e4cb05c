package server_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// A backup's bandwidth limit holds the job's average rate (the server's
// measure: source bytes per second of the backup phase) under the limit.
func TestBandwidthLimit(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	total := randomFiles(t, src, 6, 1<<20, 11)
	const limit = 2 << 20

	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", BWLimit: limit})[0]
	j := r.wait(id)
	if j.State != catalog.StateSucceeded {
		t.Fatalf("backup: %s (%s)", j.State, j.Error)
	}
	if j.SourceBytes != total || j.MediaBytes < total {
		t.Fatalf("backup of %d bytes: source %d, media %d", total, j.SourceBytes, j.MediaBytes)
	}
	elapsed := j.Finished.Sub(j.Started)
	t.Logf("%d bytes in %s: average %.0f B/s, peak %.0f B/s (limit %d B/s)", total, elapsed, j.AvgRate, j.PeakRate, limit)
	if j.AvgRate <= 0 || j.AvgRate > 1.05*limit {
		t.Errorf("average rate %.0f B/s; want at most %.0f (limit %d)", j.AvgRate, 1.05*limit, limit)
	}
	if f := j.Figures.AvgKBps * 1024; f > 1.05*limit || f < 0.95*j.AvgRate {
		t.Errorf("figures: average %.1f KiB/s, job %.0f B/s", j.Figures.AvgKBps, j.AvgRate)
	}
	if least := time.Duration(float64(total) / limit * 0.8 * float64(time.Second)); elapsed < least {
		t.Errorf("took %s; at %d B/s it needs at least %s", elapsed, limit, least)
	}

	// The data comes back whole, and a restore's limit holds the rate the
	// agent reads the saveset at (incompressible: the same bytes).
	to := t.TempDir()
	const rlimit = 3 << 20
	rs := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: j.SavesetID, To: to, BWLimit: rlimit})[0])
	if rs.State != catalog.StateSucceeded {
		t.Fatalf("restore: %s (%s)", rs.State, rs.Error)
	}
	sameTree(t, src, filepath.Join(to, src))
	relapsed := rs.Finished.Sub(rs.Started)
	t.Logf("restore of %d bytes in %s at a limit of %d B/s", total, relapsed, rlimit)
	if least := time.Duration(float64(total) / rlimit * 0.8 * float64(time.Second)); relapsed < least {
		t.Errorf("restore took %s; at %d B/s it needs at least %s", relapsed, rlimit, least)
	}
}
