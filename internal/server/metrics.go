package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/metrics"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/private"
)

// metricsTokenFile holds the bearer token that may read /metrics and
// nothing else: what a Prometheus server is given instead of the admin
// token.
const metricsTokenFile = "metrics.token"

// MetricsTokenPath is where the metrics scrape token is kept.
func (s *Server) MetricsTokenPath() string { return filepath.Join(s.env.Home, metricsTokenFile) }

// loadMetricsToken reads metrics.token, or makes it on first start, and
// returns the hash of its secret.
func (s *Server) loadMetricsToken() (string, error) {
	p := s.MetricsTokenPath()
	b, err := os.ReadFile(p)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return pki.HashSecret(strings.TrimSpace(string(b))), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var r [32]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	tok := "kura-metrics-" + base64.RawURLEncoding.EncodeToString(r[:])
	if err := private.WriteFile(p+".tmp", []byte(tok+"\n")); err != nil {
		return "", err
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return "", err
	}
	return pki.HashSecret(tok), nil
}

// connectedAgents names the enrolled, unrevoked clients whose agent is
// connected now.
func (s *Server) connectedAgents() []string {
	cs, err := s.env.Catalog.Clients()
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cs {
		if c.Revoked.IsZero() && s.hub.online(c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// metricsHandler serves GET /metrics: the Prometheus text format, read at
// scrape time (internal/metrics), for a bearer token that is the metrics
// token or the admin token.
func (s *Server) metricsHandler() (http.Handler, error) {
	hash, err := s.loadMetricsToken()
	if err != nil {
		return nil, fmt.Errorf("metrics token: %w", err)
	}
	reg := prometheus.NewRegistry()
	dir := s.env.Home
	err = reg.Register(metrics.New(metrics.Source{Catalog: s.env.Catalog, Service: s.svc, Connected: s.connectedAgents,
		CatalogFiles: []string{home.CatalogPath(dir), home.CatalogPath(dir) + "-wal"}, Version: Version, Now: s.opts.Clock.Now,
		OnError: func(part string, err error) { s.log.Warn("metrics: part of a scrape failed", "part", part, "err", err) }}))
	if err != nil {
		return nil, err
	}
	prom := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return s.plain(func(w http.ResponseWriter, r *http.Request) error {
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || secret == "" {
			s.log.Warn("refused: metrics scrape without a token", "remote", r.RemoteAddr)
			return apiErr(api.CodeUnauthorized, "/metrics needs a bearer token: the metrics token (%s in the server home) or the admin token", metricsTokenFile)
		}
		secret = strings.TrimSpace(secret)
		if !pki.HashEqual(pki.HashSecret(secret), hash) && !s.isAdminToken(secret) {
			s.log.Warn("refused: wrong metrics token", "remote", r.RemoteAddr)
			return apiErr(api.CodeUnauthorized, "wrong metrics token")
		}
		prom.ServeHTTP(w, r)
		return nil
	}), nil
}
