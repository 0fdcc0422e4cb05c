package server_test

import (
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// A backup canceled while its frames pour in ends canceled, and the drive
// takes the next backup.
func TestCancelDuringFastBackup(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	small, big := t.TempDir(), t.TempDir()
	makeTree(t, small, 8, 51)
	randomFiles(t, big, 20, 1<<20, 51)
	// 20 MiB at 8 MiB/s in 64 KiB frames: frames still pour in, but the
	// backup lasts seconds, so the cancel (sent on the first progress, which
	// comes once a frame is on the wire) cannot arrive after its end.
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{big}, Compress: "none", Drive: 1,
		BWLimit: 8 << 20, FrameSize: 64 << 10})[0]
	r.waitProgress(id)
	if _, err := r.admin.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if j := r.wait(id); j.State != catalog.StateCanceled {
		t.Errorf("the canceled backup: %s (%s)", j.State, j.Error)
	}
	j := r.backupAndCheck(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{small}, Drive: 1})
	r.restoreAndCheck("c1", j.SavesetID, small)
}
