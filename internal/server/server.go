// Package server is Kura's backup server: an HTTPS API (TLS 1.3, /api/v1)
// over the local engine. It owns the catalog, the libraries and their
// drives, and a job queue that runs one job per drive; agents dial in,
// take job orders and stream their data straight to the drive's writer.
//
// Trust: a private CA in the server home signs the server certificate and
// the agents' client certificates (internal/pki). Admin calls carry the
// admin token (admin.token in the home) as a bearer token; agent calls are
// mutual TLS, checked against the catalog's client table on every request,
// so a revoked agent is refused at once.
//
// Invariants:
//
//   - A queued job is a catalog row with its request; a restart finds it
//     and runs it. A job that was running when the server died is reclaimed
//     on the next start (its lease's holder is gone, or the lease expired):
//     interrupted, its saveset incomplete, its drive freed.
//   - A job holds its drive from start to end, and a drive runs one job:
//     a drive lease in the catalog, so a CLI job on the same home never
//     takes a drive a server's job holds, nor the other way round.
//   - An agent sees only its own jobs: every agent endpoint checks that the
//     job's agent is the caller.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/service"
)

// Version is reported by GET /api/v1/server.
var Version = "0.2"

// Options configure a server. Zero values take the defaults.
type Options struct {
	Home  string   // server home (catalog, libraries, CA); default as the CLI's
	Hosts []string // names and addresses for the server certificate, besides localhost
	Name  string   // server name (default: host name)
	Clock monitor.Clock
	Log   io.Writer // the server log (default stderr)
	// PollTimeout is how long an agent's order poll is held open (25 s).
	PollTimeout time.Duration
	// SchedulerEvery is how often the scheduler looks at the policies (15 s);
	// 0 keeps the default, a negative value turns the scheduler off (tests
	// call Tick themselves).
	SchedulerEvery time.Duration
	// Events, when set, also receives every job event, in order, from the
	// goroutine that emits it (metrics, a web console): it must return
	// promptly, as the job waits for it.
	Events monitor.Sink
	// IdleTimeout is how long a running job waits on a silent agent before
	// it fails (60 s).
	IdleTimeout time.Duration
	// StartTimeout is how long an order waits for its agent to pick it up
	// and start (60 s).
	StartTimeout time.Duration
	// OnlineGrace: an agent counts as connected this long after its last
	// poll ended (PollTimeout + 10 s).
	OnlineGrace time.Duration
	// Catalog, when set, is the catalog instead of the SQLite file in the
	// home: a postgres:// URL (catalog.Open).
	Catalog string
	// LeaderTTL is how long the leader lease lasts (Lead;
	// DefaultLeaderTTL).
	LeaderTTL time.Duration
	// RecoveryRecipients are age X25519 public keys ("age1…") every
	// encrypting client's savesets are encrypted to as well as to the
	// client's own key: their holder (an administrator) can restore a lost
	// client's backups elsewhere. The server holds no private key. When
	// set, New keeps them in the home (SetRecoveryRecipients), replacing
	// those kept there; when not, the server uses those kept there.
	RecoveryRecipients []string
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = monitor.SystemClock{}
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = 25 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.SchedulerEvery == 0 {
		o.SchedulerEvery = 15 * time.Second
	}
	if o.OnlineGrace == 0 {
		o.OnlineGrace = o.PollTimeout + 10*time.Second
	}
	if o.Name == "" {
		o.Name, _ = os.Hostname()
	}
	return o
}

// Server is a running Kura server.
type Server struct {
	opts      Options
	env       *engine.Env
	svc       *service.Local // the admin actions (internal/service)
	ca        *pki.CA
	cert      tls.Certificate
	adminHash string
	log       *slog.Logger
	started   time.Time
	bus       *bus
	hub       *hub
	nodes     *nodeHub
	spools    spoolBook // the agents' WAL spools (walspool.go)
	q         *queue
	metrics   http.Handler // GET /metrics (metrics.go)

	catalogDue atomic.Bool            // the catalog backup after the daily prune is to be queued
	dataSent   atomic.Int64           // saveset bytes sent to agents (restores, kura agent verify)
	url        atomic.Pointer[string] // the API's address while Serve serves it (URL)

	mu      sync.Mutex
	running map[int64]*runningJob
	ctx     context.Context
	cancel  context.CancelCauseFunc
	wg      sync.WaitGroup // the queue and the running jobs
}

