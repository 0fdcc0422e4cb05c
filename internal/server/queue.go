package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/service"
)

// queue starts queued jobs when what they need is free: their agent
// online, and for a backup a drive of their library and a writable tape.
// Jobs are considered oldest first; a job that must wait does not hold up
// a younger one that can run (another client, another library).
//
// A drive is reserved with a drive lease in the catalog (job.Registry.
// TakeDrive), not in memory: the job's heartbeat renews it and its end
// releases it, and a CLI job on the same home, or the next server after a
// crash, sees which drive is busy.
type queue struct {
	s     *Server
	kickc chan struct{}

	mu    sync.Mutex
	pools map[int64]poolKey // library and pool of each job of ours holding a drive
}

type poolKey struct{ lib, pool string }

func newQueue(s *Server) *queue {
	return &queue{s: s, kickc: make(chan struct{}, 1), pools: map[int64]poolKey{}}
}

// kick asks the queue to look again.
func (q *queue) kick() {
	select {
	case q.kickc <- struct{}{}:
	default:
	}
}

func (q *queue) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var reclaimed time.Time
	for {
		// Jobs whose process died (another server's, a CLI's) end as
		// interrupted and free their drives: once per heartbeat.
		if now := time.Now(); now.Sub(reclaimed) >= q.s.env.Jobs.Options().Heartbeat {
			reclaimed = now
			if ids, err := q.s.env.ReclaimDeadJobs(); err != nil {
				q.s.log.Error("reclaiming the jobs of dead processes", "err", err)
			} else if len(ids) > 0 {
				q.s.log.Warn("jobs of dead processes marked interrupted", "jobs", ids)
			}
		}
		q.schedule(ctx)
		select {
		case <-ctx.Done():
			q.s.mu.Lock()
			for _, rj := range q.s.running {
				rj.cancel(errStopping)
			}
			q.s.mu.Unlock()
			return
		case <-q.kickc:
		case <-t.C:
		}
	}
}

func (q *queue) release(rj *runningJob) {
	if rj.drive == 0 {
		return
	}
	if err := q.s.env.Jobs.ReleaseDrive(rj.id, rj.lib, rj.drive); err != nil {
		q.s.log.Error("releasing a drive", "job", rj.id, "library", rj.lib, "drive", rj.drive, "err", err)
	}
	q.mu.Lock()
	delete(q.pools, rj.id)
	q.mu.Unlock()
}

func (q *queue) schedule(ctx context.Context) {
	s := q.s
	if ctx.Err() != nil {
		return
	}
	jobs, err := s.env.Catalog.QueuedJobs()
	if err != nil {
		s.log.Error("reading the queue", "err", err)
		return
	}
	p := &pass{busy: map[string]map[int]bool{}, tapes: map[poolKey]int{}}
	for _, j := range jobs {
		s.mu.Lock()
		_, busy := s.running[j.ID]
		s.mu.Unlock()
		if busy {
			continue
		}
		var req api.JobRequest
		if err := json.Unmarshal(j.Request, &req); err != nil {
			q.fail(j, fmt.Errorf("unreadable job request: %w", err))
			continue
		}
		agent := req.Client
		if req.Kind == api.KindRestore && req.ToClient != "" {
			agent = req.ToClient
		}
		if serverOnly(req.Kind) {
			agent = "" // the server alone runs it
		} else if reason, err := q.agentReady(agent); err != nil {
			q.fail(j, err)
			continue
		} else if reason != "" {
			q.wait(j, reason)
			continue
		}
		if reason := q.streamTurn(j, req); reason != "" {
			q.wait(j, reason)
			continue
		}
		rj := &runningJob{id: j.ID, agent: agent, owner: req.Client, req: req}
		if needsDrive(req.Kind) {
			r := req
			if r.Library, err = s.driveLibrary(req); err != nil {
				q.fail(j, err)
				continue
			}
			lib, n, reason := q.reserve(j.ID, r, p)
			if reason != "" {
				q.wait(j, reason)
				continue
			}
			rj.lib, rj.drive = lib, n
		}
		p.starts = append(p.starts, start{j: j, rj: rj})
	}
	q.start(p.starts)
}

