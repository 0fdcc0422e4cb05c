package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/node"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/units"
)

// remoteProducer is the server's side of a backup through an agent: it
// orders the agent to produce the stream and feeds the frames it sends to
// the drive's span writer.
type remoteProducer struct {
	s       *Server
	rj      *runningJob
	bwlimit int64
}

var _ engine.Producer = (*remoteProducer)(nil)

// production is one agent stream being received.
type production struct {
	spec   engine.ProduceSpec
	sink   stream.FrameSink
	idx    io.Writer
	hooks  engine.ProduceHooks
	once   sync.Once
	attach chan struct{}        // closed when the agent's data stream arrives
	done   chan prodResult      // the data stream ended (or broke)
	close  chan api.BackupClose // the final frame table and saveset record
	index  chan error           // the agent's index has been received
}

// claim takes the one place of the data stream, for its handler or for
// Produce giving up on it; it reports whether the caller got it.
func (p *production) claim() bool {
	first := false
	p.once.Do(func() { first = true; close(p.attach) })
	return first
}

type prodResult struct {
	frames []index.Frame
	end    api.BackupEnd
	err    error
}

func (p *remoteProducer) Produce(ctx context.Context, spec engine.ProduceSpec, sink stream.FrameSink, idx io.Writer, hooks engine.ProduceHooks) (*engine.Produced, error) {
	s, rj := p.s, p.rj
	// The saveset exists now: the next stream of a split may start
	// (queue.streamTurn).
	s.q.kick()
	prod := &production{spec: spec, sink: sink, idx: idx, hooks: hooks, attach: make(chan struct{}),
		done: make(chan prodResult, 1), close: make(chan api.BackupClose, 1), index: make(chan error, 1)}
	rj.mu.Lock()
	rj.prod = prod
	allowed := map[int64]bool{}
	if spec.BaseID != 0 {
		allowed[spec.BaseID] = true
	}
	rj.allowed = allowed
	rj.mu.Unlock()
	order := api.Order{JobID: rj.id, Kind: api.KindBackup, Issued: s.opts.Clock.Now(), Backup: &api.BackupOrder{
		Paths: spec.Paths, Excludes: spec.Excludes, Compress: spec.Compress.String(), FrameSize: spec.FrameSize,
		BaseID: spec.BaseID, BWLimit: p.bwlimit, Stream: rj.req.Stream, Streams: rj.req.Streams,
		Sources: plugin.ToAPI(spec.Sources), PartSize: spec.PartSize}}
	if spec.Sealed {
		rec, err := s.recoveryRecipients()
		if err != nil {
			return nil, err
		}
		order.Backup.Encrypt, order.Backup.Recipients, order.Backup.Label = true, rec, spec.Label
	}
	if spec.Span != nil {
		if conn, dev, ok := node.SpanOn(spec.Span.Device); ok {
			return p.produceOnNode(ctx, conn, dev, prod, order)
		}
	}
	if err := s.hub.send(rj.agent, order); err != nil {
		return nil, err
	}
	// Wait for the agent to start streaming. Once Produce returns the
	// engine aborts sink, so no handler may be writing to it then: a
	// stream that arrived is waited for (the job's end cuts its reads at
	// once), and one that did not is shut out.
	t := time.NewTimer(s.opts.StartTimeout)
	defer t.Stop()
	select {
	case <-prod.attach:
	case <-t.C:
		if prod.claim() {
			return nil, fmt.Errorf("agent %s %w the backup within %s (is it running?)", rj.agent, ErrAgentNotStarted, s.opts.StartTimeout)
		}
		// It came just now: take it.
	case <-ctx.Done():
		if !prod.claim() {
			<-prod.done
		}
		return nil, context.Cause(ctx)
	}
	var res prodResult
	select {
	case res = <-prod.done:
	case <-ctx.Done():
		<-prod.done
		return nil, context.Cause(ctx)
	}
	if res.err != nil {
		return nil, res.err
	}
	return &engine.Produced{Frames: res.frames, Files: res.end.Files, Entries: res.end.Entries, Untrusted: true,
		FinishIndex: func(frames []index.Frame, meta []byte) error {
			prod.close <- api.BackupClose{Frames: apiFrames(frames), Meta: meta}
			err, werr := waitFor(s, ctx, rj, prod.index)
			if werr != nil {
				return werr
			}
			return err
		}}, nil
}

