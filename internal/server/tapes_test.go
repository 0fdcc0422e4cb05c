package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// A tape cannot be loaded into, unloaded from or exported out of the drive
// a running backup of the server holds: the answer is conflict, naming the
// job. The other drive stays free for admin moves, and the held one is
// free again once the job has ended.
func TestLoadRefusedOnTheDriveARunningJobHolds(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	randomFiles(t, src, 64, 64<<10, 41)
	// 4 MiB at 64 KiB/s would take over a minute: the job runs while the
	// test looks. Small files in small frames: progress counts what went
	// out, a frame at a time, so the first comes within seconds.
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none",
		BWLimit: 64 << 10, FrameSize: 64 << 10})[0]
	r.waitProgress(id)
	ctx := t.Context()

	drives, err := r.admin.Drives(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	held, inHeld := 0, ""
	for _, d := range drives {
		if d.Busy {
			held, inHeld = d.Number, d.Barcode
		}
	}
	if held == 0 || inHeld == "" {
		t.Fatalf("no busy drive with a tape while the backup runs: %+v", drives)
	}
	other := 3 - held
	want := fmt.Sprintf("drive %d of library default is in use by job %d (backup)", held, id)
	refused := func(what string, err error) {
		t.Helper()
		wantCode(t, what, err, api.CodeConflict)
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", what, err, want)
		}
	}
	_, err = r.admin.LoadTape(ctx, "KUR005", api.TapeLoad{Drive: held})
	refused("a load into the held drive", err)
	_, err = r.admin.LoadTape(ctx, inHeld, api.TapeLoad{Drive: other})
	refused("a load of the held drive's tape into the other drive", err)
	_, err = r.admin.UnloadTape(ctx, inHeld)
	refused("an unload of the held drive's tape", err)
	_, err = r.admin.ExportTape(ctx, inHeld)
	refused("an export of the held drive's tape", err)

	if tp, err := r.admin.LoadTape(ctx, "KUR005", api.TapeLoad{Drive: other}); err != nil || tp.Drive != other {
		t.Fatalf("a load into the free drive: %+v, %v", tp, err)
	}
	if _, err := r.admin.UnloadTape(ctx, "KUR005"); err != nil {
		t.Fatal(err)
	}

	if _, err := r.admin.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if j := r.wait(id); j.State != catalog.StateCanceled {
		t.Fatalf("the backup: %s (%s); want canceled", j.State, j.Error)
	}
	if tp, err := r.admin.LoadTape(ctx, "KUR005", api.TapeLoad{Drive: held}); err != nil || tp.Drive != held {
		t.Errorf("a load into the drive the job gave back: %+v, %v", tp, err)
	}
}