// start takes the drives the pass chose for its jobs, in one catalog
// transaction, and starts the jobs that got theirs. A drive another
// process took since the pass read the leases leaves its job queued, and
// the queue looks again.
func (q *queue) start(starts []start) {
	s := q.s
	var claims []catalog.DriveClaim
	for _, st := range starts {
		if st.rj.drive != 0 {
			claims = append(claims, catalog.DriveClaim{Library: st.rj.lib, Drive: st.rj.drive, JobID: st.rj.id})
		}
	}
	var errs []error
	if len(claims) > 0 {
		var err error
		if errs, err = s.env.Jobs.TakeDrives(claims); err != nil {
			errs = make([]error, len(claims))
			for i := range errs {
				errs[i] = err
			}
		}
	}
	again := false
	for _, st := range starts {
		j, rj := st.j, st.rj
		if rj.drive != 0 {
			err := errs[0]
			errs = errs[1:]
			if err != nil {
				q.mu.Lock()
				delete(q.pools, rj.id)
				q.mu.Unlock()
				if errors.Is(err, catalog.ErrLeaseHeld) {
					again = true
					err = fmt.Errorf("drive %d of library %s was taken meanwhile", rj.drive, rj.lib)
				}
				q.wait(j, "waiting for a drive: "+err.Error())
				continue
			}
		}
		jctx, cancel := context.WithCancelCause(s.ctx)
		rj.ctx, rj.cancel = jctx, cancel
		rj.activity.Store(time.Now().UnixNano())
		s.mu.Lock()
		s.running[j.ID] = rj
		s.mu.Unlock()
		s.log.Info("job starting", "job", j.ID, "kind", rj.req.Kind, "client", rj.req.Client, "agent", rj.agent, "library", rj.lib, "drive", rj.drive)
		s.wg.Add(1) // Close waits for the job to record its end
		go func() { defer s.wg.Done(); s.runJob(jctx, j, rj) }()
	}
	if again {
		q.kick()
	}
}

// agentReady says why a job's agent keeps it waiting (not connected), or
// fails it (not enrolled, revoked); "" and nil when it is ready.
func (q *queue) agentReady(agent string) (string, error) {
	c, err := q.s.env.Catalog.Client(agent)
	if err != nil {
		return "", fmt.Errorf("client %s is not enrolled", agent)
	}
	if !c.Revoked.IsZero() {
		return "", fmt.Errorf("client %s was revoked", agent)
	}
	if !q.s.hub.online(agent) {
		return "waiting for agent " + agent + " to connect", nil
	}
	return "", nil
}

// streamTurn says why stream k of a split backup must wait, or "" when it
// may start: once stream k-1 has its saveset (or has ended without one),
// so that the savesets of a split are numbered in stream order. The wait
// holds no drive: a stream waiting for its turn never keeps the one before
// it from starting.
func (q *queue) streamTurn(j *catalog.Job, req api.JobRequest) string {
	if req.Kind != api.KindBackup || req.Streams < 2 || req.Stream < 2 || j.ParentID == 0 {
		return ""
	}
	jobs, err := q.s.env.Catalog.StreamJobs(j.ParentID)
	if err != nil || len(jobs) < req.Stream {
		return "" // not a split this server made: nothing to keep in order
	}
	prev := jobs[req.Stream-2]
	switch prev.State {
	case catalog.StateQueued, catalog.StateWaiting:
	case catalog.StateRunning:
		if prev.SavesetID != 0 {
			return ""
		}
	default: // ended
		return ""
	}
	return fmt.Sprintf("waiting for stream %d of %d (job %d) to start its saveset", req.Stream-1, req.Streams, prev.ID)
}

// pass is what one look at the queue reads once and shares between the
// jobs it considers: which drives hold live leases, and how many writable
// tapes each library and pool has. Without it every queued job cost a
// read of the library's tapes and a write transaction per busy drive, on
// every look (and a look comes with every job submitted or ended): a
// hundred jobs queued at once started one by one behind those.
type pass struct {
	busy   map[string]map[int]bool // library → drives with a live lease (or chosen in this pass)
	tapes  map[poolKey]int         // library and pool → writable tapes (engine.WritableTapes)
	starts []start                 // the jobs to start, with their drives
}

