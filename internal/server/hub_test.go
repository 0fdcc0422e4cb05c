package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
)

// newHubServer is a server with a catalog, a hub and a queue, not serving:
// enough to drive the hub's calls by hand.
func newHubServer(t *testing.T, clients int) (*Server, []string) {
	t.Helper()
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	s := &Server{opts: Options{}.withDefaults(), env: env, running: map[int64]*runningJob{},
		log: slog.New(slog.DiscardHandler)}
	s.hub, s.q, s.bus = newHub(s), newQueue(s), newBus()
	var names []string
	for i := range clients {
		name := fmt.Sprintf("c%02d", i)
		fp := fmt.Sprintf("%064x", i+1)
		if err := env.Catalog.EnrollClient(catalog.Client{Name: name, CertSerial: "1", CertFingerprint: fp}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return s, names
}

// An agent's calls are noted in memory and reach the catalog in one batch
// (saveSeen), not as a commit per call; the client list shows them at
// once all the same.
func TestAgentSightingsAreSavedInABatch(t *testing.T) {
	s, names := newHubServer(t, 20)
	for _, name := range names {
		s.hub.seen(name, "192.0.2.1:"+name[1:])
	}
	for _, name := range names {
		c, err := s.env.Catalog.Client(name)
		if err != nil {
			t.Fatal(err)
		}
		if !c.LastSeen.IsZero() {
			t.Fatalf("client %s: its call was written to the catalog at once (last seen %s), not batched", name, c.LastSeen)
		}
	}
	// GET /clients shows the sightings before they are saved.
	rec := httptest.NewRecorder()
	if err := s.getClients(rec, httptest.NewRequest("GET", "/api/v1/clients", nil)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(rec.Body.String(), `"address":"192.0.2.1:`); got != len(names) {
		t.Errorf("the client list shows %d of %d sightings: %s", got, len(names), rec.Body)
	}
	s.hub.saveSeen()
	for _, name := range names {
		c, err := s.env.Catalog.Client(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.LastSeen.IsZero() || c.Address != "192.0.2.1:"+name[1:] {
			t.Errorf("client %s after saveSeen: last seen %s from %q", name, c.LastSeen, c.Address)
		}
	}
}

// An agent that comes online kicks the queue (its jobs may start); its
// next polls, while it stays online, do not: a thousand polling agents
// would set the queue scanning every queued job dozens of times a second.
func TestOnlyAnAgentComingOnlineKicksTheQueue(t *testing.T) {
	s, names := newHubServer(t, 1)
	poll := func() bool {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the poll ends at once
		r := httptest.NewRequest("GET", "/api/v1/agent/orders", nil).WithContext(ctx)
		if err := s.agentOrders(httptest.NewRecorder(), r, names[0]); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.q.kickc:
			return true
		default:
			return false
		}
	}
	if !poll() {
		t.Error("the first poll of an agent did not kick the queue")
	}
	for range 5 {
		if poll() {
			t.Fatal("a poll of an agent that is online kicked the queue")
		}
	}
	// Offline again (its last poll ended longer ago than the grace).
	s.hub.mu.Lock()
	s.hub.sessions[names[0]].lastPoll = time.Now().Add(-2 * s.opts.OnlineGrace)
	s.hub.mu.Unlock()
	if !poll() {
		t.Error("the poll of an agent coming back did not kick the queue")
	}
}

// pollRun opens an order poll of client's agent run run that stays open
// until end is called; it returns once the hub counts the poll (the first
// poll of an agent coming online kicks the queue). The poll's error
// arrives on done.
func pollRun(t *testing.T, s *Server, client, run string) (end func(), done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	r := httptest.NewRequest("GET", "/api/v1/agent/orders?run="+run, nil).WithContext(ctx)
	go func() { errc <- s.agentOrders(httptest.NewRecorder(), r, client) }()
	select {
	case <-s.q.kickc:
	case err := <-errc:
		cancel()
		t.Fatalf("the poll of run %s ended at once: %v", run, err)
	}
	return func() { cancel(); <-errc }, errc
}

// say sends an agent's goodbye through its handler.
func say(t *testing.T, s *Server, client, body string) error {
	t.Helper()
	r := httptest.NewRequest("POST", "/api/v1/agent/bye", strings.NewReader(body))
	rec := httptest.NewRecorder()
	err := s.agentBye(rec, r, client)
	if err == nil && rec.Code != http.StatusNoContent {
		t.Fatalf("goodbye answered %d", rec.Code)
	}
	return err
}

// An agent that says goodbye is offline at once, though its poll is still
// open on the server (the poll's end reaches the server after the
// goodbye): the client list, the queue's reason and metrics all ask
// hub.online. The poll ending afterwards, or a late poll of the same run,
// does not bring it back; the first poll of its next run does. Its last
// sighting is in the catalog at once.
func TestGoodbyeTakesAnAgentOfflineAtOnce(t *testing.T) {
	s, names := newHubServer(t, 1)
	c := names[0]
	end, _ := pollRun(t, s, c, "run1")
	s.hub.seen(c, "192.0.2.7:4242") // what agentOnly notes for every call
	if !s.hub.online(c) {
		t.Fatal("an agent with a poll open is not online")
	}
	if err := say(t, s, c, `{"run":"run1"}`); err != nil {
		t.Fatal(err)
	}
	if s.hub.online(c) {
		t.Error("after its goodbye the agent is still online (its poll is still open)")
	}
	if reason, err := s.q.agentReady(c); err != nil || reason != "waiting for agent "+c+" to connect" {
		t.Errorf("the queue's reason for a job of it: %q, %v", reason, err)
	}
	if cs, err := (consoleBackend{s: s}).Clients(t.Context()); err != nil || len(cs) != 1 || cs[0].Connected {
		t.Errorf("the console's Clients page after the goodbye: %+v, %v; want %s not connected", cs, err, c)
	}
	cl, err := s.env.Catalog.Client(c)
	if err != nil {
		t.Fatal(err)
	}
	if cl.LastSeen.IsZero() || cl.Address != "192.0.2.7:4242" {
		t.Errorf("the catalog after the goodbye: last seen %s from %q; want the goodbye's sighting, saved at once", cl.LastSeen, cl.Address)
	}

	end() // the open poll ends after the goodbye, as it does on the wire
	if s.hub.online(c) {
		t.Error("the poll ending after the goodbye brought the agent back online (for the grace)")
	}
	late := httptest.NewRequest("GET", "/api/v1/agent/orders?run=run1", nil)
	err = s.agentOrders(httptest.NewRecorder(), late, c)
	var he *httpError
	if !errors.As(err, &he) || he.body.Code != api.CodeConflict {
		t.Errorf("a poll of the run that said goodbye: %v; want refused with %q", err, api.CodeConflict)
	}
	if s.hub.online(c) {
		t.Error("a late poll of the run that said goodbye brought the agent back online")
	}

	end, _ = pollRun(t, s, c, "run2") // kicks the queue: its jobs may start
	if !s.hub.online(c) {
		t.Error("the next run's poll did not bring the agent back online")
	}
	end()
	if !s.hub.online(c) {
		t.Error("the next run's poll ended and the agent went offline before the grace")
	}
}

// A goodbye is checked like every request: a run that is no plain word,
// or a body that is not an AgentBye, is refused and changes nothing.
func TestGoodbyeRefusesBadRequests(t *testing.T) {
	s, names := newHubServer(t, 1)
	c := names[0]
	end, _ := pollRun(t, s, c, "run1")
	defer end()
	for _, body := range []string{`{"run":"a b"}`, `{"run":""}`, `{"run":"run1","extra":1}`, `not json`} {
		if err := say(t, s, c, body); !badRequestErr(err) {
			t.Errorf("goodbye %s: %v; want a bad request", body, err)
		}
		if !s.hub.online(c) {
			t.Fatalf("a refused goodbye %s took the agent offline", body)
		}
	}
	bad := httptest.NewRequest("GET", "/api/v1/agent/orders?run=a%20b", nil)
	if err := s.agentOrders(httptest.NewRecorder(), bad, c); !badRequestErr(err) {
		t.Errorf("a poll with the run %q: %v; want a bad request", "a b", err)
	}
}

// badRequestErr: err is answered 400 (a handler's own, or a request type's
// validation).
func badRequestErr(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		return he.body.Code == api.CodeBadRequest
	}
	return errors.Is(err, api.ErrInvalid)
}