// Files in the server home.
const (
	adminTokenFile = "admin.token"
	pkiDir         = "pki"
)

// New opens (or sets up) the server home: catalog, CA, server certificate
// and admin token. FirstStart reports whether the CA and token were made now.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	for _, r := range opts.RecoveryRecipients {
		if _, err := seal.ParseRecipient(r); err != nil {
			return nil, fmt.Errorf("recovery recipient: %w", err)
		}
	}
	env, err := engine.OpenCatalog(opts.Home, opts.Catalog)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, env: env, log: slog.New(slog.NewTextHandler(opts.Log, nil)),
		svc: service.New(env), started: opts.Clock.Now(), running: map[int64]*runningJob{}}
	s.svc.DriveJob = s.driveJob // load/unload name the job that holds a drive
	s.svc.WithQueue(s.Submit).WithClock(opts.Clock.Now)
	fail := func(err error) (*Server, error) { env.Close(); return nil, err }
	for _, w := range env.ExposedFolders() {
		s.log.Warn(w)
	}
	if len(opts.RecoveryRecipients) > 0 {
		if err := SetRecoveryRecipients(env.Home, opts.RecoveryRecipients); err != nil {
			return fail(err)
		}
	}
	if _, err := s.recoveryRecipients(); err != nil {
		return fail(err)
	}
	dir := filepath.Join(env.Home, pkiDir)
	if err := private.MkdirAll(dir); err != nil {
		return fail(err)
	}
	ca, _, err := pki.LoadOrCreateCA(dir, opts.Name)
	if err != nil {
		return fail(fmt.Errorf("server CA: %w", err))
	}
	s.ca = ca
	if s.cert, err = ca.ServerCertificate(dir, opts.Hosts); err != nil {
		return fail(fmt.Errorf("server certificate: %w", err))
	}
	tok, err := s.loadAdminToken()
	if err != nil {
		return fail(err)
	}
	s.adminHash = pki.HashSecret(tok.Secret)
	// The default library exists before any job or daily task needs it.
	if _, err := env.Changer(""); err != nil {
		return fail(fmt.Errorf("the default library: %w", err))
	}
	s.bus = newBus()
	env.Events = s.bus
	if opts.Events != nil {
		env.Events = monitor.SinkFunc(func(ev monitor.Event) { s.bus.Event(ev); opts.Events.Event(ev) })
	}
	env.Clock = opts.Clock
	s.hub = newHub(s)
	s.nodes = newNodeHub(s)
	env.Nodes = s.nodes
	s.q = newQueue(s)
	if s.metrics, err = s.metricsHandler(); err != nil {
		return fail(err)
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s, nil
}

// loadAdminToken reads admin.token, or makes it on first start.
func (s *Server) loadAdminToken() (pki.Token, error) {
	p := filepath.Join(s.env.Home, adminTokenFile)
	b, err := os.ReadFile(p)
	if err == nil {
		t, err := pki.ParseTokenKind(string(b), pki.KindAdmin)
		if err != nil {
			return pki.Token{}, fmt.Errorf("%s: %w", p, err)
		}
		if t.CAFingerprint != s.ca.Fingerprint() {
			// The CA was replaced: the old token pins the old one.
			return s.newAdminToken(p)
		}
		return t, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return pki.Token{}, err
	}
	return s.newAdminToken(p)
}

func (s *Server) newAdminToken(p string) (pki.Token, error) {
	t, err := pki.NewToken(pki.KindAdmin, s.ca.Fingerprint())
	if err != nil {
		return pki.Token{}, err
	}
	tmp := p + ".tmp"
	if err := private.WriteFile(tmp, []byte(t.String()+"\n")); err != nil {
		return pki.Token{}, err
	}
	if err := os.Rename(tmp, p); err != nil {
		return pki.Token{}, err
	}
	return t, nil
}

// Home is the server's home folder.
func (s *Server) Home() string { return s.env.Home }

// AdminTokenPath is where the admin token is kept.
func (s *Server) AdminTokenPath() string { return filepath.Join(s.env.Home, adminTokenFile) }

// CAFingerprint identifies the server's CA.
func (s *Server) CAFingerprint() string { return s.ca.Fingerprint() }

// Env is the server's engine environment (for tests).
func (s *Server) Env() *engine.Env { return s.env }

