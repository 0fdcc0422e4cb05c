package server

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/plugin"
)

// The server's alarm of WAL archiving through agents. An agent reports
// its WAL spools (POST /agent/walspool) every minute and after each send;
// the server keeps the last report of each client in the catalog (table
// wal_spools), not in memory: the alarm must outlive a server restart and
// show on every server of a shared catalog, and above all it must keep
// sounding when the agent goes silent — the oldest file's age is kept as
// a moment (OldestSince), so it grows on its own while nobody reports.
// kura client list and show and /metrics read it from there.
//
// A report that changes nothing is not written, except every
// spoolRefresh, so a thousand idle agents do not cost a commit a minute
// each; a changed one (a file spooled or sent, an error) is written at
// once.

// spoolRefresh is how stale the catalog's Reported time of an unchanged
// spool may grow.
const spoolRefresh = 10 * time.Minute

// spoolBook remembers what this server last wrote of each client's
// spools, to tell a change from a repeat.
type spoolBook struct {
	mu   sync.Mutex
	last map[string][]catalog.WALSpool
}

// agentWALSpool records the calling agent's report of its WAL spools.
func (s *Server) agentWALSpool(w http.ResponseWriter, r *http.Request, client string) error {
	var rep api.WALSpoolReport
	if err := readJSON(r, &rep); err != nil {
		return err
	}
	if err := rep.Validate(); err != nil {
		return err
	}
	for i, c := range rep.Clusters {
		if err := plugin.ValidCluster(c.Cluster); err != nil {
			return badField("clusters", "%d: %v", i, err)
		}
		for _, f := range []string{c.Oldest, c.LastArchived} {
			if f == "" {
				continue
			}
			if err := plugin.ValidWALName(c.Cluster + "/" + f); err != nil {
				return badField("clusters", "%d: %v", i, err)
			}
		}
	}
	now := s.opts.Clock.Now()
	b := &s.spools
	b.mu.Lock()
	defer b.mu.Unlock() // one client's reports are written in order
	prev, known := b.last[client]
	if !known {
		var err error
		if prev, err = s.env.Catalog.WALSpools(client); err != nil {
			return err
		}
	}
	recs := spoolRecords(client, rep, now, prev)
	if !sameSpools(prev, recs) || stale(prev, now) {
		if err := s.env.Catalog.SetWALSpools(client, recs); err != nil {
			return err
		}
		if b.last == nil {
			b.last = map[string][]catalog.WALSpool{}
		}
		b.last[client] = recs
		for _, rec := range recs {
			if apiSpool(rec).Behind(now, api.WALBehindAfter) && !wasBehind(prev, rec.Cluster, now) {
				s.log.Warn("WAL archiving falls behind", "client", client, "cluster", rec.Cluster, "files", rec.Files,
					"oldest", rec.Oldest, "waiting", now.Sub(rec.OldestSince).Truncate(time.Second).String(), "err", rec.LastError)
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// spoolRecords turns a report's ages into moments on the server's clock.
// A file or error the previous record names already keeps its moment, so
// the same state reported again is the same record (and the network's
// delay does not move it).
func spoolRecords(client string, rep api.WALSpoolReport, now time.Time, prev []catalog.WALSpool) []catalog.WALSpool {
	before := map[string]catalog.WALSpool{}
	for _, p := range prev {
		before[p.Cluster] = p
	}
	ago := func(sec float64) time.Time { return now.Add(-time.Duration(sec * float64(time.Second))) }
	out := make([]catalog.WALSpool, 0, len(rep.Clusters))
	for _, c := range rep.Clusters {
		p := before[c.Cluster]
		rec := catalog.WALSpool{Client: client, Cluster: c.Cluster, Files: c.Files, Oldest: c.Oldest,
			LastArchived: c.LastArchived, LastError: c.LastError, Reported: now}
		switch {
		case c.Files == 0:
		case c.Oldest == p.Oldest && !p.OldestSince.IsZero():
			rec.OldestSince = p.OldestSince
		default:
			rec.OldestSince = ago(c.OldestSeconds)
		}
		switch {
		case c.LastArchived == "":
		case c.LastArchived == p.LastArchived && !p.LastArchivedAt.IsZero():
			rec.LastArchivedAt = p.LastArchivedAt
		default:
			rec.LastArchivedAt = ago(c.LastArchivedSeconds)
		}
		switch {
		case c.LastError == "":
		case c.LastError == p.LastError && !p.LastErrorAt.IsZero():
			rec.LastErrorAt = p.LastErrorAt
		default:
			rec.LastErrorAt = ago(c.LastErrorSeconds)
		}
		out = append(out, rec)
	}
	return out
}

// sameSpools: the same state, whenever it was reported.
func sameSpools(a, b []catalog.WALSpool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Reported, y.Reported = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

func stale(recs []catalog.WALSpool, now time.Time) bool {
	for _, r := range recs {
		if now.Sub(r.Reported) >= spoolRefresh {
			return true
		}
	}
	return false
}

func wasBehind(prev []catalog.WALSpool, cluster string, now time.Time) bool {
	for _, p := range prev {
		if p.Cluster == cluster {
			return apiSpool(p).Behind(now, api.WALBehindAfter)
		}
	}
	return false
}

// apiSpool is a recorded spool on the wire.
func apiSpool(r catalog.WALSpool) api.WALSpool {
	return api.WALSpool{Cluster: r.Cluster, Files: r.Files, Oldest: r.Oldest, OldestSince: r.OldestSince,
		LastArchived: r.LastArchived, LastArchivedAt: r.LastArchivedAt, LastError: r.LastError, LastErrorAt: r.LastErrorAt,
		Reported: r.Reported}
}

// withSpools adds the recorded WAL spools to clients on the wire.
func (s *Server) withSpools(cs []api.Client) ([]api.Client, error) {
	recs, err := s.env.Catalog.WALSpools("")
	if err != nil {
		return nil, err
	}
	by := map[string][]api.WALSpool{}
	for _, r := range recs {
		by[r.Client] = append(by[r.Client], apiSpool(r))
	}
	for i := range cs {
		cs[i].WALSpools = by[cs[i].Name]
	}
	return cs, nil
}

// getClient is one client, with its WAL spools.
func (s *Server) getClient(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	c, err := s.env.Catalog.Client(name)
	if errors.Is(err, catalog.ErrNotFound) {
		return missing("client", "no client %s", name)
	}
	if err != nil {
		return err
	}
	s.hub.lastSeen(c)
	out, err := s.withSpools([]api.Client{APIClient(c, c.Revoked.IsZero() && s.hub.online(name))})
	if err != nil {
		return err
	}
	return writeJSON(w, out[0])
}
