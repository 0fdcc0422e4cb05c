package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/restorer"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/stream"
)

// remoteStore reads the savesets of a restore job from the server.
type remoteStore struct {
	a      *Agent
	mu     sync.Mutex
	sealed map[int64]sealedRecord // the encrypted savesets seen
	opened map[int64]*sealedData  // their data, opened and its label checked (OpenIndex)
	own    bool                   // the client's own savesets outside a job (kura agent verify)
	// tickets: ask the server where to read before each read (a saveset
	// on a storage node with a data port is read straight from it).
	tickets bool
	ctx     context.Context
	job     int64
	idle    time.Duration // bounds every wait on the server
	lim     *rate.Limiter // the job's bandwidth limit over all its reads (nil: none)
}

var _ restorer.Store = (*remoteStore)(nil)

func (s *remoteStore) Saveset(id int64) (*restorer.Saveset, error) {
	rc, err := s.a.call(s.ctx, "GET", jobPath(s.job, fmt.Sprintf("/savesets/%d", id)), "", nil, s.idle, false)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var ss api.Saveset
	if err := json.NewDecoder(rc).Decode(&ss); err != nil {
		return nil, err
	}
	if err := s.note(&ss); err != nil {
		return nil, err
	}
	return restorerSaveset(&ss), nil
}

// note remembers how a saveset of the restore is encrypted (the order's
// own and every one whose record is fetched), for Data.
func (s *remoteStore) note(ss *api.Saveset) error {
	if ss.Encryption == "" {
		return nil
	}
	if ss.Encryption != seal.Scheme {
		return fmt.Errorf("saveset %d is encrypted with %q, which this agent does not know", ss.ID, ss.Encryption)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealed == nil {
		s.sealed = map[int64]sealedRecord{}
	}
	s.sealed[ss.ID] = sealedRecordOf(ss)
	return nil
}

// sealedRecord is what the catalog says of an encrypted saveset: its part
// sizes (to read the age file over the parts) and its client (which the
// label inside must name).
type sealedRecord struct {
	sizes  []int64
	client string
}

func sealedRecordOf(ss *api.Saveset) sealedRecord {
	sizes := make([]int64, len(ss.Parts))
	for i, p := range ss.Parts {
		sizes[i] = p.Bytes
	}
	return sealedRecord{sizes: sizes, client: ss.Client}
}

// restorerSaveset is what the restorer needs of a saveset record.
func restorerSaveset(ss *api.Saveset) *restorer.Saveset {
	out := &restorer.Saveset{ID: ss.ID}
	for _, p := range ss.Parts {
		out.Tapes = append(out.Tapes, p.Barcode)
	}
	return out
}

// OpenIndex fetches the index from the server, which checks its cache and
// reports a rebuilt one itself; warn is not needed here.
// An encrypted saveset's data is opened here too and its label checked, so
// that a wrong key or another saveset's data stops the restore before it
// writes anything (the restorer makes folders from the index before it
// reads data).
func (s *remoteStore) OpenIndex(ss *restorer.Saveset, _ func(msg string)) (*index.Reader, error) {
	idx, err := s.a.fetchIndex(s.ctx, s.job, ss.ID, s.idle)
	if err != nil {
		return nil, err
	}
	if _, err := s.sealedData(ss.ID); err != nil {
		idx.Close()
		return nil, err
	}
	return idx, nil
}

// sealedData is the opened data of encrypted saveset id (nil for a saveset
// in the clear), its label checked.
func (s *remoteStore) sealedData(id int64) (*sealedData, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sealed[id]
	if !ok {
		return nil, nil
	}
	if d := s.opened[id]; d != nil {
		return d, nil
	}
	d := &sealedData{s: s, id: id, rec: rec}
	if err := d.open(); err != nil {
		return nil, err
	}
	if s.opened == nil {
		s.opened = map[int64]*sealedData{}
	}
	s.opened[id] = d
	return d, nil
}

func (s *remoteStore) Data(ss *restorer.Saveset) (stream.FrameSource, error) {
	d, err := s.sealedData(ss.ID)
	if err != nil {
		return nil, err
	}
	if d != nil {
		return d, nil
	}
	return &remoteData{s: s, id: ss.ID}, nil
}

// remoteData reads a saveset's media bytes from a location on.
type remoteData struct {
	s  *remoteStore
	id int64
}

func (d *remoteData) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	var rc io.ReadCloser
	if d.s.tickets {
		tk, err := d.ticket(loc)
		if err != nil && !(d.s.own && apiclient.Code(err) == api.CodeNotFound) { // a server without tickets: read through it
			return nil, err
		}
		if tk.DataURL != "" {
			if rc, err = d.s.a.readNode(d.s.ctx, tk, d.s.idle); err != nil {
				if d.s.ctx.Err() != nil {
					return nil, err
				}
				// A node this agent cannot reach (a firewall, a name that
				// does not resolve here): the server has the same bytes.
				d.s.a.log.Warn("cannot read from the storage node's data port; reading through the server",
					"job", d.s.job, "saveset", d.id, "node", tk.Node, "data_url", tk.DataURL, "err", err)
				rc = nil
			}
		}
	}
	if rc == nil {
		p := jobPath(d.s.job, fmt.Sprintf("/savesets/%d/data?part=%d&offset=%d", d.id, loc.Part, loc.Offset))
		if d.s.own {
			p = fmt.Sprintf("/agent/savesets/%d/data?part=%d&offset=%d", d.id, loc.Part, loc.Offset)
		}
		var err error
		if rc, err = d.s.a.call(d.s.ctx, "GET", p, "", nil, d.s.idle, false); err != nil {
			return nil, err
		}
	}
	if d.s.lim == nil {
		return rc, nil
	}
	// The watch runs only inside the body's reads, not while the limit holds them.
	return &limitedBody{ctx: d.s.ctx, rc: rc, lim: d.s.lim}, nil
}