// agentBackupData receives a backup's stream from the agent.
func (s *Server) agentBackupData(w http.ResponseWriter, r *http.Request, client string) error {
	rj, err := s.agentJob(r, client)
	if err != nil {
		return err
	}
	rj.mu.Lock()
	prod := rj.prod
	rj.mu.Unlock()
	if prod == nil {
		return apiErr(api.CodeConflict, "job %d is not a backup waiting for data", rj.id)
	}
	if !prod.claim() {
		return apiErr(api.CodeConflict, "job %d takes no data stream now (it has one, or it is ending)", rj.id)
	}
	res := s.receive(w, r, rj, prod)
	prod.done <- res
	if res.err != nil {
		return apiErr(api.CodeStreamFailed, "backup stream of job %d: %v", rj.id, res.err)
	}
	// The engine closes the tape files and sends back the final frame
	// table and record; the agent closes its index with them.
	select {
	case c := <-prod.close:
		return writeJSON(w, c)
	case <-rj.ctx.Done():
		return apiErr(api.CodeConflict, "job %d ended: %v", rj.id, context.Cause(rj.ctx))
	case <-r.Context().Done():
		return nil
	}
}

// receive reads the data stream, each read bounded by the idle timeout so a
// silent agent fails the job instead of holding the drive.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, rj *runningJob, prod *production) prodResult {
	body, stop := s.agentBody(w, r, rj)
	defer stop()
	var (
		res    prodResult
		prevSB int64
		prevF  int64
	)
	// Every frame is checked before it goes to tape: a corrupting agent or
	// link fails the backup now, not a verify later. The check and the
	// write run on a goroutine of their own (frameWriter), so that reading
	// and decrypting the next frames, this loop's work, goes on meanwhile.
	chk, err := stream.NewFrameChecker()
	if err != nil {
		res.err = err
		return res
	}
	defer chk.Close()
	if prod.spec.Sealed {
		// Ciphertext: only the client's key authenticates it (a restore or
		// a data verify on its agent does); TLS guarded it on the way.
		chk = nil
	}
	fw := newFrameWriter(rj.agent, chk, prod)
	fail := func(err error) prodResult {
		res.frames, _ = fw.finish()
		res.err = fmt.Errorf("agent %s: the data stream broke after %s: %w", rj.agent, units.FormatSize(body.n.Load()), err)
		return res
	}
	// stopped ends the stream on the frame writer's failure; a job that was
	// cancelled meanwhile (revoked, shut down) ends with why it was.
	stopped := func() prodResult {
		res.frames, res.err = fw.finish()
		if rj.ctx.Err() != nil {
			res.err = context.Cause(rj.ctx)
		}
		return res
	}
	for {
		if fw.failed() != nil {
			return stopped()
		}
		buf := fw.buffer()
		typ, payload, err := api.ReadMsg(body, buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			if rj.ctx.Err() != nil {
				err = context.Cause(rj.ctx)
			} else if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w: nothing for %s", errAgentGone, s.opts.IdleTimeout)
			}
			if fw.failed() != nil { // the cause, not its echo
				return stopped()
			}
			return fail(err)
		}
		rj.touch(time.Now())
		if typ == api.MsgFrame {
			fw.write(payload, body.n.Load())
			continue
		}
		switch typ {
		case api.MsgProgress:
			var p api.Progress
			if err := json.Unmarshal(payload, &p); err != nil {
				return fail(fmt.Errorf("%w: %v", api.ErrBadMsg, err))
			}
			if p.Bytes > prevSB {
				prod.hooks.Phase.Source.Add(p.Bytes - prevSB)
				prevSB = p.Bytes
			}
			if p.Files > prevF {
				prod.hooks.Phase.Files.Add(p.Files - prevF)
				prevF = p.Files
			}
			if prod.hooks.Tick != nil {
				prod.hooks.Tick(p.Path)
			}
		case api.MsgWarning:
			var wm api.Warning
			if err := json.Unmarshal(payload, &wm); err != nil {
				return fail(fmt.Errorf("%w: %v", api.ErrBadMsg, err))
			}
			prod.hooks.Warn(wm.FilePath(), wm.Message)
		case api.MsgAbort:
			var wm api.Warning
			_ = json.Unmarshal(payload, &wm)
			res.frames, _ = fw.finish()
			res.err = fmt.Errorf("agent %s gave up: %s", rj.agent, wm.Message)
			return res
		case api.MsgEnd:
			if err := json.Unmarshal(payload, &res.end); err != nil {
				return fail(fmt.Errorf("%w: %v", api.ErrBadMsg, err))
			}
			// Every frame is on tape (or the first failure is known)
			// before the stream counts as received.
			res.frames, res.err = fw.finish()
			return res
		}
		fw.reuse(payload)
	}
}

