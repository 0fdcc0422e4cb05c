package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestJobLifecycle(t *testing.T) { onBoth(t, testJobLifecycle) }

func testJobLifecycle(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{Kind: KindBackup, State: StateQueued, Client: "db1", Selection: "home", Level: LevelIncr}
	must(t, c.CreateJob(j))
	if j.ID == 0 {
		t.Fatal("CreateJob did not assign an ID")
	}
	got, err := c.Job(j.ID)
	must(t, err)
	if !reflect.DeepEqual(got, j) {
		t.Fatalf("Job = %+v\nwant %+v", got, j)
	}

	j.State, j.Started, j.Finished = StateWarnings, t0, t0.Add(time.Minute)
	j.SavesetID, j.Files, j.SourceBytes, j.MediaBytes = 3, 10, 1000, 190
	j.AvgRate, j.PeakRate = 16.5, 1e9
	j.Tapes = []string{"A1", "A2"}
	j.Phases = []Phase{
		{Name: "scan", Start: t0, End: t0.Add(time.Second), Files: 10},
		{Name: "write", Start: t0.Add(time.Second), End: t0.Add(time.Minute), Files: 10, Bytes: 1000, MediaBytes: 190, AvgRate: 16.9, PeakRate: 1e9},
	}
	j.Warnings, j.WarningCount = []string{"a: permission denied"}, 1
	j.Error = ""
	j.Log = []string{"started", "done"}
	must(t, c.UpdateJob(j))
	got, err = c.Job(j.ID)
	must(t, err)
	if !reflect.DeepEqual(got, j) {
		t.Fatalf("after update Job = %+v\nwant %+v", got, j)
	}

	if _, err := c.Job(999); !errors.Is(err, ErrNotFound) {
		t.Errorf("Job(999): %v, want ErrNotFound", err)
	}
	if err := c.UpdateJob(&Job{ID: 999, Kind: KindScan, State: StateRunning}); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateJob(999): %v, want ErrNotFound", err)
	}
	if err := c.CreateJob(&Job{ID: j.ID, Kind: KindScan, State: StateRunning}); !errors.Is(err, ErrExists) {
		t.Errorf("CreateJob with a taken ID: %v, want ErrExists", err)
	}
	if err := c.CreateJob(&Job{Kind: "dance", State: StateRunning}); !errors.Is(err, ErrInvalid) {
		t.Errorf("CreateJob of unknown kind: %v, want ErrInvalid", err)
	}
	if err := c.CreateJob(&Job{Kind: KindBackup, State: "napping"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("CreateJob in unknown state: %v, want ErrInvalid", err)
	}
}

func TestJobListsCapped(t *testing.T) { onBoth(t, testJobListsCapped) }

func testJobListsCapped(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{Kind: KindBackup, State: StateRunning}
	for i := 0; i < MaxWarnings+5; i++ {
		j.Warnings = append(j.Warnings, fmt.Sprintf("w%d", i))
	}
	for i := 0; i < MaxLogLines+7; i++ {
		j.Log = append(j.Log, fmt.Sprintf("line %d", i))
	}
	must(t, c.CreateJob(j))
	got, err := c.Job(j.ID)
	must(t, err)
	if len(got.Warnings) != MaxWarnings || got.Warnings[0] != "w0" || got.Warnings[MaxWarnings-1] != fmt.Sprint("w", MaxWarnings-1) {
		t.Errorf("kept %d warnings, first %q: want the first %d", len(got.Warnings), got.Warnings[0], MaxWarnings)
	}
	if got.WarningCount != MaxWarnings+5 {
		t.Errorf("WarningCount %d, want %d", got.WarningCount, MaxWarnings+5)
	}
	if len(got.Log) != MaxLogLines || got.Log[0] != "line 7" || got.Log[MaxLogLines-1] != fmt.Sprint("line ", MaxLogLines+6) {
		t.Errorf("kept %d log lines from %q: want the last %d", len(got.Log), got.Log[0], MaxLogLines)
	}
	if len(j.Warnings) != MaxWarnings+5 || len(j.Log) != MaxLogLines+7 {
		t.Error("CreateJob changed the caller's lists")
	}
}

func TestJobsNewestFirst(t *testing.T) { onBoth(t, testJobsNewestFirst) }

func testJobsNewestFirst(t *testing.T) {
	c, _ := openTemp(t)
	if jobs, err := c.Jobs(10); err != nil || len(jobs) != 0 {
		t.Fatalf("Jobs of empty catalog: %v, %v", jobs, err)
	}
	var want []int64
	for i := 0; i < 5; i++ {
		j := &Job{Kind: KindVerify, State: StateSucceeded}
		must(t, c.CreateJob(j))
		want = append([]int64{j.ID}, want...)
	}
	for _, tc := range []struct {
		limit int
		want  []int64
	}{{0, want}, {-1, want}, {3, want[:3]}, {10, want}} {
		jobs, err := c.Jobs(tc.limit)
		must(t, err)
		var got []int64
		for _, j := range jobs {
			got = append(got, j.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Jobs(%d) = %v, want %v", tc.limit, got, tc.want)
		}
	}
}

// A job's result is kept with it, byte for byte, and an unset one reads
// back empty.
func TestJobResult(t *testing.T) { onBoth(t, testJobResult) }

func testJobResult(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{Kind: KindVerify, State: StateRunning, Started: t0}
	must(t, c.CreateJob(j))
	got, err := c.Job(j.ID)
	must(t, err)
	if got.Result != nil {
		t.Fatalf("a new job's result: %q; want none", got.Result)
	}
	j.State, j.Finished = StateSucceeded, t0.Add(time.Second)
	j.Result = []byte(`{"level":"data","checked_files":3,"problems":[]}`)
	must(t, c.UpdateJob(j))
	got, err = c.Job(j.ID)
	must(t, err)
	if string(got.Result) != string(j.Result) {
		t.Fatalf("result read back: %q; want %q", got.Result, j.Result)
	}
}
