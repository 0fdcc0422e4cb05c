package server_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// Two agents back up at the same time on the two drives of the default
// library; then each one's saveset is restored onto the other machine.
func TestParallelBackupsAndCrossClientRestore(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	r.runAgent("c2")
	src1, src2 := t.TempDir(), t.TempDir()
	makeTree(t, src1, 40, 1)
	makeTree(t, src2, 40, 2)

	j1 := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src1}, Compress: "low"})[0]
	j2 := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c2", Paths: []string{src2}, Compress: "none"})[0]
	b1, b2 := r.wait(j1), r.wait(j2)
	for _, j := range []*api.Job{b1, b2} {
		if j.State != catalog.StateSucceeded {
			t.Fatalf("backup job %d: %s (%s)", j.ID, j.State, j.Error)
		}
		if j.Figures.Files == 0 || j.Figures.SourceBytes == 0 || j.Figures.MediaBytes == 0 {
			t.Errorf("job %d figures: %+v", j.ID, j.Figures)
		}
	}
	// Each ran on its own drive: the job logs name the drive.
	drive := func(j *api.Job) string {
		for _, l := range j.Log {
			if i := strings.Index(l, "drive "); i >= 0 {
				return l[i : i+7]
			}
		}
		return ""
	}
	if d1, d2 := drive(b1), drive(b2); d1 == "" || d1 == d2 {
		t.Errorf("jobs ran on drives %q and %q; want two different drives", d1, d2)
	}
	if b1.Figures.CompressionRatio == "" || b1.Figures.MediaBytes >= b1.Figures.SourceBytes {
		t.Errorf("c1 compressed on the agent: source %d, media %d", b1.Figures.SourceBytes, b1.Figures.MediaBytes)
	}

	// Restore c1's saveset onto c2, and c2's onto c1.
	to1, to2 := t.TempDir(), t.TempDir()
	rs1 := r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: b1.SavesetID, To: to1, ToClient: "c2"})[0]
	rs2 := r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c2", Saveset: b2.SavesetID, To: to2, ToClient: "c1"})[0]
	for _, id := range []int64{rs1, rs2} {
		if j := r.wait(id); j.State != catalog.StateSucceeded {
			t.Fatalf("restore job %d: %s (%s)", id, j.State, j.Error)
		}
	}
	sameTree(t, src1, filepath.Join(to1, src1))
	sameTree(t, src2, filepath.Join(to2, src2))
}
