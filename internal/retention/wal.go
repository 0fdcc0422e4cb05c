package retention

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// PostgreSQL's archived WAL (kura wal archive: one saveset per WAL file)
// is worth keeping only while a kept base backup of the same cluster can
// replay it: recovery starts from a base backup and replays the WAL
// archived after it. DecideWAL ties each WAL file to the base backups of
// its own cluster — a client may host several clusters, each with its
// own WAL archive and its own base backups.
//
// A base backup names its cluster (kura backup --plugin
// postgresql-cluster --cluster NAME). One that names none (made before
// the name existed, or without it) is taken for the cluster of a client
// that archives one cluster only; where the client archives several, an
// unnamed base backup could be any one's, so it expires nothing.

// Rule codes of DecideWAL.
const (
	RuleWALAfterBase = "wal-after-base"   // kept: archived at or after the oldest kept base backup of its cluster
	RuleWALNoBase    = "wal-no-base"      // kept: its cluster has no kept base backup
	RuleWALUnnamed   = "wal-unnamed-base" // kept: only unnamed base backups, and several clusters on the client

	RuleWALBeforeBase = "wal-before-base" // expired: archived before the oldest kept base backup of its cluster
)

// WALFile is one archived WAL file of a client's cluster.
type WALFile struct {
	ID              int64
	Client, Cluster string
	Created         time.Time // when it was archived
}

// BaseBackup is a kept, complete base backup of a client's cluster;
// Cluster is "" when it names none.
type BaseBackup struct {
	ID              int64
	Client, Cluster string
	Created         time.Time
}

// DecideWAL decides, for each WAL file, whether a kept base backup of its
// cluster can still replay it: a file archived before the oldest such base
// backup is expired (RuleWALBeforeBase); every other is kept, with the
// rule that keeps it. The decisions are sorted by ID. Like Decide it is a
// pure function of its input.
func DecideWAL(files []WALFile, bases []BaseBackup) []Decision {
	type key struct{ client, cluster string }
	clusters := map[string]map[string]bool{} // client → its clusters
	note := func(client, cluster string) {
		if clusters[client] == nil {
			clusters[client] = map[string]bool{}
		}
		clusters[client][cluster] = true
	}
	for _, f := range files {
		note(f.Client, f.Cluster)
	}
	named := map[key]BaseBackup{}      // the oldest named base backup of each cluster
	unnamed := map[string]BaseBackup{} // the oldest unnamed one of each client
	older := func(a, b BaseBackup) bool {
		return a.Created.Before(b.Created) || a.Created.Equal(b.Created) && a.ID < b.ID
	}
	for _, b := range bases {
		if b.Cluster == "" {
			if o, ok := unnamed[b.Client]; !ok || older(b, o) {
				unnamed[b.Client] = b
			}
			continue
		}
		note(b.Client, b.Cluster)
		k := key{b.Client, b.Cluster}
		if o, ok := named[k]; !ok || older(b, o) {
			named[k] = b
		}
	}
	out := make([]Decision, 0, len(files))
	for _, f := range files {
		d := Decision{ID: f.ID, Keep: true}
		base, ok := named[key{f.Client, f.Cluster}]
		if u, has := unnamed[f.Client]; has && len(clusters[f.Client]) == 1 && (!ok || older(u, base)) {
			base, ok = u, true // the one cluster's, and older: it keeps more
		}
		_, hasUnnamed := unnamed[f.Client]
		switch {
		case !ok && hasUnnamed:
			d.Rule = RuleWALUnnamed
			d.Reason = fmt.Sprintf("kept: client %s archives %d clusters and no kept base backup names cluster %s (back up each with --cluster NAME)",
				f.Client, len(clusters[f.Client]), f.Cluster)
		case !ok:
			d.Rule = RuleWALNoBase
			d.Reason = fmt.Sprintf("kept: cluster %s of client %s has no kept base backup, so nothing says which base backup it serves", f.Cluster, f.Client)
		case f.Created.Before(base.Created):
			d.Keep, d.Rule = false, RuleWALBeforeBase
			d.Reason = fmt.Sprintf("expired: WAL archived before the oldest kept base backup of cluster %s of client %s (saveset %d, %s): no kept base backup replays it",
				f.Cluster, f.Client, base.ID, base.Created.UTC().Format("2006-01-02 15:04:05"))
		default:
			d.Rule = RuleWALAfterBase
			d.Reason = fmt.Sprintf("kept: archived after base backup %d of cluster %s (%s), which replays it",
				base.ID, f.Cluster, base.Created.UTC().Format("2006-01-02 15:04:05"))
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b Decision) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
