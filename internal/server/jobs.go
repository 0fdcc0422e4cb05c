package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/units"
)

// runningJob is a job the server has started.
type runningJob struct {
	id     int64
	agent  string // the agent that does the client side
	owner  string // whose data (the client of the saveset)
	req    api.JobRequest
	lib    string
	drive  int // 0: holds no drive
	ctx    context.Context
	cancel context.CancelCauseFunc

	activity atomic.Int64 // unix nanos of the agent's last call for this job
	started  atomic.Bool  // the agent has called about the job

	mu      sync.Mutex
	prod    *production              // backup: the stream being received
	allowed map[int64]bool           // restore: savesets the agent may read
	result  chan api.RestoreResult   // restore: the agent's outcome
	prog    func(api.Progress) error // restore: live figures
	tape    string                   // restore: the tape the agent's data is read from now
	reads   []nodeRead               // restore: read tickets on storage nodes, cancelled at the end
	readEnd bool                     // restore: the tickets were cancelled; no more are taken
}

// setTape notes the tape a restore's data is read from now.
func (rj *runningJob) setTape(barcode string) {
	rj.mu.Lock()
	rj.tape = barcode
	rj.mu.Unlock()
}

func (rj *runningJob) touch(now time.Time) {
	rj.started.Store(true)
	rj.activity.Store(now.UnixNano())
}