// agentBody is the body of an agent's call about a job: every read is
// bounded by the idle timeout, and the job's end (admin, revocation,
// shutdown) cuts it at once. A stalled agent cannot hold a handler.
func (s *Server) agentBody(w http.ResponseWriter, r *http.Request, rj *runningJob) (*idleReader, func()) {
	rc := http.NewResponseController(w)
	body := &idleReader{r: r.Body, rc: rc, idle: s.opts.IdleTimeout}
	stop := context.AfterFunc(rj.ctx, body.cut)
	return body, func() {
		stop()
		body.finish()
	}
}

// agentWriter is the answer to an agent's call about a job: every write is
// bounded by the idle timeout (an agent that stops reading fails it rather
// than holding the handler), and the job's end cuts it at once.
func (s *Server) agentWriter(w http.ResponseWriter, rj *runningJob) (*idleWriter, func()) {
	rc := http.NewResponseController(w)
	iw := &idleWriter{w: w, rc: rc, idle: s.opts.IdleTimeout}
	stop := context.AfterFunc(rj.ctx, iw.cut)
	return iw, func() {
		stop()
		iw.finish()
	}
}

// idleWriter renews a write deadline as bytes go out, in pieces small
// enough to go out within the timeout under a low bandwidth limit.
type idleWriter struct {
	w    io.Writer
	rc   *http.ResponseController
	idle time.Duration
	n    atomic.Int64 // bytes written

	mu       sync.Mutex
	cutOff   bool
	finished bool // the handler is done with the answer: cut does nothing
	renewed  time.Time
}

// idleChunk is the most one write hands on: 64 KiB take 4 s at 16 KiB/s.
const idleChunk = 64 << 10

func (d *idleWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		d.mu.Lock()
		if d.cutOff {
			d.mu.Unlock()
			return n, os.ErrDeadlineExceeded
		}
		if now := time.Now(); now.Sub(d.renewed) > d.idle/8 {
			_ = d.rc.SetWriteDeadline(now.Add(d.idle))
			d.renewed = now
		}
		d.mu.Unlock()
		k := min(len(p), idleChunk)
		m, err := d.w.Write(p[:k])
		n += m
		d.n.Add(int64(m))
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// cut ends the answer now. A cut that comes after finish (the job ended
// as the handler returned: stop cannot recall an AfterFunc already
// started) does nothing: the response writer is no longer the handler's.
func (d *idleWriter) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finished {
		return
	}
	d.cutOff = true
	_ = d.rc.SetWriteDeadline(time.Now())
}

// finish clears the deadline; after it, cut does nothing. The handler
// calls it before it returns.
func (d *idleWriter) finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finished = true
	_ = d.rc.SetWriteDeadline(time.Time{})
}