// Serve answers on ln until ctx ends or Close is called. It starts the
// job queue.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), TLSConfig: pki.ServerTLSConfig(s.ca, s.cert),
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.q.run(s.ctx) }()
	go func() { defer s.wg.Done(); s.hub.runSaveSeen(s.ctx) }()
	if s.opts.SchedulerEvery > 0 {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.runScheduler(s.ctx) }()
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-s.ctx.Done():
		}
		s.cancel(errStopping)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		close(done)
	}()
	u := PublicURL(ln.Addr())
	s.url.Store(&u)
	s.log.Info("server listening", "addr", ln.Addr().String(), "home", s.env.Home, "ca", s.ca.Fingerprint())
	err := srv.ServeTLS(ln, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if cause := context.Cause(s.ctx); err == nil && errors.Is(cause, ErrLeaderLost) {
		err = cause
	}
	return err
}

// errStopping is why the jobs running when the server stops are canceled.
var errStopping = fmt.Errorf("%w: the server is stopping", context.Canceled)

// Close stops the queue, cancels running jobs and waits for them to record
// their end, and closes the catalog.
func (s *Server) Close() error {
	s.cancel(errStopping)
	s.wg.Wait()
	s.hub.saveSeen()
	return s.env.Close()
}

// Handler is the API's HTTP handler, built from routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		pattern := rt.Method + " " + api.Prefix + rt.Path
		switch {
		case rt.admin != nil:
			mux.Handle(pattern, s.adminOnly(rt.admin))
		case rt.agent != nil:
			mux.Handle(pattern, s.agentOnly(rt.agent))
		default:
			mux.Handle(pattern, s.plain(rt.open))
		}
	}
	if s.metrics != nil { // nil only in a Server that New did not make (tests of the routes)
		mux.Handle("GET /metrics", s.metrics)
	}
	mux.Handle("/", s.plain(func(w http.ResponseWriter, r *http.Request) error {
		return apiErr(api.CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	}))
	return mux
}

// route is one endpoint: its method, its path under api.Prefix (path
// parameters as {name}) and its handler, which says how the caller is
// checked: admin (bearer admin token), agent (client certificate) or open.
type route struct {
	Method, Path string
	admin        func(w http.ResponseWriter, r *http.Request) error
	agent        func(w http.ResponseWriter, r *http.Request, client string) error
	open         func(w http.ResponseWriter, r *http.Request) error
}

// routes is every endpoint the server serves; Handler builds its mux from
// it, and a test checks it against the OpenAPI document (api.OpenAPI).
func (s *Server) routes() []route {
	admin := func(method, path string, h func(w http.ResponseWriter, r *http.Request) error) route {
		return route{Method: method, Path: path, admin: h}
	}
	agent := func(method, path string, h func(w http.ResponseWriter, r *http.Request, client string) error) route {
		return route{Method: method, Path: path, agent: h}
	}
	open := func(method, path string, h func(w http.ResponseWriter, r *http.Request) error) route {
		return route{Method: method, Path: path, open: h}
	}
	rs := []route{
		open("GET", "/openapi.json", s.getOpenAPI),
		admin("GET", "/server", s.getServer),
		admin("POST", "/tokens", s.postToken),
		admin("GET", "/clients", s.getClients),
		admin("GET", "/clients/{name}", s.getClient),
		admin("PATCH", "/clients/{name}", s.patchClient),
		admin("POST", "/clients/{name}/revoke", s.revokeClient),
		admin("POST", "/jobs", s.postJob),
		admin("POST", "/jobs/{id}/cancel", s.cancelJob),
		admin("GET", "/jobs/{id}/events", s.jobEvents),
		admin("GET", "/prune", s.getPrunePlan),
		open("POST", "/enroll", s.postEnroll),
		agent("GET", "/agent/orders", s.agentOrders),
		agent("POST", "/agent/bye", s.agentBye),
		agent("POST", "/agent/wal", s.agentWAL),
		agent("POST", "/agent/walspool", s.agentWALSpool),
		agent("GET", "/agent/savesets", s.agentOwnSavesets),
		agent("GET", "/agent/savesets/{ss}/index", s.agentOwnIndex),
		agent("GET", "/agent/savesets/{ss}/data", s.agentOwnData),
		agent("POST", "/agent/savesets/{ss}/ticket", s.agentOwnTicket),
		agent("POST", "/agent/jobs/{id}/data", s.agentBackupData),
		agent("PUT", "/agent/jobs/{id}/index", s.agentBackupIndex),
		agent("GET", "/agent/jobs/{id}/savesets/{ss}", s.agentSaveset),
		agent("GET", "/agent/jobs/{id}/savesets/{ss}/index", s.agentSavesetIndex),
		agent("GET", "/agent/jobs/{id}/savesets/{ss}/data", s.agentSavesetData),
		agent("POST", "/agent/jobs/{id}/savesets/{ss}/ticket", s.agentSavesetTicket),
		agent("POST", "/agent/jobs/{id}/progress", s.agentProgress),
		agent("POST", "/agent/jobs/{id}/result", s.agentResult),
		agent("GET", "/node/tunnel", s.nodeTunnel),
	}
	// The admin resources of the service layer, one group per file.
	for _, group := range [][]route{s.libraryRoutes(), s.tapeRoutes(), s.savesetRoutes(), s.selectionRoutes(), s.jobRoutes(), s.policyRoutes(), s.catalogCopyRoutes(), s.planRoutes(), s.nodeRoutes()} {
		rs = append(rs, group...)
	}
	return rs
}

