package node

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// The direct data path. The server opens a span session on a drive of the
// node (POST /devices/{d}/span, over the tunnel) and hands the agent the
// session's ticket and the node's data address; the agent sends its
// backup stream there (POST /api/v1/span/{ticket}, mutual TLS: the
// agent's certificate from the same CA, and its name must be the one the
// server named). The node checks every frame and writes it with a span
// writer on the drive, moving to the next tape the server allowed at early
// warning. The server follows the session (GET /spans/{t}/events: the
// agent's progress and warnings, then the result: frame locations, parts,
// tapes) and answers the agent, through the node, with the final frame
// table (POST /spans/{t}/close). A session ends with the stream, or when
// the server cancels it or its tunnel ends: the part being written is
// aborted and the ticket is dead.

// SpanRequest opens a span session on the device a drive has loaded.
type SpanRequest struct {
	Agent  string        `json:"agent"`  // the only client whose certificate may send the stream
	Label  *stream.Label `json:"label"`  // heads each part (Part, PrevBarcode set per part); nil: no header
	Tag    string        `json:"tag"`    // of the data tape files (" part N" added)
	Allow  []string      `json:"allow"`  // tapes it may go on to; nil: any
	Sealed bool          `json:"sealed"` // encrypted: the frames cannot be checked here
}

// SpanOpened is an open session.
type SpanOpened struct {
	Ticket  string `json:"ticket"`
	DataURL string `json:"data_url"` // https://HOST:PORT of the node's data port
}