// idleReader bounds the reads of an agent's data stream by the idle
// timeout, renewed as bytes arrive rather than per message: under a low
// bandwidth limit one frame may take longer than the timeout to come in.
// The silence it lets pass is between 7/8 of the timeout and the timeout.
type idleReader struct {
	r    io.Reader
	rc   *http.ResponseController
	idle time.Duration
	n    atomic.Int64 // bytes read

	mu       sync.Mutex
	cutOff   bool
	finished bool // the handler is done with the request: cut does nothing
	renewed  time.Time
}

func (d *idleReader) Read(p []byte) (int, error) {
	d.mu.Lock()
	if d.cutOff {
		d.mu.Unlock()
		return 0, os.ErrDeadlineExceeded
	}
	if now := time.Now(); now.Sub(d.renewed) > d.idle/8 {
		_ = d.rc.SetReadDeadline(now.Add(d.idle))
		d.renewed = now
	}
	d.mu.Unlock()
	n, err := d.r.Read(p)
	d.n.Add(int64(n))
	return n, err
}

// cut ends the stream now: the pending read fails, and so does every later one.
// A cut after finish does nothing (see idleWriter.cut).
func (d *idleReader) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finished {
		return
	}
	d.cutOff = true
	_ = d.rc.SetReadDeadline(time.Now())
}

// finish clears the deadline; after it, cut does nothing. The handler
// calls it before it returns.
func (d *idleReader) finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finished = true
	_ = d.rc.SetReadDeadline(time.Time{})
}

