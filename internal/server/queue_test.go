package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// A drive runs one job: three slow backups on the two drives of the
// default library run two at a time, the third waiting for a drive.
func TestOneJobPerDrive(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	var srcs []string
	for i := 1; i <= 3; i++ {
		r.runAgent(fmt.Sprintf("c%d", i))
		src := t.TempDir()
		randomFiles(t, src, 3, 512<<10, uint64(30+i))
		srcs = append(srcs, src)
	}
	var ids []int64
	srcOf := map[int64]string{}
	for i, src := range srcs {
		id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: fmt.Sprintf("c%d", i+1), Paths: []string{src},
			Compress: "none", BWLimit: 1 << 20})[0]
		ids = append(ids, id)
		srcOf[id] = src
	}

	// Watch the three jobs to their ends, in snapshots of the job list
	// (one catalog query each).
	sawWaiting := ""
	deadline := time.Now().Add(60 * time.Second)
	for {
		jobs, err := r.admin.Jobs(t.Context(), api.JobFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != len(ids) {
			t.Fatalf("%d jobs; want %d", len(jobs), len(ids))
		}
		running, done := 0, 0
		var waiting []api.Job
		for _, j := range jobs {
			switch {
			case j.State == catalog.StateRunning:
				running++
			case j.State == catalog.StateWaiting || j.State == catalog.StateQueued:
				waiting = append(waiting, j)
			default:
				done++
			}
		}
		if running > 2 {
			t.Fatalf("%d jobs running at once on 2 drives", running)
		}
		if running == 2 && len(waiting) == 1 && strings.HasPrefix(waiting[0].Reason, "waiting for a drive") {
			sawWaiting = waiting[0].Reason
		}
		if done == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the jobs did not end: %d running, %d waiting, %d done", running, len(waiting), done)
		}
		time.Sleep(20 * time.Millisecond) // polling a status
	}
	if sawWaiting == "" {
		t.Error("never saw two jobs running and the third waiting for a drive")
	} else {
		t.Logf("the third job: %q", sawWaiting)
	}

	// The records agree: the job that started last started after one of the
	// others had finished, and every backup is whole.
	var jobs []*api.Job
	for _, id := range ids {
		j, err := r.admin.Job(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != catalog.StateSucceeded {
			t.Fatalf("job %d: %s (%s)", id, j.State, j.Error)
		}
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Started.Before(jobs[b].Started) })
	if last := jobs[2]; last.Started.Before(jobs[0].Finished) && last.Started.Before(jobs[1].Finished) {
		t.Errorf("job %d started at %s, before jobs %d and %d ended (%s, %s)", last.ID, last.Started.Format(time.StampMilli),
			jobs[0].ID, jobs[1].ID, jobs[0].Finished.Format(time.StampMilli), jobs[1].Finished.Format(time.StampMilli))
	}
	for _, j := range jobs {
		r.restoreAndCheck(j.Client, j.SavesetID, srcOf[j.ID])
	}
}

// A backup split into two streams runs as two jobs, one per drive; their
// two savesets restored into one folder give the whole tree.
func TestStreams(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 40, 41) // top-level folders d00 … d03

	ids := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Streams: 2})
	if len(ids) != 2 {
		t.Fatalf("a backup in 2 streams gave jobs %v", ids)
	}
	to := t.TempDir()
	var files, lastSet int64
	sets := map[int64]bool{}
	for _, id := range ids {
		j := r.wait(id)
		if j.SavesetID <= lastSet {
			t.Errorf("stream job %d has saveset %d, after saveset %d of the stream before: want them in stream order", id, j.SavesetID, lastSet)
		}
		lastSet = j.SavesetID
		if j.State != catalog.StateSucceeded {
			t.Fatalf("stream job %d: %s (%s)", id, j.State, j.Error)
		}
		if j.Files == 0 || j.SavesetID == 0 || sets[j.SavesetID] {
			t.Fatalf("stream job %d: %d files, saveset %d", id, j.Files, j.SavesetID)
		}
		sets[j.SavesetID] = true
		files += j.Files
		if j.ID != ids[0] && j.ParentID != ids[0] {
			t.Errorf("stream job %d has parent %d; want %d", j.ID, j.ParentID, ids[0])
		}
	}
	// Each stream holds only part of the tree.
	for set := range sets {
		part := t.TempDir()
		rs := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: set, To: part})[0])
		if rs.State != catalog.StateSucceeded {
			t.Fatalf("restore of saveset %d: %s (%s)", set, rs.State, rs.Error)
		}
		if n, all := len(treeSum(t, part)), len(treeSum(t, src)); n == 0 || n >= all {
			t.Errorf("saveset %d restored %d of the %d files; want a part", set, n, all)
		}
		rs = r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: set, To: to})[0])
		if rs.State != catalog.StateSucceeded {
			t.Fatalf("restore of saveset %d into the shared folder: %s (%s)", set, rs.State, rs.Error)
		}
	}
	sameTree(t, src, filepath.Join(to, src))
	if ents, err := os.ReadDir(src); err != nil {
		t.Fatal(err)
	} else if len(ents) < 2 {
		t.Fatalf("the tree has %d top-level entries; the test needs several", len(ents))
	}
	// The streams total what one backup of the whole tree counts: the
	// parents every stream stores are counted once.
	one := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})[0])
	if one.State != catalog.StateSucceeded || one.Files != files {
		t.Errorf("one-stream backup: %s, %d files; the 2 streams counted %d", one.State, one.Files, files)
	}
}