// limitedBody holds reads of saveset data to the job's rate.
type limitedBody struct {
	ctx context.Context
	rc  io.ReadCloser
	lim *rate.Limiter
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if len(p) > l.lim.Burst() {
		p = p[:l.lim.Burst()]
	}
	n, err := l.rc.Read(p)
	if n > 0 {
		if werr := l.lim.WaitN(l.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }

// progressSink keeps a restore's latest figures for the reporter.
type progressSink struct {
	mu   sync.Mutex
	last api.Progress
	n    int
}

func (p *progressSink) Event(ev monitor.Event) {
	if ev.Kind != monitor.Progress {
		return
	}
	p.mu.Lock()
	p.last = api.Progress{Files: ev.Files, Bytes: ev.Bytes, Path: ev.Path}
	p.n++
	p.mu.Unlock()
}

func (a *Agent) restore(ctx context.Context, o api.Order) error {
	r := o.Restore
	sink := &progressSink{}
	idle := idleOf(o)
	// The restore stops when the server refuses its calls (the job ended
	// there, the agent was revoked) or the agent stops.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	store := &remoteStore{a: a, ctx: ctx, job: o.JobID, idle: idle, tickets: r.Tickets}
	// An unknown scheme fails the restore when the restorer asks for the
	// saveset's record, which notes it again: the result goes to the server.
	_ = store.note(&r.Saveset)
	if r.BWLimit > 0 {
		store.lim = newLimiter(r.BWLimit, time.Now())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Report figures, which also tells the server the agent is alive.
		defer wg.Done()
		t := time.NewTicker(a.opts.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sink.mu.Lock()
				p := sink.last
				sink.mu.Unlock()
				// Refused, the job is over on the server; unanswered for the
				// idle limit, the server has given it up too (it wants a
				// call within that time).
				switch err := a.post(ctx, jobPath(o.JobID, "/progress"), p, idle); {
				case refusal(err):
					stop(fmt.Errorf("%w: %w", ErrJobRefused, err))
					return
				case errors.Is(err, ErrIdle):
					stop(err)
					return
				}
			case <-done:
				return
			}
		}
	}()
	job := restorer.Job{ID: o.JobID, Events: sink, Total: r.Total}
	var out *restorer.Outcome
	var err error
	if into := (plugin.Target{Command: r.ToCommand, Database: r.ToDB, Jobs: r.Jobs, Cluster: r.ToCluster}); into.IsSet() {
		// The server asks; this machine's administrator decides.
		into.Allowed = a.opts.Allow.Plugin
		if err = a.opts.Allow.Target(into); err == nil && r.WAL != "" {
			into.Recovery, err = a.recovery(r)
		}
		if err == nil {
			out, err = restorer.Pipe(ctx, store, restorerSaveset(&r.Saveset), restorer.Into(ctx, into, restorer.Selection{Includes: r.Includes, Paths: r.Paths}), job)
		}
	} else {
		out, err = restorer.Run(ctx, store, restorerSaveset(&r.Saveset), restorer.Options{To: r.To, InPlace: r.InPlace,
			Includes: r.Includes, Paths: r.Paths, Overwrite: r.Overwrite, Sync: r.Sync}, job)
	}
	close(done)
	wg.Wait()
	res := api.RestoreResult{}
	if out != nil {
		res.Outcome = apiOutcome(out)
	}
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		res.Error = err.Error()
	}
	if cause := context.Cause(ctx); ctx.Err() != nil && (errors.Is(cause, ErrJobRefused) || refusal(cause)) {
		return err // the server wants nothing more about this job
	}
	// The result goes out even when the agent is stopping (bounded by the idle limit).
	if perr := a.post(context.WithoutCancel(ctx), jobPath(o.JobID, "/result"), res, idle); perr != nil {
		return fmt.Errorf("sending the result: %w", perr)
	}
	return err
}

