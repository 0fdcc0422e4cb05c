package server

import (
	"crypto/x509"
	"errors"
	"net/http"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/pki"
)

// Enrollment tokens live an hour unless asked otherwise, at most 30 days.
const (
	defaultTokenLife = time.Hour
	clientCertLife   = 5 * 365 * 24 * time.Hour
)

func (s *Server) postToken(w http.ResponseWriter, r *http.Request) error {
	var req api.TokenRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	tok, err := s.CreateToken(req)
	if err != nil {
		return err
	}
	return writeJSON(w, tok)
}

// CreateToken checks a token request and makes the token (POST /tokens,
// and the console's clients page).
func (s *Server) CreateToken(req api.TokenRequest) (api.TokenResponse, error) {
	if err := req.Validate(); err != nil {
		return api.TokenResponse{}, err
	}
	life := time.Duration(req.ExpiresSeconds * float64(time.Second))
	if req.ExpiresSeconds == 0 {
		life = defaultTokenLife
	}
	if req.Node {
		return s.NewNodeToken(req.Name, life)
	}
	return s.NewEnrollToken(req.Name, life)
}

// NewEnrollToken makes a one-time enrollment token for an agent; the
// catalog keeps only its hash.
func (s *Server) NewEnrollToken(name string, life time.Duration) (api.TokenResponse, error) {
	return s.newToken(catalog.TokenEnroll, name, life)
}

// NewNodeToken makes a one-time enrollment token for a storage node.
func (s *Server) NewNodeToken(name string, life time.Duration) (api.TokenResponse, error) {
	return s.newToken(catalog.TokenNode, name, life)
}

func (s *Server) newToken(kind, name string, life time.Duration) (api.TokenResponse, error) {
	t, err := pki.NewToken(pki.KindEnroll, s.ca.Fingerprint())
	if err != nil {
		return api.TokenResponse{}, err
	}
	now := s.opts.Clock.Now()
	rec := &catalog.Token{Hash: pki.HashSecret(t.Secret), Kind: kind, Name: name, Created: now, Expires: now.Add(life)}
	if err := s.env.Catalog.CreateToken(rec); err != nil {
		return api.TokenResponse{}, err
	}
	s.log.Info("enrollment token created", "for", name, "expires", rec.Expires)
	return api.TokenResponse{Token: t.String(), Expires: rec.Expires}, nil
}

func (s *Server) postEnroll(w http.ResponseWriter, r *http.Request) error {
	var req api.EnrollRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	refuse := func(code, msg string) error {
		s.log.Warn("enrollment refused", "client", req.Name, "remote", r.RemoteAddr, "reason", msg)
		return apiErr(code, "enrollment refused: %s", msg)
	}
	// The token is checked before anything else, so a caller without a
	// valid token learns nothing (not whether a name is taken); it is
	// spent only once the whole request is found good, so a refused
	// enrollment does not burn it.
	t, err := pki.ParseTokenKind(req.Token, pki.KindEnroll)
	if err != nil {
		return refuse(api.CodeUnauthorized, "not an enrollment token")
	}
	if t.CAFingerprint != s.ca.Fingerprint() {
		return refuse(api.CodeUnauthorized, "the token was made by another server")
	}
	hash := pki.HashSecret(t.Secret)
	now := s.opts.Clock.Now()
	tokenErr := func(err error) error {
		switch {
		case errors.Is(err, catalog.ErrNotFound):
			return refuse(api.CodeUnauthorized, "unknown token")
		case errors.Is(err, catalog.ErrTokenUsed):
			return refuse(api.CodeTokenUsed, "the token was used already")
		case errors.Is(err, catalog.ErrTokenExpired):
			return refuse(api.CodeTokenExpired, "the token has expired")
		}
		return err
	}
	rec, err := s.env.Catalog.TokenByHash(hash)
	switch {
	case err != nil:
		return tokenErr(err)
	case !rec.Used.IsZero():
		return tokenErr(catalog.ErrTokenUsed)
	case now.After(rec.Expires):
		return tokenErr(catalog.ErrTokenExpired)
	}
	if err := catalog.ValidClientName(req.Name); err != nil {
		return badField("name", "%v", err)
	}
	if rec.Name != "" && rec.Name != req.Name {
		return refuse(api.CodeForbidden, "the token is for client "+rec.Name)
	}
	kind := catalog.KindAgent
	switch {
	case rec.Kind == catalog.TokenNode && req.Kind != api.EnrollNode:
		return refuse(api.CodeForbidden, "the token enrolls a storage node (kura node enroll), not an agent")
	case rec.Kind != catalog.TokenNode && req.Kind == api.EnrollNode:
		return refuse(api.CodeForbidden, "the token enrolls an agent; a storage node needs a node token (kura token create --node)")
	case rec.Kind == catalog.TokenNode:
		kind = catalog.KindNode
	}
	old, oldErr := s.env.Catalog.Client(req.Name)
	if oldErr == nil && old.Revoked.IsZero() {
		return refuse(api.CodeConflict, "a client named "+req.Name+" is enrolled already; revoke it first")
	}
	if csr, err := x509.ParseCertificateRequest(req.CSR); err != nil || csr.CheckSignature() != nil {
		return badRequest("certificate request: not a valid signed CSR")
	}
	// Spend it: of concurrent enrollments with one token exactly one gets here.
	if _, err := s.env.Catalog.UseToken(hash, now, req.Name); err != nil {
		return tokenErr(err)
	}
	if oldErr == nil {
		// A revoked name may enroll again with a fresh token: a new machine
		// taking over the name. Its old certificate stays refused.
		if err := s.env.Catalog.RemoveClient(req.Name); err != nil {
			return err
		}
	}
	sign := func() ([]byte, string, error) { return s.ca.SignClient(req.CSR, req.Name, clientCertLife) }
	if kind == catalog.KindNode && len(req.DataHosts) > 0 {
		sign = func() ([]byte, string, error) { return s.ca.SignNode(req.CSR, req.Name, req.DataHosts, clientCertLife) }
	}
	certPEM, serial, err := sign()
	if err != nil {
		return badRequest("certificate request: %v", err)
	}
	cert, err := pki.ParseCertPEM(certPEM)
	if err != nil {
		return err
	}
	if err := s.env.Catalog.EnrollClient(catalog.Client{Name: req.Name, CertSerial: serial,
		CertFingerprint: pki.Fingerprint(cert), Enrolled: now, Address: r.RemoteAddr, Kind: kind}); err != nil {
		return err
	}
	s.hub.enrolled(req.Name)
	s.log.Info("client enrolled", "client", req.Name, "kind", kind, "remote", r.RemoteAddr, "serial", serial)
	return writeJSON(w, api.EnrollResponse{Name: req.Name, CertPEM: string(certPEM), CAPEM: string(s.ca.CertPEM)})
}