// getOpenAPI serves the OpenAPI document of this API (docs/openapi.json).
func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(api.OpenAPI)
	return err
}

// httpError is an error with its HTTP status and API code.
type httpError struct {
	status int
	body   api.Error
}

func (e *httpError) Error() string { return e.body.Message }

// apiErr is an error answered with code and the HTTP status api.Codes
// gives it.
func apiErr(code, format string, args ...any) error {
	return &httpError{status: api.HTTPStatus(code), body: api.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// missing is a not_found answer about a thing of kind what (saveset,
// client, ...), named in the answer's field: the CLI says where to look.
func missing(what, format string, args ...any) error {
	return &httpError{status: api.HTTPStatus(api.CodeNotFound),
		body: api.Error{Code: api.CodeNotFound, Field: what, Message: fmt.Sprintf(format, args...)}}
}

func badRequest(format string, args ...any) error {
	return apiErr(api.CodeBadRequest, format, args...)
}

// badField is a bad request that names the field at fault (its JSON name,
// or the query or path parameter) in the answer's field and message.
func badField(field, format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, body: api.Error{
		Code: api.CodeBadRequest, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}}
}

// writeErr answers with an error body; unexpected errors are logged and
// answered as internal. A request that failed validation names its field.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	var ae *api.Error
	if !errors.As(err, &he) && errors.As(err, &ae) && ae.Code != api.CodeInternal {
		he = &httpError{status: api.HTTPStatus(ae.Code), body: *ae}
	}
	if he == nil {
		code := api.CodeInternal
		switch {
		case errors.Is(err, api.ErrInvalid), errors.Is(err, catalog.ErrInvalid):
			code = api.CodeBadRequest
		case errors.Is(err, catalog.ErrNotFound):
			code = api.CodeNotFound
		case errors.Is(err, catalog.ErrExists):
			code = api.CodeConflict
		default:
			s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		he = &httpError{status: api.HTTPStatus(code), body: api.Error{Code: code, Message: err.Error()}}
		if fe := (*api.FieldError)(nil); errors.As(err, &fe) {
			he.body.Field = fe.Field
		}
	}
	if he.status == http.StatusBadRequest {
		s.log.Warn("refused: bad request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", he.body.Message)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(he.status)
	_ = json.NewEncoder(w).Encode(he.body)
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// writeJSONStatus answers with a status other than 200 and a JSON body.
func writeJSONStatus(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// maxJSON bounds a JSON request body.
const maxJSON = 1 << 20

func readJSON(r *http.Request, v any) error {
	return decodeJSON(r.Body, v)
}

func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(body, maxJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	return nil
}

func (s *Server) plain(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeErr(w, r, err)
		}
	})
}

// adminOnly checks the bearer token.
func (s *Server) adminOnly(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return s.plain(func(w http.ResponseWriter, r *http.Request) error {
		auth := r.Header.Get("Authorization")
		const bearer = "Bearer "
		if len(auth) <= len(bearer) || auth[:len(bearer)] != bearer {
			s.log.Warn("refused: no admin token", "remote", r.RemoteAddr, "path", r.URL.Path)
			return apiErr(api.CodeUnauthorized, "this call needs the admin token (kura login)")
		}
		t, err := pki.ParseTokenKind(auth[len(bearer):], pki.KindAdmin)
		if err != nil || !pki.HashEqual(pki.HashSecret(t.Secret), s.adminHash) {
			s.log.Warn("refused: wrong admin token", "remote", r.RemoteAddr, "path", r.URL.Path)
			return apiErr(api.CodeUnauthorized, "wrong admin token")
		}
		return h(w, r)
	})
}

// agentOnly checks the client certificate against the client table.
func (s *Server) agentOnly(h func(w http.ResponseWriter, r *http.Request, client string) error) http.Handler {
	return s.plain(func(w http.ResponseWriter, r *http.Request) error {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			s.log.Warn("refused: agent call without a valid client certificate", "remote", r.RemoteAddr, "path", r.URL.Path)
			return apiErr(api.CodeUnauthorized, "agent calls need a client certificate from this server (kura agent enroll)")
		}
		cert := r.TLS.VerifiedChains[0][0]
		name := cert.Subject.CommonName
		c, err := s.env.Catalog.Client(name)
		if errors.Is(err, catalog.ErrNotFound) {
			s.log.Warn("refused: unknown client", "client", name, "remote", r.RemoteAddr)
			return apiErr(api.CodeForbidden, "client %q is not enrolled here", name)
		}
		if err != nil {
			return fmt.Errorf("looking up client %s: %w", name, err) // a 500: the agent retries
		}
		if !c.Revoked.IsZero() {
			s.log.Warn("refused: revoked client", "client", name, "remote", r.RemoteAddr)
			return apiErr(api.CodeForbidden, "client %q was revoked on %s", name, c.Revoked.Local().Format(time.DateTime))
		}
		if !pki.HashEqual(c.CertFingerprint, pki.Fingerprint(cert)) {
			s.log.Warn("refused: certificate does not match the enrolled one", "client", name, "remote", r.RemoteAddr)
			return apiErr(api.CodeForbidden, "client %q: this certificate is not the enrolled one", name)
		}
		if c.IsNode() != (r.URL.Path == api.Prefix+"/node/tunnel") {
			s.log.Warn("refused: an agent call from a storage node, or the reverse", "client", name, "path", r.URL.Path)
			return apiErr(api.CodeForbidden, "%s is enrolled as a %s and may not call %s", name, c.Kind, r.URL.Path)
		}
		s.hub.seen(name, r.RemoteAddr)
		return h(w, r, name)
	})
}

