package server_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/server"
)

// A server that leads keeps its lease renewed; one whose lease another
// server took stops serving, and Serve says why; a second server waits in
// Lead while the first leads, and leads once the first stops.
func TestLeaderLease(t *testing.T) {
	home := t.TempDir()
	opts := fastOpts
	opts.Home, opts.Log, opts.Name = home, &logWriter{t: t, prefix: "server: "}, "test"
	opts.LeaderTTL = 600 * time.Millisecond
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Lead(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(filepath.Join(home, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	first, err := cat.Leader()
	if err != nil {
		t.Fatal(err)
	}

	// A second server on the same catalog stands by, told who leads.
	opts2 := opts
	opts2.Home = t.TempDir()
	opts2.Catalog = filepath.Join(home, "catalog.db")
	srv2, err := server.New(opts2)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	waiting := make(chan *catalog.LeaderLease, 1)
	led := make(chan error, 1)
	go func() { led <- srv2.Lead(t.Context(), func(l *catalog.LeaderLease) { waiting <- l }) }()
	if l := leaderRecv(t, waiting); l.Holder != first.Holder {
		t.Fatalf("the standby was told %q leads, want %q", l.Holder, first.Holder)
	}

	// The lease renews: it is still the first server's after several
	// lease lengths, and its expiry moves on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	for {
		l, err := cat.Leader()
		if err != nil {
			t.Fatal(err)
		}
		if l.Holder != first.Holder {
			t.Fatalf("the leader changed to %s while the first renewed", l.Holder)
		}
		if l.Expires.After(first.Expires.Add(3 * opts.LeaderTTL)) {
			break
		}
		select {
		case err := <-led:
			t.Fatalf("the standby led while the first renewed: %v", err)
		case <-time.After(50 * time.Millisecond): // polling the lease row
		}
	}

	// Another holder takes the lease (as after a pause of the first longer
	// than the lease): the first stops, the standby still waits.
	if _, err := cat.AcquireLeader("thief", time.Now(), time.Hour, func(string) string { return "stolen" }); err != nil {
		t.Fatal(err)
	}
	if err := leaderRecv(t, served); !errors.Is(err, server.ErrLeaderLost) {
		t.Fatalf("Serve of a server whose lease was taken: %v, want ErrLeaderLost", err)
	}
	// The thief goes: the standby leads.
	if err := cat.ReleaseLeader("thief"); err != nil {
		t.Fatal(err)
	}
	if err := leaderRecv(t, led); err != nil {
		t.Fatalf("the standby after the leader released: %v", err)
	}
	if l, err := cat.Leader(); err != nil || l.Holder == first.Holder || l.Holder == "thief" {
		t.Fatalf("leader after the takeover: %+v, %v", l, err)
	}
}

// leaderRecv receives from ch; it fails the test if nothing comes (a guard
// against a hang, not a wait).
func leaderRecv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("nothing came within 30 s")
		panic("unreachable")
	}
}
