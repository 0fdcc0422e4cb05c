package engine_test

import (
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/retention"
)

// WAL retention per cluster: two PostgreSQL clusters on one client, each
// archiving its own WAL and with its own base backups (one made by a
// policy's selection set, whose key is the set's name). A prune expires
// each cluster's WAL archived before that cluster's oldest kept base
// backup, and keeps the other cluster's, which a newer base backup of
// another cluster cannot replay. Restoring --wal picks the cluster's own
// base backup.
func TestWALRetentionPerCluster(t *testing.T) {
	env := newEnv(t)
	env.Client = "db1" // as the server's job environment of that client
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	add := func(selection string, src plugin.Source, at time.Time) int64 {
		t.Helper()
		s := &catalog.Saveset{Client: "db1", Selection: selection, Level: catalog.LevelFull, Status: catalog.StatusComplete,
			Created: at, Finished: at, Paths: []string{src.String()}}
		if err := env.Catalog.CreateSaveset(s); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	wal := func(cluster, file string, at time.Time) int64 {
		src := plugin.Source{Kind: plugin.KindWAL, Name: cluster + "/" + file}
		return add("sources:"+src.String(), src, at)
	}
	main := plugin.Source{Kind: plugin.KindPostgreSQLCluster, Name: "main"}
	reports := plugin.Source{Kind: plugin.KindPostgreSQLCluster, Name: "reports"}

	mainOld := wal("main", "000000010000000000000001", t0)
	reportsOld := wal("reports", "000000010000000000000001", t0.Add(time.Hour))
	reportsBase := add("nightly-reports", reports, t0.Add(2*time.Hour)) // by a policy's selection set
	reportsNew := wal("reports", "000000010000000000000002", t0.Add(3*time.Hour))
	mainMid := wal("main", "000000010000000000000002", t0.Add(4*time.Hour))
	mainBase := add("sources:"+main.String(), main, t0.Add(5*time.Hour))
	mainNew := wal("main", "000000010000000000000003", t0.Add(6*time.Hour))

	ds, err := env.Retention(t0.Add(24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]engine.SavesetDecision{}
	for _, d := range ds {
		got[d.ID] = d
	}
	for id, want := range map[int64]string{
		mainOld: retention.RuleWALBeforeBase, mainMid: retention.RuleWALBeforeBase, mainNew: retention.RuleWALAfterBase,
		reportsOld: retention.RuleWALBeforeBase, reportsNew: retention.RuleWALAfterBase,
	} {
		d := got[id]
		if d.Rule != want || d.Keep != (want == retention.RuleWALAfterBase) {
			t.Errorf("WAL saveset %d: %s keep=%v (%s); want %s", id, d.Rule, d.Keep, d.Reason, want)
		}
	}
	// reports' WAL after its own base backup is kept although main's base
	// backup is newer: the point of judging per cluster.
	if d := got[reportsNew]; !d.Keep {
		t.Errorf("reports' WAL after reports' base backup was expired: %s", d.Reason)
	}
	for _, id := range []int64{mainBase, reportsBase} {
		if !got[id].Keep {
			t.Errorf("base backup %d expired: %s", id, got[id].Reason)
		}
	}

	// --wal main at a moment after both base backups: main's own.
	ss, err := env.ChooseSaveset(engine.RestoreOptions{At: t0.Add(7 * time.Hour), Into: plugin.Target{Recovery: plugin.Recovery{Cluster: "main"}}})
	if err != nil || ss.ID != mainBase {
		t.Errorf("--wal main picked %+v (%v); want base backup %d", ss, err, mainBase)
	}
	// --wal reports: its base backup, made by a selection set.
	ss, err = env.ChooseSaveset(engine.RestoreOptions{At: t0.Add(7 * time.Hour), Into: plugin.Target{Recovery: plugin.Recovery{Cluster: "reports"}}})
	if err != nil || ss.ID != reportsBase {
		t.Errorf("--wal reports picked %+v (%v); want base backup %d", ss, err, reportsBase)
	}
	if _, err := env.ChooseSaveset(engine.RestoreOptions{At: t0.Add(7 * time.Hour), Into: plugin.Target{Recovery: plugin.Recovery{Cluster: "other"}}}); err == nil {
		t.Error("--wal of a cluster without base backups found one")
	}
}
