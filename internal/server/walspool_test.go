package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
)

// runSpoolingAgent runs the agent of home, sending and reporting its WAL
// spool every period, until the test ends or stop.
func (r *rig) runSpoolingAgent(home, name string, period time.Duration) (stop func()) {
	t := r.t
	a, err := agent.Open(agent.Options{Home: home, Log: &logWriter{t: t, prefix: name + ": "},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, SpoolEvery: period})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	once := sync.Once{}
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// walSpool waits until the server shows a WAL spool of client's cluster
// that satisfies cond, and returns it.
func (r *rig) walSpool(client, cluster, what string, cond func(api.WALSpool) bool) api.WALSpool {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last api.Client
	for time.Now().Before(deadline) {
		cl, err := r.admin.Client(r.t.Context(), client)
		if err == nil {
			last = *cl
			for _, s := range cl.WALSpools {
				if s.Cluster == cluster && cond(s) {
					return s
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the server's state, which the agent's reports change
	}
	r.t.Fatalf("the server never showed %s of client %s's cluster %s; last: %+v", what, client, cluster, last.WALSpools)
	return api.WALSpool{}
}

// The server's alarm of WAL archiving through an agent: the agent
// reports its spool, so a spool that cannot drain shows on the server —
// in the client's record, in /metrics and in the server's log — with the
// reason once a send failed; once it drains, the alarm clears and the
// last archived file shows. The record is the catalog's: it outlives a
// server restart, while the agent is away.
func TestWALSpoolAlarmOnTheServer(t *testing.T) {
	t.Parallel()
	h := &holder{}
	opts := fastOpts
	opts.Events = h
	serverHome := t.TempDir()
	r := startServerWith(t, serverHome, "", opts)
	home := r.enroll("db1", "")
	src := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(src, []byte(strings.Repeat("wal ", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	const seg = "000000010000000000000007"
	// Spooled 20 minutes ago by the agent's clock, and the server's
	// backup of it held mid-run: the spool cannot drain.
	held, release := h.arm(t, "phase_started:backup")
	stopAgent := r.runSpoolingAgent(home, "db1", 100*time.Millisecond)
	r.waitOnline("db1", true)
	if err := agent.SpoolWAL(home, "main", seg, src, time.Now().Add(-20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	id := held()

	s := r.walSpool("db1", "main", "one file waiting", func(s api.WALSpool) bool { return s.Files == 1 })
	if s.Oldest != seg || !s.Behind(time.Now(), api.WALBehindAfter) || time.Since(s.OldestSince) < 19*time.Minute {
		t.Errorf("the stuck spool: %+v; want %s waiting about 20 minutes, behind", s, seg)
	}
	tok, err := os.ReadFile(r.srv.MetricsTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	_, body := r.scrape(string(tok))
	mfs := families(t, body)
	if v, ok := value(mfs, "kura_wal_spool_segments", "client", "db1", "cluster", "main"); !ok || v != 1 {
		t.Errorf("kura_wal_spool_segments: %v %v; want 1", v, ok)
	}
	if v, ok := value(mfs, "kura_wal_spool_oldest_seconds", "client", "db1", "cluster", "main"); !ok || v < 19*60 {
		t.Errorf("kura_wal_spool_oldest_seconds: %v %v; want about 1200", v, ok)
	}
	if _, ok := value(mfs, "kura_wal_last_archived_timestamp_seconds", "client", "db1", "cluster", "main"); ok {
		t.Error("a cluster that sent nothing yet has a last-archived time")
	}
	r.waitLog("WAL archiving falls behind", "client=db1", "cluster=main")

	// The job that should store it fails: the agent says why. (The
	// next try is held too, until the test has seen the error.)
	if _, err := r.admin.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	held, release2 := h.arm(t, "phase_started:backup")
	release()
	s = r.walSpool("db1", "main", "the failed send's error", func(s api.WALSpool) bool { return strings.Contains(s.LastError, "canceled") })
	if s.Files != 1 || !strings.Contains(s.LastError, seg) || !strings.Contains(s.LastError, "canceled") {
		t.Errorf("after the canceled job: %+v; want 1 file waiting and the error naming %s and the canceled job", s, seg)
	}
	_, body = r.scrape(string(tok))
	if v, ok := value(families(t, body), "kura_wal_spool_failing", "client", "db1", "cluster", "main"); !ok || v != 1 {
		t.Errorf("kura_wal_spool_failing after the failed send: %v %v; want 1", v, ok)
	}

	// The next send succeeds: the spool is empty, the alarm clears.
	held()
	release2()
	s = r.walSpool("db1", "main", "the spool drained", func(s api.WALSpool) bool { return s.Files == 0 })
	if s.LastArchived != seg || time.Since(s.LastArchivedAt) > time.Minute || s.LastError != "" || s.Behind(time.Now(), 0) {
		t.Errorf("after the spool drained: %+v; want %s archived just now, no error", s, seg)
	}
	_, body = r.scrape(string(tok))
	mfs = families(t, body)
	for name, want := range map[string]float64{"kura_wal_spool_segments": 0, "kura_wal_spool_oldest_seconds": 0, "kura_wal_spool_failing": 0} {
		if v, ok := value(mfs, name, "client", "db1", "cluster", "main"); !ok || v != want {
			t.Errorf("%s after the spool drained: %v %v; want %v", name, v, ok, want)
		}
	}
	if v, ok := value(mfs, "kura_wal_last_archived_timestamp_seconds", "client", "db1", "cluster", "main"); !ok || time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Errorf("kura_wal_last_archived_timestamp_seconds: %v %v; want about now", v, ok)
	}

	// The server restarts while the agent is away: the record stays.
	stopAgent()
	r.stop()
	r = startServer(t, serverHome, "")
	cl, err := r.admin.Client(t.Context(), "db1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.WALSpools) != 1 || cl.WALSpools[0].LastArchived != seg || cl.Connected {
		t.Errorf("after a restart, the agent away: %+v", cl)
	}
	if _, err := r.admin.Client(t.Context(), "nobody"); err == nil {
		t.Error("a client that does not exist was found")
	}
}