// start is a job a pass starts, and the drive it chose for it.
type start struct {
	j  *catalog.Job
	rj *runningJob
}

// reserve chooses a free drive of the job's library, when a backup needs
// it also a writable tape, or says why it cannot. A drive is free when no
// job holds a live lease on it, whatever process runs that job; start
// takes the chosen drives' leases, which decides a race with another
// process.
func (q *queue) reserve(id int64, req api.JobRequest, p *pass) (string, int, string) {
	s := q.s
	lib, err := s.env.Changer(req.Library)
	if err != nil {
		return "", 0, "waiting for library: " + err.Error()
	}
	cfg := lib.Config()
	q.mu.Lock()
	defer q.mu.Unlock()
	key := poolKey{cfg.Name, req.Pool}
	if needsTape(req.Kind) {
		n, ok := p.tapes[key]
		if !ok {
			if n, err = s.env.WritableTapes(lib, req.Pool); err != nil {
				return "", 0, "waiting for a tape: " + err.Error()
			}
			p.tapes[key] = n
		}
		inPool := 0
		for _, k := range q.pools {
			if k == key {
				inPool++
			}
		}
		if n <= inPool {
			what := "no free writable tape"
			if req.Pool != "" {
				what = fmt.Sprintf("no free writable tape in pool %s or scratch", req.Pool)
			}
			return "", 0, fmt.Sprintf("waiting for a tape (library %s has %s: kura tape add --vtl %s)", cfg.Name, what, cfg.Name)
		}
	}
	busy, ok := p.busy[cfg.Name]
	if !ok {
		leases, err := s.env.Catalog.LiveDriveLeases(s.env.Jobs.Options().Clock.Now())
		if err != nil {
			return "", 0, "waiting for a drive: " + err.Error()
		}
		busy = map[int]bool{}
		for _, l := range leases {
			if l.Library == cfg.Name {
				busy[l.Drive] = true
			}
		}
		p.busy[cfg.Name] = busy
	}
	free := 0
	for n := 1; n <= cfg.Drives; n++ {
		if !busy[n] && (req.Drive == 0 || req.Drive == n) {
			free = n
			busy[n] = true // chosen: start takes it with the pass's others
			break
		}
	}
	if free == 0 {
		if req.Drive != 0 {
			return "", 0, fmt.Sprintf("waiting for a drive (drive %d of library %s is busy)", req.Drive, cfg.Name)
		}
		if cfg.Drives == 1 {
			return "", 0, fmt.Sprintf("waiting for a drive (the one drive of library %s is busy)", cfg.Name)
		}
		return "", 0, fmt.Sprintf("waiting for a drive (all %d drives of library %s are busy)", cfg.Drives, cfg.Name)
	}
	if needsTape(req.Kind) {
		q.pools[id] = key
	}
	return cfg.Name, free, ""
}

// wait records why a job waits, when that changed.
func (q *queue) wait(j *catalog.Job, reason string) {
	if j.Reason == reason && j.State == catalog.StateWaiting {
		return
	}
	if err := q.s.env.Catalog.SetJobReason(j.ID, catalog.StateWaiting, reason); err != nil {
		q.s.log.Error("recording a job's reason", "job", j.ID, "err", err)
		return
	}
	q.s.bus.Event(monitor.Event{Kind: monitor.Queued, Time: q.s.opts.Clock.Now(), JobID: j.ID, Message: reason})
}

// fail ends a queued job that can never run.
func (q *queue) fail(j *catalog.Job, err error) {
	now := q.s.opts.Clock.Now()
	j.State, j.Error, j.Reason, j.Finished = catalog.StateFailed, err.Error(), "", now
	j.ErrorCode, j.ErrorField = service.Classify(err)
	if j.Started.IsZero() {
		j.Started = now
	}
	if uerr := q.s.env.Catalog.UpdateJob(j); uerr != nil {
		q.s.log.Error("recording a failed job", "job", j.ID, "err", uerr)
		return
	}
	q.s.log.Warn("job failed in the queue", "job", j.ID, "err", err)
	q.s.bus.Event(monitor.Event{Kind: monitor.JobEnded, JobID: j.ID, Message: j.State})
}