// revoke revokes an agent or a storage node and cuts it off.
func (s *Server) revoke(name string) error {
	if err := s.env.Catalog.RevokeClient(name, s.opts.Clock.Now()); err != nil {
		return err
	}
	s.log.Warn("client revoked", "client", name)
	// Cut it off now: its running jobs end, then its open polls. In that
	// order: an agent told first closes its data stream, and a job whose
	// stream broke before it was cancelled failed with the broken stream
	// instead of the revocation. A node's tunnel is cut: the jobs on its
	// libraries fail with the broken tunnel, their drives freed on the
	// node as its session ends.
	s.cancelJobsOf(name, "client "+name+" was revoked")
	s.hub.drop(name)
	s.nodes.drop(name)
	s.nodes.cancelAgent(name)
	return nil
}

func (s *Server) getClients(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.env.Catalog.Clients()
	if err != nil {
		return err
	}
	out := []api.Client{}
	for _, c := range cs {
		if c.IsNode() {
			continue // kura node list
		}
		s.hub.lastSeen(c)
		out = append(out, APIClient(c, c.Revoked.IsZero() && s.hub.online(c.Name)))
	}
	out, err = s.withSpools(out)
	if err != nil {
		return err
	}
	return writeJSON(w, out)
}

func (s *Server) patchClient(w http.ResponseWriter, r *http.Request) error {
	var req api.ClientUpdate
	if err := readJSON(r, &req); err != nil {
		return err
	}
	c, err := s.UpdateClient(r.PathValue("name"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, c)
}

// UpdateClient checks and applies a change of a client's settings
// (PATCH /clients/{name}, and the console).
func (s *Server) UpdateClient(name string, req api.ClientUpdate) (api.Client, error) {
	if err := req.Validate(); err != nil {
		return api.Client{}, err
	}
	if req.BWLimit != nil {
		if err := s.env.Catalog.SetClientBWLimit(name, *req.BWLimit); err != nil {
			return api.Client{}, err
		}
	}
	if req.Encrypt != nil {
		if err := s.env.Catalog.SetClientEncrypt(name, *req.Encrypt); err != nil {
			return api.Client{}, err
		}
	}
	c, err := s.env.Catalog.Client(name)
	if err != nil {
		return api.Client{}, err
	}
	s.hub.lastSeen(c)
	return APIClient(c, s.hub.online(name)), nil
}

func (s *Server) revokeClient(w http.ResponseWriter, r *http.Request) error {
	c, err := s.RevokeClient(r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, c)
}

// RevokeClient revokes a client's (or node's) certificate and cuts it
// off now (POST /clients/{name}/revoke, and the console).
func (s *Server) RevokeClient(name string) (api.Client, error) {
	if err := s.revoke(name); err != nil {
		return api.Client{}, err
	}
	c, err := s.env.Catalog.Client(name)
	if err != nil {
		return api.Client{}, err
	}
	return APIClient(c, false), nil
}
