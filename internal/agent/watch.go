package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
)

// ErrIdle: the server sent or took nothing for the job's idle limit. The
// job fails with it instead of waiting forever on a stalled server or a
// dead network.
var ErrIdle = errors.New("the server stopped responding")

// ErrJobRefused: the server refused a call about a running job (the job
// ended there, or the agent was cut off); the job stops.
var ErrJobRefused = errors.New("the server refused the job")

// defaultIdle bounds a job's calls when the order names no idle limit.
const defaultIdle = 60 * time.Second

// maxPollWait bounds an order poll: the server answers one within its poll
// time (25 s by default), so a poll open this long is on a dead connection.
const maxPollWait = 2 * time.Minute

// idleOf is the idle limit of an order's calls.
func idleOf(o api.Order) time.Duration {
	if d := time.Duration(o.IdleLimit * float64(time.Second)); d > 0 {
		return d
	}
	return defaultIdle
}

// watch bounds one request by an idle limit: while it is armed and the
// limit passes, the request's context is cancelled with ErrIdle. It is
// armed only while the agent waits on the server (for an answer, for
// bytes, for the server to take bytes), never while the agent itself is
// slow (reading files, waiting on its bandwidth limit).
type watch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	t      *time.Timer
}

func newWatch(parent context.Context, idle time.Duration) *watch {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{ctx: ctx, cancel: cancel, idle: idle}
	w.t = time.AfterFunc(idle, func() { cancel(fmt.Errorf("%w: nothing for %s", ErrIdle, idle)) })
	w.t.Stop()
	return w
}

func (w *watch) arm()   { w.t.Reset(w.idle) }
func (w *watch) pause() { w.t.Stop() }
func (w *watch) done()  { w.t.Stop(); w.cancel(nil) }

// err says why the request failed: the idle limit, the job's cause, or err.
func (w *watch) err(err error) error {
	if err == nil || w.ctx.Err() == nil {
		return err
	}
	cause := context.Cause(w.ctx)
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%v)", cause, err)
}

// watchedBody is an answer's body whose every read is bounded by the watch.
type watchedBody struct {
	rc io.ReadCloser
	w  *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.w.arm()
	n, err := b.rc.Read(p)
	b.w.pause()
	if err != nil && err != io.EOF {
		err = b.w.err(err)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.w.done()
	return err
}

// watchedUpload is a request body: the watch runs while the transport has
// the bytes it took and does not come back for more (the server is not
// taking them), and pauses while the agent produces the next ones.
type watchedUpload struct {
	r     io.Reader
	w     *watch
	atEOF bool // keep the watch armed after the body's end, for the answer
}

func (u *watchedUpload) Read(p []byte) (int, error) {
	u.w.pause()
	n, err := u.r.Read(p)
	if err == nil || u.atEOF {
		u.w.arm()
	}
	return n, err
}

// call sends a request about a job and returns the answer's body; the
// answer and every read of the body are bounded by idle, and everything by
// ctx. A body to send is bounded the same way, and so is the wait for the
// answer after it unless waitAnswer (the server has work to do first; the
// job's context bounds it).
func (a *Agent) call(ctx context.Context, method, path, ctype string, body io.Reader, idle time.Duration, waitAnswer bool) (io.ReadCloser, error) {
	return a.callWith(a.c.Do, ctx, method, path, ctype, body, idle, waitAnswer)
}

// WriteTo passes the body's own WriteTo on (handoff: each of the
// producer's writes reaches the connection whole), with the watch armed
// while the connection takes each write.
func (u *watchedUpload) WriteTo(w io.Writer) (int64, error) {
	wt, ok := u.r.(io.WriterTo)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{u})
	}
	u.w.pause()
	n, err := wt.WriteTo(&watchedWriter{w: w, watch: u.w})
	if err == nil && u.atEOF {
		u.w.arm()
	}
	return n, err
}

// watchedWriter arms the watch while a write is on the connection.
type watchedWriter struct {
	w     io.Writer
	watch *watch
}

func (ww *watchedWriter) Write(p []byte) (int, error) {
	ww.watch.arm()
	n, err := ww.w.Write(p)
	ww.watch.pause()
	return n, err
}

// callBulk is call for a bulk stream, on a connection of its own
// (apiclient.Client.DoBulk).
func (a *Agent) callBulk(ctx context.Context, method, path, ctype string, body io.Reader, idle time.Duration, waitAnswer bool) (io.ReadCloser, error) {
	return a.callWith(a.c.DoBulk, ctx, method, path, ctype, body, idle, waitAnswer)
}

func (a *Agent) callWith(do func(*http.Request) (*http.Response, error), ctx context.Context, method, path, ctype string,
	body io.Reader, idle time.Duration, waitAnswer bool) (io.ReadCloser, error) {
	return a.callVia(a.c, do, ctx, method, path, ctype, body, idle, waitAnswer)
}

// callVia is callWith to another address than the server's (a storage
// node's data port): c builds the request, do sends it.
func (a *Agent) callVia(c *apiclient.Client, do func(*http.Request) (*http.Response, error), ctx context.Context, method, path, ctype string,
	body io.Reader, idle time.Duration, waitAnswer bool) (io.ReadCloser, error) {
	w := newWatch(ctx, idle)
	if body != nil {
		body = &watchedUpload{r: body, w: w, atEOF: !waitAnswer}
	}
	req, err := c.NewRequest(w.ctx, method, path, body)
	if err != nil {
		w.done()
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	w.arm()
	resp, err := do(req)
	w.pause()
	if err != nil {
		err = w.err(err)
		w.done()
		return nil, err
	}
	return &watchedBody{rc: resp.Body, w: w}, nil
}

// post sends v as JSON about a job and reads the (small) answer.
func (a *Agent) post(ctx context.Context, path string, v any, idle time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rc, err := a.call(ctx, "POST", path, "application/json", bytes.NewReader(b), idle, false)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	return err
}

// refusal reports whether err is the server refusing a job's call: the
// job is over there (not running, not this agent's) or the agent is cut
// off. Retrying cannot help; the job stops.
func refusal(err error) bool {
	switch apiclient.Code(err) {
	case api.CodeForbidden, api.CodeUnauthorized, api.CodeNotFound, api.CodeConflict:
		return true
	}
	return false
}
