package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// hub knows the connected agents and holds their pending orders. Agents
// dial out: an agent keeps a long poll open (GET /agent/orders) and gets
// its next order as the answer.
type hub struct {
	s        *Server
	mu       sync.Mutex
	sessions map[string]*session
	revoked  map[string]bool // cut off: a poll that raced the revocation ends at once
}

type session struct {
	orders   chan api.Order
	polls    int       // polls open now
	lastPoll time.Time // when the last poll ended
	lastSeen time.Time // last call of any kind
	unsaved  bool      // lastSeen and addr are newer than the catalog's
	addr     string
	gone     chan struct{} // closed when the client is cut off (revoked)
	// The agent said goodbye (POST /agent/bye): offline at once, whatever
	// polls of it are still open here, until a poll of another run comes.
	// byeRun is the run that left: its late polls are refused.
	bye    bool
	byeRun string
}

// online: polling now, or within grace of its last poll, unless it said
// goodbye since.
func (ss *session) online(grace time.Duration) bool {
	if ss.bye {
		return false
	}
	return ss.polls > 0 || (!ss.lastPoll.IsZero() && time.Since(ss.lastPoll) < grace) // liveness is real time
}

// seenEvery is how often the agents' last sightings go to the catalog, all
// in one transaction: with a thousand agents polling, a commit (and an
// fsync) per agent call would be most of the server's idle work and hold
// up the queue's own writes.
const seenEvery = 30 * time.Second

func newHub(s *Server) *hub {
	return &hub{s: s, sessions: map[string]*session{}, revoked: map[string]bool{}}
}

func (h *hub) session(name string) *session {
	ss := h.sessions[name]
	if ss == nil {
		ss = &session{orders: make(chan api.Order, 64), gone: make(chan struct{})}
		if h.revoked[name] {
			close(ss.gone)
			return ss // not kept: a revoked client has no session
		}
		h.sessions[name] = ss
	}
	return ss
}

// enrolled forgets a revocation when a name enrolls again.
func (h *hub) enrolled(name string) {
	h.mu.Lock()
	delete(h.revoked, name)
	h.mu.Unlock()
}

// seen notes a call from an agent, in memory: saveSeen takes it to the
// catalog with the others.
func (h *hub) seen(name, addr string) {
	now := h.s.opts.Clock.Now()
	h.mu.Lock()
	ss := h.session(name)
	ss.lastSeen, ss.addr, ss.unsaved = now, addr, true
	h.mu.Unlock()
}

// saveSeen writes the sightings not yet in the catalog, in one
// transaction.
func (h *hub) saveSeen() {
	h.mu.Lock()
	var seen []catalog.ClientSeen
	for name, ss := range h.sessions {
		if ss.unsaved {
			seen = append(seen, catalog.ClientSeen{Name: name, Addr: ss.addr, At: ss.lastSeen})
			ss.unsaved = false
		}
	}
	h.mu.Unlock()
	if err := h.s.env.Catalog.SeenClients(seen); err != nil {
		h.s.log.Error("recording when agents were last seen", "agents", len(seen), "err", err)
	}
}

// runSaveSeen saves the sightings every seenEvery until ctx ends (Close
// saves the last ones).
func (h *hub) runSaveSeen(ctx context.Context) {
	t := time.NewTicker(seenEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.saveSeen()
		}
	}
}

// lastSeen is when and from where an agent last called, when this server
// saw it more recently than the catalog says.
func (h *hub) lastSeen(c *catalog.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ss := h.sessions[c.Name]; ss != nil && ss.lastSeen.After(c.LastSeen) {
		c.LastSeen, c.Address = ss.lastSeen, ss.addr
	}
}

// online reports whether an agent is polling now, or did so very recently.
func (h *hub) online(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.sessions[name]
	return ss != nil && ss.online(h.s.opts.OnlineGrace)
}

// bye marks an agent that said goodbye offline at once, and takes its
// last sighting (this call) to the catalog now rather than with the next
// batch: an agent stopped for maintenance may stay away for long.
func (h *hub) bye(name, run string) {
	h.mu.Lock()
	ss := h.session(name)
	ss.bye, ss.byeRun = true, run
	seen := []catalog.ClientSeen{{Name: name, Addr: ss.addr, At: ss.lastSeen}}
	ss.unsaved = false
	h.mu.Unlock()
	if err := h.s.env.Catalog.SeenClients(seen); err != nil {
		h.s.log.Error("recording when an agent was last seen", "client", name, "err", err)
	}
}

