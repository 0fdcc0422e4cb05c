package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// The direct read path, the mirror of the span session. For a restore on
// an agent of a saveset whose tapes are in a library of this node, the
// server opens a read session (POST /libraries/{lib}/read, over the
// tunnel) naming the agent, the saveset, its parts (tape, file, bytes) and
// the location to read from, and hands the agent the ticket and the data
// port's address. The agent reads (GET /api/v1/read/{ticket}, mutual TLS:
// the certificate of the client the server named) the saveset's media
// bytes from that location to the end of its data: the parts read in
// turn, every block's CRC checked as it leaves the tape. A failure after
// the headers is the Kura-Error trailer (api.TrailerError), an api.Error
// whose code says what it was (api.CodeCorrupt for damaged media), so the
// agent names the damage rather than a broken connection. A ticket is used
// once; the server cancels the ones its job no longer needs (POST
// /reads/{t}/cancel), which also cuts a read under way, and the tunnel's
// end kills every ticket of its session.

// ReadRequest opens a read session on a library of the node.
type ReadRequest struct {
	Agent   string      `json:"agent"`   // the only client whose certificate may read
	Saveset int64       `json:"saveset"` // in errors and logs
	Parts   []span.Part `json:"parts"`   // the saveset's data, in order
	Part    int         `json:"part"`    // where the read starts
	Offset  int64       `json:"offset"`
}

// readStart is how long a read ticket waits for its agent.
const readStart = 2 * time.Minute

type readSession struct {
	ticket, agent string
	req           ReadRequest
	lib           library.Changer
	used          atomic.Bool
	ctx           context.Context
	cancel        context.CancelCauseFunc
	owner         *Libraries
}

// end kills the ticket and cuts a read under way.
func (s *readSession) end(cause error) {
	s.cancel(cause)
	s.owner.spans.reads.remove(s.ticket)
}

// openRead is the tunnel call POST /libraries/{lib}/read.
func (l *Libraries) openRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if l.spans == nil || l.spans.dataURL == "" {
		return nil, fmt.Errorf("this node has no data port (kura node run --data-listen): %w", library.ErrUnsupported)
	}
	lib, err := l.lib(r.PathValue("lib"))
	if err != nil {
		return nil, err
	}
	var req ReadRequest
	if err := readJSON(r.Body, &req); err != nil {
		return nil, err
	}
	if req.Agent == "" || len(req.Parts) == 0 || req.Part < 0 || req.Part >= len(req.Parts) || req.Offset < 0 || req.Offset > req.Parts[req.Part].Bytes {
		return nil, fmt.Errorf("%w: a read of saveset %d needs an agent and a location inside its %d parts", errBadRequest, req.Saveset, len(req.Parts))
	}
	ticket, err := newTicket()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &readSession{ticket: ticket, agent: req.Agent, req: req, lib: lib, ctx: ctx, cancel: cancel, owner: l}
	l.spans.reads.add(s.ticket, s)
	// A ticket nobody comes for dies on its own.
	time.AfterFunc(readStart, func() {
		if s.used.CompareAndSwap(false, true) {
			s.end(fmt.Errorf("no agent came for the read of saveset %d within %s", req.Saveset, readStart))
		}
	})
	return SpanOpened{Ticket: s.ticket, DataURL: l.spans.dataURL}, nil
}

// closeReads kills every read ticket the tunnel's session opened.
func (l *Libraries) closeReads() {
	if l.spans == nil {
		return
	}
	for _, s := range l.spans.reads.where(func(s *readSession) bool { return s.owner == l }) {
		s.end(errSessionEnded)
	}
}

// cancelRead is the tunnel call POST /reads/{t}/cancel. A ticket that is
// gone (used and finished, or dead) is no error: the server cancels every
// ticket of a job when the job ends.
func (l *Libraries) cancelRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if l.spans == nil {
		return struct{}{}, nil
	}
	if s := l.spans.reads.get(r.PathValue("t")); s != nil && s.owner == l {
		s.end(fmt.Errorf("the server cancelled the read: %s", r.URL.Query().Get("why")))
	}
	return struct{}{}, nil
}

