// Package agent is the Kura agent: it runs on a machine whose files are
// backed up, dials out to its server (so it works behind NAT and
// firewalls), takes job orders, and does the client side of each job: it
// reads and compresses files and streams the frames to the server's drive
// (backup), or fetches savesets from the server and writes files
// (restore).
//
// Identity: `kura agent enroll` makes a key, sends a certificate request
// with a one-time token, and keeps the certificate the server's CA signed
// and the CA itself in the agent's folder (HOME/agent). Every later
// connection is mutual TLS and trusts only that CA.
package agent

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/seal"
)

// Files in the agent folder.
const (
	dirName    = "agent"
	configFile = "agent.json"
	certFile   = "agent.crt"
	keyFile    = "agent.key"
	caFile     = "ca.crt"
)

// Config is what enrollment leaves in the agent folder.
type Config struct {
	Server   string    `json:"server"`
	Name     string    `json:"name"`
	Enrolled time.Time `json:"enrolled"`
}

// Dir is the agent folder inside a Kura home.
func Dir(home string) string { return filepath.Join(home, dirName) }

// Enroll makes this machine an agent of the server: it checks the server
// against the token's CA fingerprint, sends a certificate request, and
// keeps the certificate and the CA in home's agent folder.
func Enroll(ctx context.Context, home, server, token, name string) (*Config, error) {
	t, err := pki.ParseTokenKind(token, pki.KindEnroll)
	if err != nil {
		return nil, fmt.Errorf("enrollment token: %w", err)
	}
	if name == "" {
		if name, err = os.Hostname(); err != nil {
			return nil, err
		}
	}
	dir := Dir(home)
	if _, err := os.Stat(filepath.Join(dir, configFile)); err == nil {
		return nil, fmt.Errorf("this home is enrolled already (%s); remove that folder to enroll again", dir)
	}
	en, err := apiclient.EnrollWith(ctx, server, t, api.EnrollRequest{Token: token, Name: name})
	if err != nil {
		return nil, err
	}
	keyPEM, resp := en.KeyPEM, en.Resp
	if err := private.MkdirAll(dir); err != nil {
		return nil, err
	}
	cfg := &Config{Server: en.Server, Name: resp.Name, Enrolled: time.Now().UTC()}
	cb, _ := json.MarshalIndent(cfg, "", "  ")
	for _, f := range []struct {
		name string
		data []byte
	}{{keyFile, keyPEM}, {certFile, []byte(resp.CertPEM)}, {caFile, []byte(resp.CAPEM)}, {configFile, append(cb, '\n')}} {
		if err := private.WriteFileDurable(filepath.Join(dir, f.name), f.data); err != nil {
			return nil, err
		}
	}
	// The encryption key is made now, so that it can be exported before
	// the first encrypted backup needs it.
	if _, _, err := seal.EnsureRing(RingPath(home)); err != nil {
		return nil, fmt.Errorf("making the encryption key: %w", err)
	}
	return cfg, nil
}

// Options configure a running agent.
type Options struct {
	Home string
	Log  io.Writer // default stderr
	// Backoff bounds the wait between reconnection attempts (1 s … 30 s).
	MinBackoff, MaxBackoff time.Duration
	// ProgressEvery is how often a restore reports its figures (1 s).
	ProgressEvery time.Duration
	// Allow says which commands and plug-ins the server may have this
	// agent run (none by default).
	Allow plugin.Allow
	// SpoolEvery is how often Run sends the WAL spool and reports it to
	// the server (1 minute).
	SpoolEvery time.Duration
	// ByeTimeout bounds the goodbye Run sends the server as it stops, so
	// that a stop never hangs on a server or network that is away (3 s:
	// a few round trips of a slow link, well inside a service manager's
	// stop timeout).
	ByeTimeout time.Duration
}

// ErrNotEnrolled: Open found no agent configuration: the machine was
// never enrolled (the CLI says how to enroll it).
var ErrNotEnrolled = errors.New("this machine is not enrolled")

// Agent is an enrolled agent.
type Agent struct {
	opts Options
	cfg  Config
	c    *apiclient.Client
	tls  *tls.Config // its mutual TLS, also for a storage node's data port
	log  *slog.Logger
	tmp  string

	jobs sync.WaitGroup
}

// Open loads an enrolled agent from home.
func Open(opts Options) (*Agent, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.ProgressEvery == 0 {
		opts.ProgressEvery = time.Second
	}
	if opts.SpoolEvery == 0 {
		opts.SpoolEvery = spoolEvery
	}
	if opts.ByeTimeout == 0 {
		opts.ByeTimeout = 3 * time.Second
	}
	dir := Dir(opts.Home)
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (no %s)", ErrNotEnrolled, filepath.Join(dir, configFile))
	}
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, configFile), err)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, certFile))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, caFile))
	if err != nil {
		return nil, err
	}
	cert, _, err := pki.LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := pki.ClientTLSConfig(caPEM, &cert)
	if err != nil {
		return nil, err
	}
	c, err := apiclient.New(cfg.Server, tlsCfg, "")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, "tmp")
	if err := private.MkdirAll(tmp); err != nil {
		return nil, err
	}
	a := &Agent{opts: opts, cfg: cfg, c: c, tls: tlsCfg, tmp: tmp,
		log: slog.New(slog.NewTextHandler(opts.Log, nil)).With("agent", cfg.Name)}
	if w := private.Check(dir); w != "" {
		a.log.Warn("agent home " + w)
	}
	return a, nil
}

