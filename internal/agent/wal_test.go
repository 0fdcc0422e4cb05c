package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
)

// The spool has one sender at a time, and a file the server does not
// take stays spooled, in order.
func TestSendSpoolOneSenderAndKeepsUnsent(t *testing.T) {
	home := t.TempDir()
	c, err := apiclient.New("https://127.0.0.1:1", nil, "") // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{opts: Options{Home: home}, c: c, log: slog.New(slog.DiscardHandler)}
	src := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(src, []byte("wal"), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	for i, f := range []string{"000000010000000000000002", "000000010000000000000001"} {
		if err := SpoolWAL(home, "main", f, src, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := SpoolList(home)
	if err != nil || len(list) != 2 || list[0].File != "000000010000000000000002" {
		t.Fatalf("spool in arrival order: %+v, %v", list, err)
	}

	unlock, ok, err := lockSpool(home)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if n, err := a.SendSpool(context.Background()); n != 0 || err != nil {
		t.Errorf("with another sender at work SendSpool should return 0, nil: %d, %v", n, err)
	}
	unlock()
	if n, err := a.SendSpool(context.Background()); n != 0 || err == nil {
		t.Errorf("with the server unreachable SendSpool should fail: %d, %v", n, err)
	}
	if list, _ := SpoolList(home); len(list) != 2 {
		t.Errorf("unsent files must stay spooled: %+v", list)
	}
	// The failure is kept for the report to the server.
	rep, ok, err := SpoolReport(home, time.Now())
	if err != nil || !ok || len(rep.Clusters) != 1 {
		t.Fatalf("report: %+v %v %v", rep, ok, err)
	}
	if c := rep.Clusters[0]; c.Files != 2 || c.Oldest != "000000010000000000000002" || !strings.Contains(c.LastError, "000000010000000000000002") {
		t.Errorf("the report after a failed send: %+v", c)
	}
	// A sender whose time ran out (kura wal archive --send-for) notes it
	// too; one stopped (its process ends) does not.
	noteSpool(home, "main", func(st *spoolState) { st.LastError = "" })
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := a.SendSpool(ctx); err == nil {
		t.Fatal("a send past its deadline succeeded")
	}
	if st := readSpoolState(home, "main"); !strings.Contains(st.LastError, "deadline") {
		t.Errorf("after a send past its deadline: %+v", st)
	}
	noteSpool(home, "main", func(st *spoolState) { st.LastError = "" })
	stopped, stop := context.WithCancel(context.Background())
	stop()
	_, _ = a.SendSpool(stopped)
	if st := readSpoolState(home, "main"); st.LastError != "" {
		t.Errorf("a stopped sender noted an error: %+v", st)
	}
}

// The report to the server: per cluster that ever spooled, the files
// waiting, the oldest one's age, the last file sent and the last error;
// a home that never spooled WAL has nothing to report.
func TestSpoolReport(t *testing.T) {
	home := t.TempDir()
	now := time.Unix(10_000, 0)
	if _, ok, err := SpoolReport(home, now); ok || err != nil {
		t.Fatalf("a home without a spool reported: %v %v", ok, err)
	}
	src := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(src, []byte("wal"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, f := range []string{"000000010000000000000005", "000000010000000000000006"} {
		if err := SpoolWAL(home, "main", f, src, now.Add(time.Duration(i-90)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := SpoolWAL(home, "other", "000000010000000000000001", src, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	// other's file was sent: its folder stays, empty, with its history.
	list, _ := SpoolList(home)
	for _, s := range list {
		if s.Cluster == "other" {
			if err := os.Remove(s.Path); err != nil {
				t.Fatal(err)
			}
		}
	}
	noteSpool(home, "main", func(st *spoolState) { st.LastError, st.LastErrorAt = "no tape", now.Add(-10*time.Second) })
	noteSpool(home, "other", func(st *spoolState) {
		st.LastArchived, st.LastArchivedAt = "000000010000000000000001", now.Add(-time.Minute)
	})
	rep, ok, err := SpoolReport(home, now)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := []api.WALSpoolState{
		{Cluster: "main", Files: 2, Oldest: "000000010000000000000005", OldestSeconds: 90, LastError: "no tape", LastErrorSeconds: 10},
		{Cluster: "other", LastArchived: "000000010000000000000001", LastArchivedSeconds: 60},
	}
	if !reflect.DeepEqual(rep.Clusters, want) {
		t.Errorf("report:\n got %+v\nwant %+v", rep.Clusters, want)
	}
	if err := rep.Validate(); err != nil {
		t.Errorf("the server would refuse the report: %v", err)
	}
}
