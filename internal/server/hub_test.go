package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