// Name is the agent's client name.
func (a *Agent) Name() string { return a.cfg.Name }

// Server is the server address the agent dials.
func (a *Agent) Server() string { return a.cfg.Server }

// Run takes orders until ctx ends. Connection failures are retried with a
// growing, jittered delay; a refusal (revoked, unknown) ends Run with its
// error, since retrying cannot fix it.
//
// When ctx ends (SIGTERM, Ctrl-C) Run stops its jobs, waits for them to
// report their end, and, unless its last poll failed, says goodbye to the
// server (POST /agent/bye, at most ByeTimeout) before it returns: the
// server shows the client offline from then on, not after its grace.
func (a *Agent) Run(ctx context.Context) error {
	defer a.jobs.Wait()
	defer a.c.Close()
	// This run's name: its polls carry it, and its goodbye names it, so
	// that a poll of this run that reaches the server late cannot bring
	// the client back online.
	run := crand.Text()
	// The jobs run under their own context, so a refusal stops them too:
	// Run returns once they have ended, within seconds.
	jobsCtx, stopJobs := context.WithCancelCause(ctx)
	defer stopJobs(nil)
	// WAL files kura wal archive spooled and could not send: sent now
	// and every spoolEvery, oldest first.
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Done()
		a.drainSpool(jobsCtx)
	}()
	backoff := a.opts.MinBackoff
	connected := false
	failing := false // a failure to connect is logged once, until it connects
	for ctx.Err() == nil {
		o, err := a.poll(ctx, run)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			switch apiclient.Code(err) {
			case api.CodeForbidden, api.CodeUnauthorized:
				a.log.Error("the server refuses this agent", "err", err)
				err = fmt.Errorf("the server refuses this agent: %w", err)
				stopJobs(err)
				return err
			}
			switch {
			case connected:
				a.log.Warn("lost the server; reconnecting", "err", err)
				connected, failing = false, true
			case !failing:
				a.log.Warn("cannot reach the server; retrying with backoff", "server", a.cfg.Server, "err", err)
				failing = true
			}
			d := backoff/2 + rand.N(backoff/2+1)
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, a.opts.MaxBackoff)
			continue
		}
		if !connected {
			a.log.Info("connected", "server", a.cfg.Server)
			connected, failing = true, false
		}
		backoff = a.opts.MinBackoff
		if o == nil {
			continue
		}
		a.jobs.Add(1)
		go func() {
			defer a.jobs.Done()
			a.execute(jobsCtx, *o)
		}()
	}
	// Stopping: the jobs first (their results still go to the server),
	// then the goodbye, unless the last poll failed (the server counts
	// this agent from the start of its poll, which may be the first).
	a.jobs.Wait()
	if !failing {
		a.bye(context.WithoutCancel(ctx), run)
	}
	return nil
}

// bye tells the server this run is stopping, within ByeTimeout. A failure
// is only logged: the server then shows the client connected until its
// grace after the last poll ends, as after a crash.
func (a *Agent) bye(ctx context.Context, run string) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.ByeTimeout)
	defer cancel()
	if err := a.c.AgentBye(ctx, api.AgentBye{Run: run}); err != nil {
		a.log.Warn("could not tell the server this agent is stopping; it shows the client connected a little longer", "err", err)
		return
	}
	a.log.Info("stopped; the server shows this client offline")
}

// poll waits for the next order; nil when none came in the poll time.
func (a *Agent) poll(ctx context.Context, run string) (*api.Order, error) {
	rc, err := a.call(ctx, "GET", "/agent/orders?run="+run, "", nil, maxPollWait, false)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, api.MaxJSONMsg))
	if err != nil {
		return nil, fmt.Errorf("reading an order: %w", err)
	}
	if len(b) == 0 {
		return nil, nil // 204: no order in the poll time
	}
	var o api.Order
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("reading an order: %w", err)
	}
	return &o, nil
}

func (a *Agent) execute(ctx context.Context, o api.Order) {
	log := a.log.With("job", o.JobID, "kind", o.Kind)
	log.Info("job started")
	var err error
	switch {
	case o.Kind == api.KindBackup && o.Backup != nil:
		err = a.backup(ctx, o)
	case o.Kind == api.KindRestore && o.Restore != nil:
		err = a.restore(ctx, o)
	default:
		err = fmt.Errorf("unknown order %q", o.Kind)
	}
	if err != nil {
		log.Error("job failed", "err", err)
		return
	}
	log.Info("job done")
}

func jobPath(id int64, rest string) string { return fmt.Sprintf("/agent/jobs/%d%s", id, rest) }