func pathID(r *http.Request, key string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue(key), 10, 64)
	if err != nil || id <= 0 {
		return 0, badField(key, "must be a positive number, not %q", r.PathValue(key))
	}
	return id, nil
}

func (s *Server) getServer(w http.ResponseWriter, r *http.Request) error {
	drives := 0
	libs, err := s.env.Catalog.Libraries()
	if err != nil {
		return err
	}
	for _, l := range libs {
		if lib, err := s.env.Changer(l.Name); err == nil {
			drives += lib.Config().Drives
		}
	}
	return writeJSON(w, api.ServerInfo{Name: s.opts.Name, Version: Version, CAFingerprint: s.ca.Fingerprint(),
		Started: s.started, Drives: drives, Goroutines: runtime.NumGoroutine()})
}

// IsHome reports whether dir is a server home (it has the server's CA).
func IsHome(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, pkiDir, "ca.crt"))
	return err == nil
}

// call is a typed admin endpoint: it reads the request (path, query, body)
// and returns the service's answer, sent as JSON with status ok; an answer
// of nil is 204 No Content.
func call(method, path string, ok int, fn func(r *http.Request) (any, error)) route {
	return route{Method: method, Path: path, admin: func(w http.ResponseWriter, r *http.Request) error {
		v, err := fn(r)
		if err != nil {
			return err
		}
		if v == nil {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		return writeJSONStatus(w, ok, v)
	}}
}

// body decodes a request's JSON body into a new T.
func body[T any](r *http.Request) (T, error) {
	var v T
	err := readJSON(r, &v)
	return v, err
}

// PublicURL is the address clients reach a server listening on addr at:
// https://HOST:PORT, with the machine's host name when it listens on
// every address.
func PublicURL(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return fmt.Sprintf("https://%s:%d", h, tcp.Port)
		}
	}
	return "https://" + addr.String()
}

// URL is the address Serve serves the API at ("" before it starts): what
// an agent enrolls with.
func (s *Server) URL() string {
	if u := s.url.Load(); u != nil {
		return *u
	}
	return ""
}