// send queues an order for an agent.
func (h *hub) send(name string, o api.Order) error {
	h.mu.Lock()
	ss := h.session(name)
	h.mu.Unlock()
	select {
	case ss.orders <- o:
		return nil
	default:
		return fmt.Errorf("agent %s has too many orders waiting", name)
	}
}

// drop cuts an agent off: its open polls end at once and its queued
// orders are discarded.
func (h *hub) drop(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revoked[name] = true
	if ss := h.sessions[name]; ss != nil {
		close(ss.gone)
		delete(h.sessions, name)
	}
}

// agentOrders is the agent's long poll: 200 with an order, or 204 when
// none came within the poll time. The run parameter names the agent run
// (one kura agent run process): a poll of a run that said goodbye, which
// reached the server after the goodbye, is refused and counts for nothing.
func (s *Server) agentOrders(w http.ResponseWriter, r *http.Request, client string) error {
	run := r.URL.Query().Get("run")
	if run != "" {
		if err := api.ValidAgentRun(run); err != nil {
			return err
		}
	}
	s.hub.mu.Lock()
	ss := s.hub.session(client)
	if ss.bye && run != "" && run == ss.byeRun {
		s.hub.mu.Unlock()
		return apiErr(api.CodeConflict, "agent run %s of client %s said goodbye; a new run polls with a new name", run, client)
	}
	cameOnline := !ss.online(s.opts.OnlineGrace)
	ss.bye, ss.byeRun = false, ""
	ss.polls++
	s.hub.mu.Unlock()
	if cameOnline {
		// Its jobs may start now. Only then: the polls of a thousand
		// connected agents would otherwise set the queue looking at every
		// queued job dozens of times a second.
		s.q.kick()
	}
	defer func() {
		s.hub.mu.Lock()
		ss.polls--
		ss.lastPoll = time.Now()
		s.hub.mu.Unlock()
	}()
	t := time.NewTimer(s.opts.PollTimeout)
	defer t.Stop()
	select {
	case o := <-ss.orders:
		s.mu.Lock()
		_, live := s.running[o.JobID]
		s.mu.Unlock()
		if !live {
			// Its job ended (it waited too long for the agent): drop it;
			// the agent polls again at once.
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		o.IdleLimit = s.opts.IdleTimeout.Seconds()
		s.log.Info("order sent", "client", client, "job", o.JobID, "kind", o.Kind)
		return writeJSON(w, o)
	case <-t.C:
		w.WriteHeader(http.StatusNoContent)
		return nil
	case <-ss.gone:
		return apiErr(api.CodeForbidden, "client %s was cut off", client)
	case <-r.Context().Done():
		return nil
	}
}

// agentBye is an agent's goodbye as kura agent run stops: it is offline
// from now on (kura client list, the console, the queue's reasons,
// metrics), not after the grace. Its open polls, ending after this, do not
// bring it back; its next run's first poll does.
func (s *Server) agentBye(w http.ResponseWriter, r *http.Request, client string) error {
	var b api.AgentBye
	if err := readJSON(r, &b); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return err
	}
	s.hub.bye(client, b.Run)
	s.log.Info("agent said goodbye", "client", client, "run", b.Run)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// agentJob finds the running job an agent call is about, and checks that
// the caller is that job's agent.
func (s *Server) agentJob(r *http.Request, client string) (*runningJob, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	rj := s.running[id]
	s.mu.Unlock()
	if rj == nil {
		return nil, apiErr(api.CodeNotFound, "job %d is not running", id)
	}
	if rj.agent != client {
		s.log.Warn("refused: agent asked about another agent's job", "client", client, "job", id)
		return nil, apiErr(api.CodeForbidden, "job %d is not a job of client %s", id, client)
	}
	rj.touch(time.Now())
	return rj, nil
}

var errAgentGone = errors.New("agent stopped responding")

// ErrAgentNotStarted: the agent of a job did not take it up within the
// server's start timeout (the CLI says where to see the agents).
var ErrAgentNotStarted = errors.New("did not start")
