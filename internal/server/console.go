package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/console"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/service"
)

// consoleBackend is what the web console calls: the same service the API's
// handlers run, and the server's clients, cancel and event bus.
type consoleBackend struct {
	*service.Local
	s *Server
}

var _ console.Backend = consoleBackend{}

func (b consoleBackend) Clients(ctx context.Context) ([]api.Client, error) {
	cs, err := b.s.env.Catalog.Clients()
	if err != nil {
		return nil, err
	}
	out := []api.Client{}
	for _, c := range cs {
		out = append(out, APIClient(c, c.Revoked.IsZero() && b.s.hub.online(c.Name)))
	}
	return b.s.withSpools(out)
}

func (b consoleBackend) CreateToken(ctx context.Context, req api.TokenRequest) (*api.TokenResponse, error) {
	t, err := b.s.CreateToken(req)
	if err != nil {
		return nil, consoleErr(err)
	}
	return &t, nil
}

func (b consoleBackend) RevokeClient(ctx context.Context, name string) (*api.Client, error) {
	c, err := b.s.RevokeClient(name)
	if err != nil {
		return nil, consoleErr(err)
	}
	return &c, nil
}

func (b consoleBackend) UpdateClient(ctx context.Context, name string, req api.ClientUpdate) (*api.Client, error) {
	c, err := b.s.UpdateClient(name, req)
	if err != nil {
		return nil, consoleErr(err)
	}
	return &c, nil
}

func (b consoleBackend) ServerURL() string { return b.s.URL() }

// CreatePolicy and EditPolicy refuse a policy of the server's own machine,
// as POST and PATCH /policies do.
func (b consoleBackend) CreatePolicy(ctx context.Context, req api.PolicyCreate) (*api.Policy, error) {
	if req.Client == "" {
		return nil, errConsolePolicyClient
	}
	return b.Local.CreatePolicy(ctx, req)
}

func (b consoleBackend) EditPolicy(ctx context.Context, name string, req api.PolicyEdit) (*api.Policy, error) {
	p, err := b.Local.Policy(ctx, name)
	if err != nil {
		return nil, err
	}
	if p.Client == "" {
		return nil, errConsolePolicyClient
	}
	return b.Local.EditPolicy(ctx, p.Name, req)
}

var errConsolePolicyClient = &api.Error{Code: api.CodeBadRequest, Field: "client",
	Message: "a policy on a server backs up a client: choose the client whose selection it backs up"}

// consoleErr is err as the console shows it: an *api.Error with its code
// where the API would answer one (the catalog's not found, invalid and
// exists, the handlers' own answers), so a bad request reads as one.
func consoleErr(err error) error {
	if err == nil {
		return nil
	}
	var he *httpError
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return err
	case errors.As(err, &he):
		e := he.body
		return &e
	case errors.Is(err, api.ErrInvalid), errors.Is(err, catalog.ErrInvalid):
		return &api.Error{Code: api.CodeBadRequest, Message: err.Error()}
	case errors.Is(err, catalog.ErrNotFound):
		return &api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, catalog.ErrExists):
		return &api.Error{Code: api.CodeConflict, Message: err.Error()}
	}
	return err
}

func (b consoleBackend) Cancel(ctx context.Context, id int64, why string) error {
	return b.s.Cancel(id, why)
}

// Submit queues a job as POST /api/v1/jobs does.
func (b consoleBackend) Submit(ctx context.Context, req api.JobRequest) ([]int64, error) {
	ids, err := b.s.Submit(req)
	return ids, consoleErr(err)
}

// Events follows a job on the server's event bus, as the API's event
// stream does.
func (b consoleBackend) Events(ctx context.Context, id int64) (<-chan api.Event, error) {
	evs, err := b.s.follow(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(chan api.Event)
	go func() {
		defer close(out)
		for ev := range evs {
			select {
			case out <- APIEvent(ev):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Console is the web console's handler (internal/console) over this
// server; its sessions are kept in the catalog. idle is the session idle
// expiry and lifetime its absolute lifetime (0: the console's defaults).
func (s *Server) Console(idle, lifetime time.Duration) (http.Handler, error) {
	return console.New(console.Options{Backend: consoleBackend{Local: s.svc, s: s},
		Users: console.OpenUsers(console.UsersFile(s.env.Home)), AdminToken: s.isAdminToken,
		AdminTokenStamp: s.adminTokenStamp(), Sessions: s.env.Catalog,
		Idle: idle, Lifetime: lifetime, Now: s.opts.Clock.Now, Log: s.log, BenchDir: filepath.Join(s.env.Home, "benchmarks")})
}

// adminTokenStamp fingerprints the admin token for the console's sessions
// (which end when the server runs with another token): a hash of the
// token's hash, kept in the catalog, from which neither can be had back.
func (s *Server) adminTokenStamp() string {
	sum := sha256.Sum256([]byte("kura console admin token\x00" + s.adminHash))
	return hex.EncodeToString(sum[:16])
}

// isAdminToken reports whether text is the admin token.
func (s *Server) isAdminToken(text string) bool {
	t, err := pki.ParseTokenKind(text, pki.KindAdmin)
	return err == nil && pki.HashEqual(pki.HashSecret(t.Secret), s.adminHash)
}

// ServeConsole serves the web console on ln (its own port, the server's
// TLS certificate) until ctx ends or the server stops. Run it beside Serve.
// idle and lifetime are as for Console.
func (s *Server) ServeConsole(ctx context.Context, ln net.Listener, idle, lifetime time.Duration) error {
	h, err := s.Console(idle, lifetime)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, TLSConfig: pki.ServerTLSConfig(s.ca, s.cert),
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	srv.TLSConfig.ClientAuth = tls.NoClientCert // browsers sign in with a cookie, not a client certificate
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-s.ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		close(done)
	}()
	s.log.Info("console listening", "addr", ln.Addr().String())
	err = srv.ServeTLS(ln, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