// validate checks a job request before it is queued: the request itself
// (JobRequest.Validate), then what it names against the server's state.
func (s *Server) validate(req *api.JobRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if serverOnly(req.Kind) {
		return s.validateServerOnly(req)
	}
	owner, err := s.env.Catalog.Client(req.Client)
	if err != nil {
		return missing("client", "no client named %q is enrolled", req.Client)
	}
	if !owner.Revoked.IsZero() && (req.Kind == api.KindBackup || req.ToClient == "") {
		// Its savesets stay restorable onto another client.
		return apiErr(api.CodeForbidden, "client %s is revoked; restore its savesets onto another client with to_client", req.Client)
	}
	switch req.Kind {
	case api.KindBackup:
		if req.Selection != "" {
			if _, err := s.env.Catalog.Selection(req.Client, req.Selection); err != nil {
				return badField("selection", "client %s has no selection set %q", req.Client, req.Selection)
			}
		}
		// A library or drive that does not exist would wait forever; a
		// library whose storage node is offline waits for it, with why.
		lib, err := s.env.Changer(req.Library)
		if errors.Is(err, engine.ErrNodeOffline) {
			break
		}
		if err != nil {
			return badField("library", "%v", err)
		}
		if n := lib.Config().Drives; req.Drive > n {
			return badField("drive", "library %s has drives 1 to %d, not %d", lib.Config().Name, n, req.Drive)
		}
	case api.KindRestore:
		if req.Saveset != 0 {
			ss, err := s.env.Catalog.Saveset(req.Saveset)
			if err != nil {
				return missing("saveset", "no saveset %d", req.Saveset)
			}
			if ss.Client != req.Client {
				return badField("saveset", "saveset %d belongs to client %q, not %q (say --client %s)", ss.ID, ss.Client, req.Client, ss.Client)
			}
		}
		if req.ToClient != "" {
			c, err := s.env.Catalog.Client(req.ToClient)
			if err != nil {
				return missing("client", "no client named %q is enrolled", req.ToClient)
			}
			if !c.Revoked.IsZero() {
				return badField("to_client", "client %s is revoked", req.ToClient)
			}
		}
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (s *Server) postJob(w http.ResponseWriter, r *http.Request) error {
	var req api.JobRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	ids, err := s.Submit(req)
	if err != nil {
		return err
	}
	return writeJSONStatus(w, http.StatusAccepted, api.JobsSubmitted{Jobs: ids})
}

// Submit queues a job (one per stream) and returns the job IDs.
func (s *Server) Submit(req api.JobRequest) ([]int64, error) {
	if err := s.validate(&req); err != nil {
		return nil, err
	}
	n := max(req.Streams, 1)
	var ids []int64
	var parent int64
	for k := 1; k <= n; k++ {
		one := req
		if n > 1 {
			one.Stream = k
		}
		b, _ := json.Marshal(one)
		j := &catalog.Job{Kind: req.Kind, State: catalog.StateQueued, Client: req.Client, Selection: req.Selection,
			Level: req.Level, Request: b, ParentID: parent, Reason: "queued"}
		if req.Kind != api.KindBackup && req.Kind != api.KindVerify {
			j.Level = "" // a verify's level is the verify level, as the engine records it
		}
		if err := s.env.Catalog.CreateJob(j); err != nil {
			return ids, err
		}
		if k == 1 {
			parent = j.ID
		}
		ids = append(ids, j.ID)
		s.log.Info("job queued", "job", j.ID, "kind", req.Kind, "client", req.Client)
	}
	s.q.kick()
	return ids, nil
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.Cancel(id, "canceled by the admin"); err != nil {
		return err
	}
	j, err := s.env.Catalog.Job(id)
	if err != nil {
		return err
	}
	return writeJSON(w, apiJob(s, j))
}

// Cancel stops a running job or takes a queued one off the queue.
func (s *Server) Cancel(id int64, why string) error {
	s.mu.Lock()
	rj := s.running[id]
	s.mu.Unlock()
	if rj != nil {
		rj.cancel(fmt.Errorf("%w: %s", context.Canceled, why))
		return nil
	}
	j, err := s.env.Catalog.Job(id)
	if err != nil {
		return err
	}
	if jobDone(j.State) {
		return apiErr(api.CodeConflict, "job %d has ended (%s)", id, j.State)
	}
	j.State, j.Error, j.Finished, j.Reason = catalog.StateCanceled, why, s.opts.Clock.Now(), ""
	if j.Started.IsZero() {
		j.Started = j.Finished // it never ran
	}
	if err := s.env.Catalog.UpdateJob(j); err != nil {
		return err
	}
	s.bus.Event(monitor.Event{Kind: monitor.JobEnded, JobID: id, Message: j.State})
	return nil
}

// cancelJobsOf cancels the running jobs an agent takes part in.
func (s *Server) cancelJobsOf(client, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rj := range s.running {
		if rj.agent == client {
			rj.cancel(errors.New(why))
		}
	}
}

// runJob runs a started job to its end and frees its drive.
func (s *Server) runJob(ctx context.Context, j *catalog.Job, rj *runningJob) {
	defer func() {
		s.mu.Lock()
		delete(s.running, j.ID)
		s.mu.Unlock()
		s.q.release(rj)
		s.q.kick()
	}()
	defer rj.cancel(nil)
	var err error
	switch rj.req.Kind {
	case api.KindBackup:
		err = s.runBackup(ctx, j, rj)
	case api.KindRestore:
		err = s.runRestore(ctx, j, rj)
	default:
		err = s.runServerOnly(ctx, j, rj)
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	if j.State == catalog.StateQueued || j.State == catalog.StateWaiting || (j.State == catalog.StateRunning && j.Finished.IsZero()) {
		// The job failed before the engine took it: record why.
		if err == nil {
			err = errors.New("the job ended without a result")
		}
		j.State, j.Error, j.Finished, j.Reason = catalog.StateFailed, err.Error(), s.opts.Clock.Now(), ""
		j.ErrorCode, j.ErrorField = service.Classify(err)
		if j.Started.IsZero() {
			j.Started = j.Finished
		}
		if uerr := s.env.Catalog.UpdateJob(j); uerr != nil {
			s.log.Error("recording a failed job", "job", j.ID, "err", uerr)
		}
		s.bus.Event(monitor.Event{Kind: monitor.JobEnded, JobID: j.ID, Message: j.State})
	}
	s.log.Info("job ended", "job", j.ID, "kind", rj.req.Kind, "client", rj.owner, "state", j.State, "err", errText(err))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// jobEnv is the server's engine environment acting for a client.
func (s *Server) jobEnv(client string) *engine.Env {
	e := *s.env
	e.Client = client
	return &e
}

func (s *Server) runBackup(ctx context.Context, j *catalog.Job, rj *runningJob) error {
	req := rj.req
	level, _ := compress.ParseLevel(orDefault(req.Compress, "auto"))
	bw := req.BWLimit
	cl, err := s.env.Catalog.Client(req.Client)
	if err != nil {
		return err
	}
	if bw == 0 {
		bw = cl.BWLimit
	}
	// The client's setting or its policy's turns encryption on; neither
	// turns the other's off.
	sealed := cl.Encrypt
	if req.Policy != "" && !sealed {
		p, err := s.env.Catalog.Policy(req.Policy)
		switch {
		case err == nil:
			sealed = p.Encrypt
		case !errors.Is(err, catalog.ErrNotFound): // a policy removed since: the client's setting
			return err
		}
	}
	opts := engine.BackupOptions{Paths: req.Paths, Selection: req.Selection, Library: req.Library, Drive: rj.drive,
		Level: orDefault(req.Level, engine.LevelFull), Compress: level, Excludes: req.Excludes, Verify: req.Verify,
		Label: req.Label, FrameSize: req.FrameSize, Host: req.Client, Job: j, Policy: req.Policy, Pool: req.Pool,
		Producer: &remoteProducer{s: s, rj: rj, bwlimit: bw}, Sources: plugin.FromAPI(req.Sources), PartSize: req.PartSize,
		Sealed: sealed}
	if req.Streams > 1 {
		opts.KeySuffix = fmt.Sprintf("#%d/%d", req.Stream, req.Streams)
		if opts.Label == "" {
			opts.Label = fmt.Sprintf("stream %d of %d", req.Stream, req.Streams)
		}
	}
	env := s.jobEnv(req.Client)
	res, err := env.Backup(ctx, opts)
	if res != nil && res.Note != "" {
		s.log.Info("backup note", "job", j.ID, "note", res.Note)
	}
	if res != nil && res.Figures.SavesetID != 0 && (err == nil || errors.Is(err, engine.ErrWarnings)) && req.Policy != "" {
		s.copyStep(req.Policy, res.Figures.SavesetID)
	}
	if bw > 0 && err == nil {
		s.log.Info("backup within bandwidth limit", "job", j.ID, "limit", units.FormatSize(bw)+"/s")
	}
	return err
}

// copyStep queues the second copy a policy asks for: a copy job of its
// own, which takes a drive of the copy's library through the queue; a
// failed copy fails that job, not the backup.
func (s *Server) copyStep(policy string, id int64) {
	p, err := s.env.Catalog.Policy(policy)
	if err != nil || p.CopyTo == "" {
		return
	}
	ids, err := s.Submit(api.JobRequest{Kind: api.KindCopy, Saveset: id, Library: p.CopyTo, Verify: p.Verify})
	if err != nil {
		s.log.Error("policy copy step not queued", "policy", policy, "saveset", id, "to", p.CopyTo, "err", err)
		return
	}
	s.log.Info("policy copy step queued", "policy", policy, "saveset", id, "to", p.CopyTo, "job", ids[0])
}

func (s *Server) runRestore(ctx context.Context, j *catalog.Job, rj *runningJob) error {
	req := rj.req
	opts := engine.RestoreOptions{SavesetID: req.Saveset, Latest: req.Latest, Selection: req.Selection, At: req.At,
		To: req.To, InPlace: req.InPlace, Includes: req.Includes, Paths: req.RestorePaths, Overwrite: req.Overwrite, Sync: req.Sync,
		Into: plugin.Target{Command: req.ToCommand, Database: req.ToDB, Jobs: req.Jobs, Cluster: req.ToCluster,
			Recovery: plugin.Recovery{Cluster: req.WAL}}} // which base backups --wal may pick (engine.ChooseSaveset)
	env := s.jobEnv(req.Client)
	defer s.endReads(rj)
	_, err := env.RestoreWith(ctx, j, opts, func(ss *catalog.Saveset, _, total int64) (*engine.RestoreOutcome, error) {
		allowed := map[int64]bool{}
		for cur := ss; cur != nil; {
			allowed[cur.ID] = true
			if cur.BaseID == 0 {
				break
			}
			next, err := s.env.Catalog.Saveset(cur.BaseID)
			if err != nil {
				break
			}
			cur = next
		}
		rj.mu.Lock()
		rj.allowed = allowed
		rj.result = make(chan api.RestoreResult, 1)
		rj.prog = func(p api.Progress) error {
			// The tape in use, as a local restore's progress shows it: the
			// server reads the tapes the agent's data comes from.
			rj.mu.Lock()
			tape := rj.tape
			rj.mu.Unlock()
			env.Events.Event(monitor.Event{Kind: monitor.Progress, Time: s.opts.Clock.Now(), JobID: j.ID, Phase: "restore",
				Files: p.Files, Bytes: p.Bytes, Path: p.Path, Total: total, Tape: tape})
			return nil
		}
		rj.mu.Unlock()
		to := req.To
		if req.InPlace {
			to = "/"
		}
		bw := req.BWLimit
		if bw == 0 {
			if c, err := s.env.Catalog.Client(rj.agent); err == nil {
				bw = c.BWLimit
			}
		}
		order := api.Order{JobID: j.ID, Kind: api.KindRestore, Issued: s.opts.Clock.Now(),
			Restore: &api.RestoreOrder{Saveset: APISaveset(ss), To: req.To, InPlace: req.InPlace, Includes: req.Includes, Paths: req.RestorePaths, Overwrite: req.Overwrite, Sync: req.Sync,
				Total: total, BWLimit: bw, ToCommand: req.ToCommand, ToDB: req.ToDB, Jobs: req.Jobs, ToCluster: req.ToCluster,
				WAL: req.WAL, WALRestoreCommand: req.WALRestoreCommand, Tickets: s.nodes.anyDataPort()}}
		if req.WAL != "" && !req.At.IsZero() {
			order.Restore.WALAt = req.At.Format(time.RFC3339Nano)
		}
		if err := s.hub.send(rj.agent, order); err != nil {
			return nil, err
		}
		if rj.agent != ss.Client {
			s.log.Info("cross-client restore", "job", j.ID, "saveset", ss.ID, "of", ss.Client, "onto", rj.agent)
		}
		res, err := s.waitAgent(ctx, rj, rj.result)
		if err != nil {
			return &engine.RestoreOutcome{To: to}, err
		}
		out := engineOutcome(res.Outcome)
		if res.Error != "" {
			return &out, fmt.Errorf("on client %s: %s", rj.agent, res.Error)
		}
		return &out, nil
	})
	return err
}

// waitAgent waits for a value from the agent, failing when the agent does
// not start within StartTimeout or falls silent for IdleTimeout.
func waitFor[T any](s *Server, ctx context.Context, rj *runningJob, ch <-chan T) (T, error) {
	var zero T
	start := time.Now() // timeouts run on real time; the clock is for schedules and records
	tick := time.NewTicker(min(s.opts.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case v := <-ch:
			return v, nil
		case <-ctx.Done():
			return zero, context.Cause(ctx)
		case <-tick.C:
			now := time.Now()
			if !rj.started.Load() {
				if now.Sub(start) > s.opts.StartTimeout {
					return zero, fmt.Errorf("agent %s %w the job within %s (is it running?)", rj.agent, ErrAgentNotStarted, s.opts.StartTimeout)
				}
				continue
			}
			if silent := now.Sub(time.Unix(0, rj.activity.Load())); silent > s.opts.IdleTimeout {
				return zero, fmt.Errorf("%w: agent %s sent nothing for %s", errAgentGone, rj.agent, silent.Round(time.Second))
			}
		}
	}
}

func (s *Server) waitAgent(ctx context.Context, rj *runningJob, ch <-chan api.RestoreResult) (api.RestoreResult, error) {
	return waitFor(s, ctx, rj, ch)
}
