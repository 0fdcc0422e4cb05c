package server_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// clientState is one client as the client list shows it now.
func (r *rig) clientState(name string) api.Client {
	r.t.Helper()
	cs, err := r.admin.Clients(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	r.t.Fatalf("client %s is not in the client list", name)
	return api.Client{}
}

// An agent stopped cleanly (SIGTERM, Ctrl-C: its context ends) says
// goodbye before Run returns, so the client list shows it offline right
// away, though the server's grace would count it connected for a minute
// more; metrics agree, and a backup submitted then waits with the reason
// that its agent is offline instead of starting. Started again, the agent
// is back and the backup runs.
func TestStoppedAgentIsOfflineAtOnce(t *testing.T) {
	t.Parallel()
	opts := fastOpts
	opts.OnlineGrace = time.Minute
	r := startServerWith(t, t.TempDir(), "", opts)
	home, stop := r.runAgent("c1")
	before := r.clientState("c1")
	stop() // returns once Run has returned: after the goodbye was answered
	c := r.clientState("c1")
	if c.Connected {
		t.Fatal("the client list shows c1 connected right after its agent stopped cleanly")
	}
	if c.LastSeen.IsZero() || c.LastSeen.Before(before.LastSeen) {
		t.Errorf("c1 last seen %s; want its goodbye's time (not before %s)", c.LastSeen, before.LastSeen)
	}
	r.waitLog("agent said goodbye", "client=c1")

	tok, err := os.ReadFile(r.srv.MetricsTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	if _, body := r.scrape(string(tok)); !strings.Contains(string(body), "\nkura_agents_connected 0\n") {
		t.Errorf("metrics after the stop do not say kura_agents_connected 0")
	}

	src := t.TempDir()
	makeTree(t, src, 4, 17)
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})[0]
	j := r.pollJob(id, 10*time.Second, "looked at by the queue", func(j *api.Job) bool { return j.State != catalog.StateQueued })
	if j.State != catalog.StateWaiting || j.Reason != "waiting for agent c1 to connect" {
		t.Fatalf("a backup of c1 right after its agent stopped: %s (%q); want waiting for agent c1 to connect", j.State, j.Reason)
	}

	r.startAgent(home, "c1")
	if j := r.wait(id); j.State != catalog.StateSucceeded {
		t.Errorf("the waiting backup once c1 is back: %s (%s)", j.State, j.Error)
	}
}

// An agent whose connection is cut (a crash, a dead network: no goodbye)
// still counts as connected for the server's grace after its last poll,
// as before: the server cannot tell a cut from a poll on its way.
func TestAgentCutWithoutGoodbyeStaysOnlineForTheGrace(t *testing.T) {
	t.Parallel()
	opts := fastOpts
	opts.OnlineGrace = time.Minute
	r := startServerWith(t, t.TempDir(), "", opts)
	px := startProxy(t, r.addr)
	stop := r.startAgent(r.enroll("c1", px.url()), "c1")
	px.close() // the network is gone for good: no goodbye gets through
	stop()
	if !r.clientState("c1").Connected {
		t.Error("an agent cut off without a goodbye went offline before the grace")
	}
	if strings.Contains(r.log.String(), "agent said goodbye") {
		t.Error("the server logged a goodbye that could not have reached it")
	}
}

// A goodbye is an agent call like the others: one from a revoked client,
// or from a certificate of this CA whose name is not enrolled, is refused
// and does not touch the client list.
func TestGoodbyeFromRevokedOrUnknownClientRefused(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home := r.enroll("c1", "")
	if _, err := r.admin.RevokeClient(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	err := agentAPI(t, home, r.url).AgentBye(t.Context(), api.AgentBye{Run: "run1"})
	wantCode(t, "a goodbye from revoked c1", err, api.CodeForbidden)
	r.waitLog("refused: revoked client", "client=c1")

	err = newClient(t, r.url, r.unenrolledTLS(t, "ghost"), "").AgentBye(t.Context(), api.AgentBye{Run: "run1"})
	wantCode(t, "a goodbye from ghost, not enrolled", err, api.CodeForbidden)
	r.waitLog("refused: unknown client", "client=ghost")

	cs, err := r.admin.Clients(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Name != "c1" || cs[0].Revoked.IsZero() || !cs[0].LastSeen.IsZero() {
		t.Errorf("the client list after the refused goodbyes: %+v; want c1 alone, revoked, never seen", cs)
	}
}

// An agent stopped while its server does not answer (a frozen network:
// no reset, no bytes) gives its goodbye up after ByeTimeout: the stop
// does not hang.
func TestAgentStopDoesNotHangOnASilentServer(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	px := startProxy(t, r.addr)
	home := r.enroll("c1", px.url())
	alog := &logWriter{t: t, prefix: "c1: "}
	a, err := agent.Open(agent.Options{Home: home, Log: alog, MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, ByeTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r.waitOnline("c1", true)
	px.freeze()
	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		t.Logf("Run returned %s after the stop", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's stop hung on a silent server (its goodbye has a 300ms timeout)")
	}
	if !strings.Contains(alog.String(), "could not tell the server this agent is stopping") {
		t.Error("the agent did not log that its goodbye failed")
	}
}