// cancelAgent is the tunnel call POST /agents/{name}/cancel: the server
// revoked that client, so every ticket of it on this node dies (backup
// streams and reads, under way or not).
func (l *Libraries) cancelAgent(w http.ResponseWriter, r *http.Request) (any, error) {
	if l.spans == nil {
		return struct{}{}, nil
	}
	name := r.PathValue("name")
	why := fmt.Errorf("client %s was revoked", name)
	reads := l.spans.reads.where(func(s *readSession) bool { return s.agent == name })
	spans := l.spans.m.where(func(s *spanSession) bool { return s.agent == name })
	for _, s := range reads {
		s.end(why)
	}
	for _, s := range spans {
		s.end(why)
	}
	return struct{}{}, nil
}

// send is the data port's GET /api/v1/read/{t}: the saveset's media bytes
// from the session's location to the end of its data.
func (sp *spans) send(w http.ResponseWriter, r *http.Request) {
	name, ok := dataAgent(w, r)
	if !ok {
		return
	}
	s := sp.reads.get(r.PathValue("t"))
	if s == nil || s.agent != name {
		dataErr(w, http.StatusForbidden, api.CodeForbidden, "no read for client %s waits here under that ticket", name)
		return
	}
	if !s.used.CompareAndSwap(false, true) {
		dataErr(w, http.StatusConflict, api.CodeConflict, "the ticket was used already")
		return
	}
	defer s.end(errors.New("the read ended"))
	req := s.req
	sr := span.NewReader(s.lib.OpenTape, req.Parts)
	rc, err := sr.OpenAt(stream.Location{Part: req.Part, Offset: req.Offset})
	if err != nil {
		status, code := http.StatusInternalServerError, api.CodeInternal
		if errors.Is(err, library.ErrUnknownTape) || errors.Is(err, tape.ErrNoSuchFile) {
			status, code = http.StatusNotFound, api.CodeNotFound
		}
		dataErr(w, status, code, "saveset %d: %v", req.Saveset, err)
		return
	}
	defer rc.Close()
	// The server's cancel (the job ended) cuts the answer at once.
	rctl := http.NewResponseController(w)
	stop := context.AfterFunc(s.ctx, func() { _ = rctl.SetWriteDeadline(time.Now()) })
	defer stop()
	w.Header().Set("Trailer", api.TrailerError)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 256<<10)
	for {
		n, rerr := rc.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				// The agent went away, or the server cancelled the read:
				// cut the answer, so it cannot pass for a clean end.
				panic(http.ErrAbortHandler)
			}
			sp.sent.Add(int64(n))
			_ = rctl.SetWriteDeadline(time.Now().Add(dataIdle))
			if s.ctx.Err() != nil {
				panic(http.ErrAbortHandler) // cancelled as the deadline was renewed
			}
		}
		if rerr == io.EOF {
			return
		}
		if rerr != nil {
			if cause := context.Cause(s.ctx); cause != nil {
				rerr = cause
			}
			code := api.CodeStreamFailed
			if errors.Is(rerr, tape.ErrCorrupt) || errors.Is(rerr, tape.ErrTruncated) || errors.Is(rerr, span.ErrPartMismatch) {
				code = api.CodeCorrupt
			}
			eb, _ := json.Marshal(api.Error{Code: code, Message: fmt.Sprintf("storage node: saveset %d: %v", req.Saveset, rerr)})
			w.Header().Set(api.TrailerError, string(eb))
			return
		}
	}
}

// DataSent is the saveset bytes the data port has sent to agents.
func (n *Node) DataSent() int64 { return n.spans.sent.Load() }

// OpenRead opens a read session on library lib of the node: the ticket an
// agent reads the saveset's data with, and the data port's address.
func (c *Conn) OpenRead(lib string, req ReadRequest) (SpanOpened, error) {
	var out SpanOpened
	return out, c.call(nil, "POST", "/libraries/"+url.PathEscape(lib)+"/read", req, &out)
}

// CancelAgent kills every ticket of a client on the node (it was revoked).
func (c *Conn) CancelAgent(name string) error {
	return c.call(nil, "POST", "/agents/"+url.PathEscape(name)+"/cancel", nil, nil)
}

// CancelRead kills a read ticket and cuts its read if it is under way; a
// ticket that is gone already is no error.
func (c *Conn) CancelRead(ticket, why string) error {
	return c.call(nil, "POST", "/reads/"+url.PathEscape(ticket)+"/cancel?why="+url.QueryEscape(why), nil, nil)
}
