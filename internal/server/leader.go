package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
)

// ErrLeaderLost: another server took the catalog's leader lease (this one
// could not renew it in time); this one stops, and Serve returns it.
var ErrLeaderLost = errors.New("lost the leader lease to another server")

// DefaultLeaderTTL is how long the leader lease lasts after a renewal: a
// standby server takes over at most this long (and a third of it) after
// the leader died.
const DefaultLeaderTTL = 30 * time.Second

// Lead blocks until this server holds the catalog's leader lease: of the
// servers sharing one catalog, only the leader serves, runs the job queue
// and the scheduler; the others wait here, trying every third of the
// lease's length. waiting, if not nil, is called once with the lease of the
// leader while this one waits. Then Lead keeps the lease renewed until the
// server stops, and releases it then so that a standby takes over at once.
// A leader that cannot renew its lease before it expires stops, and Serve
// returns ErrLeaderLost. Lease times are the system clock's, as for job
// leases: the servers' clocks must agree to well within the lease.
//
// A server started without Lead (tests, embedders with one server per
// catalog) does not take part.
func (s *Server) Lead(ctx context.Context, waiting func(l *catalog.LeaderLease)) error {
	ttl := s.opts.LeaderTTL
	if ttl <= 0 {
		ttl = DefaultLeaderTTL
	}
	// The holder is the process's (a job lease's: host, PID, start) and
	// this server's: a process might run two.
	jo := s.env.Jobs.Options()
	var b [4]byte
	rand.Read(b[:])
	holder := jo.Holder + "/" + hex.EncodeToString(b[:])
	gone := func(h string) string {
		proc, _, _ := strings.Cut(h, "/")
		return jo.Gone(proc)
	}
	every := ttl / 3
	told := false
	for {
		l, err := s.env.Catalog.AcquireLeader(holder, time.Now(), ttl, gone)
		if err == nil {
			break
		}
		if !errors.Is(err, catalog.ErrLeaseHeld) {
			return err
		}
		if !told && waiting != nil {
			waiting(l)
			told = true
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.ctx.Done():
			t.Stop()
			return context.Cause(s.ctx)
		case <-t.C:
		}
	}
	s.log.Info("leading the servers on this catalog", "holder", holder, "lease", ttl)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.keepLead(holder, ttl) }()
	return nil
}

// keepLead renews the leader lease every third of its length until the
// server stops, then releases it. A renewal the lease was taken from, or
// renewals that fail until the lease would have expired, stop the server.
func (s *Server) keepLead(holder string, ttl time.Duration) {
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-s.ctx.Done():
			if err := s.env.Catalog.ReleaseLeader(holder); err != nil {
				s.log.Error("releasing the leader lease", "err", err)
			}
			return
		case <-t.C:
		}
		now := time.Now()
		err := s.env.Catalog.RenewLeader(holder, now, ttl)
		switch {
		case err == nil:
			renewed = now
		case errors.Is(err, catalog.ErrLeaseLost) || now.Sub(renewed) >= ttl:
			s.log.Error("stopping: the leader lease is lost", "err", err)
			s.cancel(fmt.Errorf("%w: %v", ErrLeaderLost, err))
			return
		default:
			s.log.Warn("renewing the leader lease", "err", err)
		}
	}
}
