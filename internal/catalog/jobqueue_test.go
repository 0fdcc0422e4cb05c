package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// order is a stand-in for the job order the server keeps in Job.Request.
type order struct {
	Client    string   `json:"client"`
	Selection string   `json:"selection"`
	Paths     []string `json:"paths"`
	BWLimit   int64    `json:"bwlimit"`
}

func TestJobRequestReasonParent(t *testing.T) { onBoth(t, testJobRequestReasonParent) }

func testJobRequestReasonParent(t *testing.T) {
	c, _ := openTemp(t)
	want := order{Client: "db1", Selection: "home", Paths: []string{"/home", "/etc"}, BWLimit: 1 << 20}
	req, err := json.Marshal(want)
	must(t, err)
	j := &Job{Kind: KindBackup, State: StateQueued, Client: "db1", Request: req, Reason: "waiting for a drive"}
	must(t, c.CreateJob(j))
	s := &Job{Kind: KindBackup, State: StateQueued, ParentID: j.ID}
	must(t, c.CreateJob(s))

	got, err := c.Job(j.ID)
	must(t, err)
	if !reflect.DeepEqual(got, j) {
		t.Fatalf("Job = %+v\nwant %+v", got, j)
	}
	var back order
	must(t, json.Unmarshal(got.Request, &back))
	if !reflect.DeepEqual(back, want) {
		t.Errorf("request round trip %+v, want %+v", back, want)
	}
	got, err = c.Job(s.ID)
	must(t, err)
	if got.ParentID != j.ID || got.Request != nil || got.Reason != "" {
		t.Errorf("stream = %+v", got)
	}

	// The whole Job goes through JSON, Request as an object, not a string.
	b, err := json.Marshal(j)
	must(t, err)
	if !strings.Contains(string(b), `"request":{"client":"db1"`) || !strings.Contains(string(b), `"reason":"waiting for a drive"`) {
		t.Errorf("Job JSON %s", b)
	}
	var jb Job
	must(t, json.Unmarshal(b, &jb))
	if !reflect.DeepEqual(&jb, j) {
		t.Errorf("Job JSON round trip %+v\nwant %+v", jb, *j)
	}
	b, err = json.Marshal(s)
	must(t, err)
	if strings.Contains(string(b), `"request"`) || strings.Contains(string(b), `"reason"`) {
		t.Errorf("empty request and reason not omitted: %s", b)
	}

	// UpdateJob writes them; Jobs reads them.
	j.State, j.Reason, j.Request = StateRunning, "", json.RawMessage(`{"restart":true}`)
	must(t, c.UpdateJob(j))
	jobs, err := c.Jobs(0)
	must(t, err)
	if len(jobs) != 2 || !reflect.DeepEqual(jobs[1], j) || !reflect.DeepEqual(jobs[0], s) {
		t.Errorf("Jobs = %+v, %+v", jobs[0], jobs[1])
	}

	for _, bad := range []*Job{
		{Kind: KindBackup, State: StateQueued, Request: json.RawMessage(`{"client":`)},
		{Kind: KindBackup, State: StateQueued, ParentID: -1},
		{ID: 50, Kind: KindBackup, State: StateQueued, ParentID: 50},
	} {
		if err := c.CreateJob(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateJob(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	j.Request = json.RawMessage(`nope`)
	if err := c.UpdateJob(j); !errors.Is(err, ErrInvalid) {
		t.Errorf("UpdateJob with bad request: %v, want ErrInvalid", err)
	}
}

func TestQueuedJobsAndReason(t *testing.T) { onBoth(t, testQueuedJobsAndReason) }

func testQueuedJobsAndReason(t *testing.T) {
	c, _ := openTemp(t)
	if jobs, err := c.QueuedJobs(); err != nil || len(jobs) != 0 {
		t.Fatalf("QueuedJobs of empty catalog: %v, %v", jobs, err)
	}
	states := []string{StateWaiting, StateRunning, StateQueued, StateSucceeded, StateQueued, StateInterrupted,
		StateWaiting, StateCanceled, StateFailed, StateWarnings}
	var want []int64
	for _, st := range states {
		j := &Job{Kind: KindBackup, State: st, Request: json.RawMessage(`{"n":1}`)}
		must(t, c.CreateJob(j))
		if st == StateQueued || st == StateWaiting {
			want = append(want, j.ID)
		}
	}
	ids := func() []int64 {
		t.Helper()
		jobs, err := c.QueuedJobs()
		must(t, err)
		var got []int64
		for _, j := range jobs {
			if string(j.Request) != `{"n":1}` {
				t.Errorf("queued job %d lost its request: %s", j.ID, j.Request)
			}
			got = append(got, j.ID)
		}
		return got
	}
	if got := ids(); !reflect.DeepEqual(got, want) {
		t.Fatalf("QueuedJobs = %v, want %v", got, want)
	}

	// SetJobReason changes state and reason, nothing else.
	before, err := c.Job(want[1])
	must(t, err)
	must(t, c.SetJobReason(want[1], StateWaiting, "waiting for tape KURA001L6"))
	after, err := c.Job(want[1])
	must(t, err)
	before.State, before.Reason = StateWaiting, "waiting for tape KURA001L6"
	if !reflect.DeepEqual(after, before) {
		t.Errorf("after SetJobReason %+v\nwant %+v", after, before)
	}
	must(t, c.SetJobReason(want[0], StateRunning, ""))
	if got := ids(); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("QueuedJobs after start = %v, want %v", got, want[1:])
	}
	if err := c.SetJobReason(999, StateQueued, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetJobReason of missing job: %v, want ErrNotFound", err)
	}
	if err := c.SetJobReason(want[1], "napping", "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetJobReason to unknown state: %v, want ErrInvalid", err)
	}

	// Reclaiming the dead running jobs leaves the queue alone.
	must(t, c.SetJobReason(want[1], StateWaiting, "waiting for a drive"))
	queued, err := c.QueuedJobs()
	must(t, err)
	if _, err := c.ReclaimJobs(time.Now().Add(24*time.Hour), func(string) string { return "gone" }); err != nil {
		t.Fatal(err)
	}
	again, err := c.QueuedJobs()
	must(t, err)
	if !reflect.DeepEqual(again, queued) {
		t.Errorf("ReclaimJobs changed the queue:\n%+v\nwant\n%+v", again, queued)
	}
}

// A catalog made by the Kura before migration 3 (schema version 2) opens,
// keeps its jobs, which read with no request, reason or parent, and takes
// clients, tokens and the new job fields.
func TestMigrateFromSchema2(t *testing.T) { onBoth(t, testMigrateFromSchema2) }

func testMigrateFromSchema2(t *testing.T) {
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:2]
	c, path := openTemp(t)
	if v, _ := c.SchemaVersion(); v != 2 {
		t.Fatalf("old catalog at version %d, want 2", v)
	}
	_, err := c.db.Exec(`INSERT INTO jobs (kind, state, client, selection, saveset_id, level, started, finished,
		files, source_bytes, media_bytes, avg_rate, peak_rate, tapes, phases, warnings, warning_count, error, log, owner)
		VALUES ('backup', 'queued', 'db1', 'home', 0, 'full', ?, NULL, 3, 30, 20, 0, 0, '["A1"]', '[]', '[]', 0, '', '["hi"]', 'lock1')`,
		t0.UnixNano())
	must(t, err)
	// As the Kura of that schema wrote it (AddLibrary writes columns of
	// later migrations).
	_, err = c.db.Exec(`INSERT INTO libraries (name, dir, created) VALUES (?, ?, ?)`, "default", "/vtl", t0.UnixNano())
	must(t, err)
	c.Close()

	migrations = saved
	c2, err := Open(path)
	if err != nil {
		t.Fatalf("Open at schema 2: %v", err)
	}
	defer c2.Close()
	if v, _ := c2.SchemaVersion(); v != len(saved) || v < 3 {
		t.Fatalf("schema version %d, want %d", v, len(saved))
	}
	want := &Job{ID: 1, Kind: KindBackup, State: StateQueued, Client: "db1", Selection: "home", Level: "full",
		Started: t0, Files: 3, SourceBytes: 30, MediaBytes: 20, Tapes: []string{"A1"}, Log: []string{"hi"}, Owner: "lock1"}
	got, err := c2.Job(1)
	must(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("old job after migration %+v\nwant %+v", got, want)
	}
	if q, err := c2.QueuedJobs(); err != nil || len(q) != 1 || !reflect.DeepEqual(q[0], want) {
		t.Errorf("QueuedJobs after migration: %v, %v", q, err)
	}
	if _, err := c2.Library("default"); err != nil {
		t.Errorf("library lost by migration: %v", err)
	}

	// The new tables and columns work.
	must(t, c2.EnrollClient(Client{Name: "db1", CertFingerprint: fp1, Enrolled: t0}))
	must(t, c2.CreateToken(&Token{Hash: "h", Kind: TokenEnroll, Expires: t0.Add(time.Minute)}))
	if _, err := c2.UseToken("h", t0, "db1"); err != nil {
		t.Errorf("UseToken after migration: %v", err)
	}
	must(t, c2.SetJobReason(1, StateWaiting, "waiting for a drive"))
	j := &Job{Kind: KindBackup, State: StateQueued, ParentID: 1, Request: json.RawMessage(`{}`)}
	must(t, c2.CreateJob(j))
	if j.ID != 2 {
		t.Errorf("new job ID %d, want 2", j.ID)
	}
	got, err = c2.Job(1)
	must(t, err)
	if got.State != StateWaiting || got.Reason != "waiting for a drive" {
		t.Errorf("job 1 after SetJobReason: %+v", got)
	}
}