// sharedParents returns the parent directories of stream k's paths (1-based)
// that an earlier stream of the split also stores: every stream stores the
// parents of its paths, but only the first to hold one counts it, so that
// the streams' files total those of one backup of the whole selection.
func sharedParents(split [][]string, k int) []string {
	earlier := map[string]bool{}
	for _, part := range split[:k-1] {
		for _, p := range part {
			for d := filepath.Dir(p); ; d = filepath.Dir(d) {
				earlier[d] = true
				if d == filepath.Dir(d) {
					break
				}
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range split[k-1] {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if earlier[d] && !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// SplitPaths divides a selection into n parts of about equal size, for a
// backup split over n drives: the given paths, or if they are fewer than
// n their top-level entries, assigned largest first to the smallest part.
// Every part has at least one path when there are enough entries; the
// walker applies the excludes within each part.
func SplitPaths(paths []string, n int) ([][]string, error) {
	type item struct {
		path string
		size int64
	}
	var items []item
	expand := len(paths) < n
	for _, p := range paths {
		st, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if expand && st.IsDir() {
			ents, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			for _, e := range ents {
				c := filepath.Join(p, e.Name())
				items = append(items, item{c, du(c)})
			}
			continue
		}
		items = append(items, item{p, du(p)})
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].size != items[j].size {
			return items[i].size > items[j].size
		}
		return items[i].path < items[j].path
	})
	parts := make([][]string, n)
	sizes := make([]int64, n)
	for _, it := range items {
		k := 0
		for i := range sizes {
			if sizes[i] < sizes[k] || (sizes[i] == sizes[k] && len(parts[i]) < len(parts[k])) {
				k = i
			}
		}
		parts[k] = append(parts[k], it.path)
		sizes[k] += it.size
	}
	for _, p := range parts {
		sort.Strings(p)
	}
	return parts, nil
}

// du is the bytes of regular files under p.
func du(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// apiOutcome is a restore's outcome on the wire.
func apiOutcome(o *restorer.Outcome) api.RestoreOutcome {
	return api.RestoreOutcome{To: o.To, Phase: api.Phase(o.Phase),
		Files: o.Files, Bytes: o.Bytes, MediaBytes: o.MediaBytes, Warnings: o.Warnings, WarningCount: o.WarningCount,
		Failed: o.Failed, Skipped: o.Skipped, Tapes: o.Tapes, Sources: o.Sources}
}