// agentBackupIndex receives the agent's finished index.
func (s *Server) agentBackupIndex(w http.ResponseWriter, r *http.Request, client string) error {
	rj, err := s.agentJob(r, client)
	if err != nil {
		return err
	}
	rj.mu.Lock()
	prod := rj.prod
	rj.mu.Unlock()
	if prod == nil {
		return apiErr(api.CodeConflict, "job %d is not a backup", rj.id)
	}
	body, stop := s.agentBody(w, r, rj)
	_, err = io.Copy(prod.idx, &touchReader{r: body, touch: func() { rj.touch(time.Now()) }})
	stop()
	if err != nil {
		err = fmt.Errorf("agent %s: receiving the index: %w", client, err)
	}
	prod.index <- err
	if err != nil {
		return apiErr(api.CodeStreamFailed, "%v", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type touchReader struct {
	r     io.Reader
	touch func()
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.touch()
	return n, err
}

// agentSavesetOf checks that the agent may read a saveset for this job.
func (s *Server) agentSavesetOf(r *http.Request, client string) (*runningJob, *catalog.Saveset, error) {
	rj, err := s.agentJob(r, client)
	if err != nil {
		return nil, nil, err
	}
	id, err := pathID(r, "ss")
	if err != nil {
		return nil, nil, err
	}
	rj.mu.Lock()
	ok := rj.allowed[id]
	rj.mu.Unlock()
	if !ok {
		s.log.Warn("refused: agent asked for a saveset outside its job", "client", client, "job", rj.id, "saveset", id)
		return nil, nil, apiErr(api.CodeForbidden, "saveset %d is not part of job %d", id, rj.id)
	}
	// The record to read: the saveset's own tapes, or a copy whose tapes
	// are online when its own are exported.
	ss, err := engine.EnvStore{Env: s.env}.Saveset(id)
	if err != nil {
		return nil, nil, err
	}
	return rj, ss, nil
}

func (s *Server) agentSaveset(w http.ResponseWriter, r *http.Request, client string) error {
	_, ss, err := s.agentSavesetOf(r, client)
	if err != nil {
		return err
	}
	return writeJSON(w, APISaveset(ss))
}

func (s *Server) agentSavesetIndex(w http.ResponseWriter, r *http.Request, client string) error {
	rj, ss, err := s.agentSavesetOf(r, client)
	if err != nil {
		return err
	}
	f, _, err := s.sendIndexFile(w, ss)
	if err != nil {
		return err
	}
	defer f.Close()
	out, stop := s.agentWriter(w, rj)
	defer stop()
	if _, err := io.Copy(out, f); err != nil {
		s.log.Warn("agent stopped taking an index", "client", client, "job", rj.id, "saveset", ss.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// sendIndexFile opens the checked index file of ss and sets the headers of
// a response that sends it whole; the caller sends it and closes it.
func (s *Server) sendIndexFile(w http.ResponseWriter, ss *catalog.Saveset) (*os.File, os.FileInfo, error) {
	p, err := s.env.IndexFile(ss)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	return f, st, nil
}

// agentSavesetData streams a saveset's media bytes from a frame location
// (?part=P&offset=O) to the end of its data.
func (s *Server) agentSavesetData(w http.ResponseWriter, r *http.Request, client string) error {
	rj, ss, err := s.agentSavesetOf(r, client)
	if err != nil {
		return err
	}
	part, off, err := dataLocation(r, ss)
	if err != nil {
		return err
	}
	src, err := engine.EnvStore{Env: s.env}.Data(ss)
	if err != nil {
		return err
	}
	src = engine.NoteTapes(src, ss.Parts, rj.setTape)
	rc, err := src.OpenAt(stream.Location{Part: part, Offset: off})
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	out, stop := s.agentWriter(w, rj)
	defer stop()
	buf := make([]byte, 256<<10)
	for {
		n, rerr := rc.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				// The agent went away, sought elsewhere, or stopped
				// reading for the idle timeout; or the job ended.
				if rj.ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
					// Cut the stream, so the agent sees it broken, not ended.
					s.log.Warn("agent stopped taking saveset data", "client", client, "job", rj.id, "saveset", ss.ID, "err", err)
					panic(http.ErrAbortHandler)
				}
				return nil
			}
			rj.touch(time.Now())
			s.dataSent.Add(int64(n))
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			// Headers are gone: cut the stream so the agent sees damage.
			s.log.Warn("reading saveset data for an agent", "job", rj.id, "saveset", ss.ID, "err", rerr)
			panic(http.ErrAbortHandler)
		}
	}
}

func (s *Server) agentProgress(w http.ResponseWriter, r *http.Request, client string) error {
	rj, err := s.agentJob(r, client)
	if err != nil {
		return err
	}
	var p api.Progress
	if err := s.readAgentJSON(w, r, rj, &p); err != nil {
		return err
	}
	rj.mu.Lock()
	prog := rj.prog
	rj.mu.Unlock()
	if prog != nil {
		_ = prog(p)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) agentResult(w http.ResponseWriter, r *http.Request, client string) error {
	rj, err := s.agentJob(r, client)
	if err != nil {
		return err
	}
	var res api.RestoreResult
	if err := s.readAgentJSON(w, r, rj, &res); err != nil {
		return err
	}
	rj.mu.Lock()
	ch := rj.result
	rj.mu.Unlock()
	if ch == nil {
		return apiErr(api.CodeConflict, "job %d is not a restore", rj.id)
	}
	select {
	case ch <- res:
	default:
		return apiErr(api.CodeConflict, "job %d has its result already", rj.id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readAgentJSON reads the JSON body of an agent's call about a job, bounded
// like every agent body (agentBody).
func (s *Server) readAgentJSON(w http.ResponseWriter, r *http.Request, rj *runningJob, v any) error {
	body, stop := s.agentBody(w, r, rj)
	defer stop()
	return decodeJSON(body, v)
}

// produceOnNode is a backup whose library is on a storage node with a data
// port: the node opens a span writer on the drive the job holds, the
// agent sends its stream there (the order names the node's data port and
// the session's ticket), and the server follows the session over the
// tunnel: the agent's progress and warnings, then where every frame
// landed. The index comes to the server as for any backup.
func (p *remoteProducer) produceOnNode(ctx context.Context, conn *node.Conn, dev int64, prod *production, order api.Order) (*engine.Produced, error) {
	s, rj, spec := p.s, p.rj, prod.spec
	prod.claim() // no data stream comes to the server
	opened, err := conn.OpenSpan(dev, node.SpanRequest{Agent: rj.agent, Label: spec.Span.Label, Tag: spec.Span.Tag,
		Allow: spec.Span.Allow, Sealed: spec.Sealed})
	if err != nil {
		return nil, err
	}
	cancelSpan := func(why string) {
		if err := conn.CancelSpan(opened.Ticket, why); err != nil {
			s.log.Warn("cancelling a backup stream on a storage node", "node", conn.Node, "job", rj.id, "err", err)
		}
	}
	order.Backup.DataURL, order.Backup.Ticket = opened.DataURL, opened.Ticket
	if err := s.hub.send(rj.agent, order); err != nil {
		cancelSpan(err.Error())
		return nil, err
	}
	s.log.Info("backup stream goes to a storage node", "job", rj.id, "node", conn.Node, "data_url", opened.DataURL)
	// Follow the session; a session that says nothing for the start
	// timeout (the agent never came) or the idle timeout is cancelled.
	fctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	type followed struct {
		res *node.SpanResult
		err error
	}
	done := make(chan followed, 1)
	heard := make(chan struct{}, 1)
	var prevSB, prevF int64
	go func() {
		res, err := conn.SpanEvents(fctx, opened.Ticket, func(m json.RawMessage) {
			select {
			case heard <- struct{}{}:
			default:
			}
			rj.touch(time.Now())
			var pr api.Progress
			if json.Unmarshal(m, &pr) != nil {
				return
			}
			if pr.Bytes > prevSB {
				prod.hooks.Phase.Source.Add(pr.Bytes - prevSB)
				prevSB = pr.Bytes
			}
			if pr.Files > prevF {
				prod.hooks.Phase.Files.Add(pr.Files - prevF)
				prevF = pr.Files
			}
			if prod.hooks.Tick != nil {
				prod.hooks.Tick(pr.Path)
			}
		}, func(m json.RawMessage) {
			var wm api.Warning
			if json.Unmarshal(m, &wm) == nil {
				prod.hooks.Warn(wm.FilePath(), wm.Message)
			}
		})
		done <- followed{res, err}
	}()
	wait := s.opts.StartTimeout
	t := time.NewTimer(wait)
	defer t.Stop()
	var f followed
	for f.res == nil && f.err == nil {
		select {
		case f = <-done:
		case <-heard:
			t.Reset(s.opts.IdleTimeout)
		case <-t.C:
			why := fmt.Sprintf("agent %s sent nothing to storage node %s for %s", rj.agent, conn.Node, wait)
			cancelSpan(why)
			stop(errors.New(why))
			<-done
			return nil, fmt.Errorf("%s (is it running, and can it reach %s?)", why, opened.DataURL)
		case <-ctx.Done():
			cancelSpan(context.Cause(ctx).Error())
			<-done
			return nil, context.Cause(ctx)
		}
	}
	if f.err != nil {
		cancelSpan(f.err.Error())
		return nil, f.err
	}
	res := f.res
	if res.Error != "" {
		return nil, fmt.Errorf("agent %s to storage node %s: %s", rj.agent, conn.Node, res.Error)
	}
	prod.hooks.Phase.Media.Add(res.MediaBytes)
	end := api.BackupEnd{}
	if res.End != nil {
		end = *res.End
	}
	return &engine.Produced{Frames: res.Frames, Files: end.Files, Entries: end.Entries, Untrusted: true,
		Parts: res.Parts, MediaBytes: res.MediaBytes, Tapes: res.Tapes,
		FinishIndex: func(frames []index.Frame, meta []byte) error {
			if err := conn.CloseSpan(opened.Ticket, api.BackupClose{Frames: apiFrames(frames), Meta: meta}); err != nil {
				return err
			}
			err, werr := waitFor(s, ctx, rj, prod.index)
			if werr != nil {
				return werr
			}
			return err
		}}, nil
}

// nodeRead is a read ticket a restore took on a storage node.
type nodeRead struct {
	conn   *node.Conn
	ticket string
}

// agentSavesetTicket tells the agent where to read a saveset's data from:
// with a read ticket straight from a storage node's data port when every
// tape of the saveset is in one library of a connected node that has one,
// and otherwise (an empty answer) through the server, as always. The
// server still directs: it chose the saveset record (a copy when the
// saveset's own tapes are away), it holds the job, and it cancels the
// job's tickets when the job ends.
func (s *Server) agentSavesetTicket(w http.ResponseWriter, r *http.Request, client string) error {
	rj, ss, err := s.agentSavesetOf(r, client)
	if err != nil {
		return err
	}
	part, off, err := dataLocation(r, ss)
	if err != nil {
		return err
	}
	rj.touch(time.Now())
	tk, rd, err := s.readTicket(rj.agent, ss, part, off)
	if err != nil || rd == nil {
		if err != nil {
			return err
		}
		return writeJSON(w, tk)
	}
	rj.mu.Lock()
	ended := rj.readEnd
	if !ended {
		rj.reads = append(rj.reads, *rd)
	}
	rj.mu.Unlock()
	if ended {
		_ = rd.conn.CancelRead(rd.ticket, "the job ended")
		return apiErr(api.CodeConflict, "job %d has ended", rj.id)
	}
	rj.setTape(ss.Parts[part].Barcode)
	return writeJSON(w, tk)
}

// readTicket opens a read session for agent on the storage node that
// holds every tape of ss, if it has a data port; otherwise it returns an
// empty ticket (read through the server) and no nodeRead.
func (s *Server) readTicket(agent string, ss *catalog.Saveset, part int, off int64) (api.ReadTicket, *nodeRead, error) {
	conn, lib := s.nodes.dataPath(ss)
	if conn == nil {
		return api.ReadTicket{}, nil, nil
	}
	parts := make([]span.Part, len(ss.Parts))
	var tapes []string
	for i, p := range ss.Parts {
		parts[i] = span.Part{Barcode: p.Barcode, File: p.File, Bytes: p.Bytes}
		if !slices.Contains(tapes, p.Barcode) {
			tapes = append(tapes, p.Barcode)
		}
	}
	opened, err := conn.OpenRead(lib, node.ReadRequest{Agent: agent, Saveset: ss.ID, Parts: parts, Part: part, Offset: off})
	if errors.Is(err, library.ErrUnsupported) {
		return api.ReadTicket{}, nil, nil // the node has no data port (any more)
	}
	if err != nil {
		return api.ReadTicket{}, nil, err
	}
	return api.ReadTicket{DataURL: opened.DataURL, Ticket: opened.Ticket, Node: conn.Node, Library: lib, Tapes: tapes},
		&nodeRead{conn: conn, ticket: opened.Ticket}, nil
}

// endReads cancels the read tickets of a restore that ended (a ticket used
// and finished is gone on the node already: no error), which also cuts a
// read still under way.
func (s *Server) endReads(rj *runningJob) {
	rj.mu.Lock()
	reads := rj.reads
	rj.reads, rj.readEnd = nil, true
	rj.mu.Unlock()
	why := "the restore ended"
	if cause := context.Cause(rj.ctx); cause != nil {
		why = cause.Error()
	}
	for _, rd := range reads {
		if err := rd.conn.CancelRead(rd.ticket, why); err != nil {
			s.log.Warn("cancelling a read ticket on a storage node", "node", rd.conn.Node, "job", rj.id, "err", err)
		}
	}
}

// dataLocation is the frame location (?part=P&offset=O, both 0 when
// absent) a saveset read starts at, checked to lie inside the saveset.
func dataLocation(r *http.Request, ss *catalog.Saveset) (int, int64, error) {
	q := r.URL.Query()
	part, err1 := strconv.Atoi(orDefault(q.Get("part"), "0"))
	off, err2 := strconv.ParseInt(orDefault(q.Get("offset"), "0"), 10, 64)
	if err1 != nil || err2 != nil || part < 0 || off < 0 || part >= len(ss.Parts) {
		return 0, 0, badRequest("part and offset must be a location inside saveset %d", ss.ID)
	}
	return part, off, nil
}