// SpanResult is how a session's stream ended.
type SpanResult struct {
	Frames     []index.Frame  `json:"frames"`
	Parts      []span.Part    `json:"parts"`
	MediaBytes int64          `json:"media_bytes"`
	Tapes      []string       `json:"tapes"`
	End        *api.BackupEnd `json:"end,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// spanEvent is one line of a session's events.
type spanEvent struct {
	Progress json.RawMessage `json:"progress,omitempty"`
	Warning  json.RawMessage `json:"warning,omitempty"`
	Result   *SpanResult     `json:"result,omitempty"`
}

// spans are the open sessions of the node process, shared by the tunnel's
// session (which opens them) and the data port (where agents attach).
type spans struct {
	m        *tickets[*spanSession]
	reads    *tickets[*readSession] // read tickets (read.go)
	received atomic.Int64           // frame bytes agents sent to the data port
	sent     atomic.Int64           // saveset bytes the data port sent to agents
	dataURL  string
}

func newSpans(dataURL string) *spans {
	return &spans{m: newTickets[*spanSession](), reads: newTickets[*readSession](), dataURL: dataURL}
}

type spanSession struct {
	ticket, agent string
	sealed        bool
	sw            *span.Writer
	tapes         []string
	events        chan spanEvent
	closeCh       chan api.BackupClose
	attached      atomic.Bool
	ctx           context.Context
	cancel        context.CancelCauseFunc
	owner         *Libraries
}

// openSpan is the tunnel call POST /devices/{d}/span.
func (l *Libraries) openSpan(w http.ResponseWriter, r *http.Request) (any, error) {
	if l.spans == nil || l.spans.dataURL == "" {
		return nil, fmt.Errorf("this node has no data port (kura node run --data-listen): %w", library.ErrUnsupported)
	}
	id, err := strconv.ParseInt(r.PathValue("d"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: handle %q", errBadRequest, r.PathValue("d"))
	}
	var req SpanRequest
	if err := readJSON(r.Body, &req); err != nil {
		return nil, err
	}
	l.mu.Lock()
	var dh *driveHandle
	for _, d := range l.drives {
		if d.dev == id {
			dh = d
		}
	}
	dv := l.devices[id]
	l.mu.Unlock()
	if dh == nil || dv == nil {
		return nil, fmt.Errorf("device handle %d is not loaded in a drive of this session: %w", id, ErrNoHandle)
	}
	ticket, err := newTicket()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	first := dv.dev.Label().Barcode
	s := &spanSession{ticket: ticket, agent: req.Agent, sealed: req.Sealed, tapes: []string{first},
		events: make(chan spanEvent, 256), closeCh: make(chan api.BackupClose, 1), ctx: ctx, cancel: cancel, owner: l}
	cur := first
	next := func(exclude []string, full bool) (tape.Device, string, error) {
		dh.mu.Lock()
		defer dh.mu.Unlock()
		if full {
			if err := dh.lib.MarkFull(cur); err != nil {
				return nil, "", err
			}
		}
		var allow library.TapeFilter
		if req.Allow != nil {
			allow = func(bc string, blank bool) bool { return slices.Contains(req.Allow, bc) }
		}
		l.dropDevice(dh)
		dev, bc, err := dh.drv.LoadWritableIf(allow, append(exclude, s.tapes...)...)
		if err != nil {
			return nil, "", err
		}
		h, err := l.add(&devHandle{dev: dev, owned: true})
		if err != nil {
			return nil, "", err
		}
		dh.dev = h
		if !full {
			s.tapes = slices.DeleteFunc(s.tapes, func(b string) bool { return b == cur })
		}
		s.tapes = append(s.tapes, bc)
		cur = bc
		return dev, bc, nil
	}
	prev := ""
	header := func(part int) []byte {
		if req.Label == nil {
			return nil
		}
		lb := *req.Label
		lb.Part, lb.PrevBarcode = part, prev
		prev = cur
		return stream.LabelFrame(lb)
	}
	s.sw = span.NewWriter(dv.dev, first, next, header, req.Tag)
	l.spans.m.add(s.ticket, s)
	return SpanOpened{Ticket: s.ticket, DataURL: l.spans.dataURL}, nil
}

func (l *Libraries) span(r *http.Request) (*spanSession, error) {
	if l.spans == nil {
		return nil, fmt.Errorf("span %s: %w", r.PathValue("t"), ErrNoHandle)
	}
	s := l.spans.m.get(r.PathValue("t"))
	if s == nil || s.owner != l {
		return nil, fmt.Errorf("span session: %w", ErrNoHandle)
	}
	return s, nil
}

// spanEvents streams a session's events, one JSON line each, until its
// result (the last line).
func (l *Libraries) spanEvents(w http.ResponseWriter, r *http.Request) {
	s, err := l.span(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	for {
		select {
		case ev := <-s.events:
			if err := enc.Encode(ev); err != nil {
				return
			}
			_ = rc.Flush()
			if ev.Result != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// closeSessions cancels every session the tunnel's session opened.
func (l *Libraries) closeSessions() {
	if l.spans == nil {
		return
	}
	for _, s := range l.spans.m.where(func(s *spanSession) bool { return s.owner == l }) {
		s.end(errSessionEnded)
	}
}

// end cancels the session. If no agent stream has attached, it claims the
// session (none can attach from now on) and aborts the span writer, which
// is otherwise the stream's to abort.
func (s *spanSession) end(cause error) {
	s.cancel(cause)
	s.owner.spans.m.remove(s.ticket)
	if s.attached.CompareAndSwap(false, true) {
		s.sw.Abort()
	}
}

// event hands an event to the server's follower; progress that finds the
// queue full is dropped (the next one says more), anything else waits.
func (s *spanSession) event(ev spanEvent) {
	if ev.Progress != nil {
		select {
		case s.events <- ev:
		default:
		}
		return
	}
	select {
	case s.events <- ev:
	case <-s.ctx.Done():
	}
}

// dataIdle is how long the data port waits on a silent agent.
const dataIdle = 60 * time.Second

// DataHandler is the node's data port: agents send backup streams to the
// span sessions the server opened.
func (sp *spans) DataHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.Prefix+"/span/{t}", sp.receive)
	mux.HandleFunc("GET "+api.Prefix+"/read/{t}", sp.send)
	return mux
}

func dataErr(w http.ResponseWriter, status int, code, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Code: code, Message: fmt.Sprintf(format, args...)})
}

// dataAgent is the client whose verified certificate came to the data
// port; without one it answers 401 and reports false.
func dataAgent(w http.ResponseWriter, r *http.Request) (string, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		dataErr(w, http.StatusUnauthorized, api.CodeUnauthorized, "the data port needs an agent's certificate")
		return "", false
	}
	return r.TLS.VerifiedChains[0][0].Subject.CommonName, true
}

func (sp *spans) receive(w http.ResponseWriter, r *http.Request) {
	name, ok := dataAgent(w, r)
	if !ok {
		return
	}
	s := sp.m.get(r.PathValue("t"))
	if s == nil || s.agent != name {
		dataErr(w, http.StatusForbidden, api.CodeForbidden, "no backup of client %s waits here under that ticket", name)
		return
	}
	if !s.attached.CompareAndSwap(false, true) {
		dataErr(w, http.StatusConflict, api.CodeConflict, "the ticket's stream was sent already")
		return
	}
	defer sp.m.remove(s.ticket)
	rc := http.NewResponseController(w)
	stop := context.AfterFunc(s.ctx, func() { _ = rc.SetReadDeadline(time.Now()) })
	res := s.take(sp, &deadlineReader{r: bufio.NewReaderSize(r.Body, 1<<20), rc: rc})
	stop()
	_ = rc.SetReadDeadline(time.Time{})
	s.event(spanEvent{Result: res})
	if res.Error != "" {
		dataErr(w, http.StatusBadGateway, api.CodeStreamFailed, "%s", res.Error)
		return
	}
	select {
	case c := <-s.closeCh:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
	case <-s.ctx.Done():
		dataErr(w, http.StatusConflict, api.CodeConflict, "the backup ended: %v", context.Cause(s.ctx))
	case <-r.Context().Done():
	}
}

// take reads the agent's messages to the end of the stream.
func (s *spanSession) take(sp *spans, body io.Reader) *SpanResult {
	res := &SpanResult{}
	fail := func(err error) *SpanResult {
		s.sw.Abort()
		if cause := context.Cause(s.ctx); cause != nil {
			err = cause
		}
		res.Error = err.Error()
		return res
	}
	var chk *stream.FrameChecker
	if !s.sealed {
		var err error
		if chk, err = stream.NewFrameChecker(); err != nil {
			return fail(err)
		}
		defer chk.Close()
	}
	var buf []byte
	for {
		typ, payload, err := api.ReadMsg(body, buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fail(fmt.Errorf("the data stream broke: %w", err))
		}
		switch typ {
		case api.MsgFrame:
			if chk != nil {
				if err := chk.Check(payload); err != nil {
					return fail(fmt.Errorf("frame %d is damaged, nothing of it went to tape: %w", len(res.Frames), err))
				}
			}
			loc, err := s.sw.WriteFrame(payload)
			if err != nil {
				return fail(fmt.Errorf("writing to tape: %w", err))
			}
			sp.received.Add(int64(len(payload)))
			res.Frames = append(res.Frames, index.Frame{CSize: uint32(len(payload)), Part: int32(loc.Part), PartOffset: loc.Offset})
			buf = payload[:0]
			continue
		case api.MsgProgress:
			s.event(spanEvent{Progress: slices.Clone(payload)})
		case api.MsgWarning:
			s.event(spanEvent{Warning: slices.Clone(payload)})
		case api.MsgAbort:
			var wm api.Warning
			_ = json.Unmarshal(payload, &wm)
			return fail(fmt.Errorf("the agent gave up: %s", wm.Message))
		case api.MsgEnd:
			var end api.BackupEnd
			if err := json.Unmarshal(payload, &end); err != nil {
				return fail(fmt.Errorf("%w: %v", api.ErrBadMsg, err))
			}
			parts, err := s.sw.Finish()
			if err != nil {
				res.Error = fmt.Sprintf("writing to tape: %v", err)
				return res
			}
			res.End, res.Parts, res.MediaBytes, res.Tapes = &end, parts, s.sw.Bytes(), slices.Clone(s.tapes)
			return res
		}
		buf = payload[:0]
	}
}

// deadlineReader renews the read deadline as bytes come in, so a silent
// agent ends its stream after dataIdle.
type deadlineReader struct {
	r       io.Reader
	rc      *http.ResponseController
	renewed time.Time
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if now := time.Now(); now.Sub(d.renewed) > dataIdle/8 {
		if err := d.rc.SetReadDeadline(now.Add(dataIdle)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			_ = err
		}
		d.renewed = now
	}
	return d.r.Read(p)
}
