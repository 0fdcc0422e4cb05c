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
	if err := req.Validate(); err != nil {
		return err
	}
	life := time.Duration(req.ExpiresSeconds * float64(time.Second))
	if req.ExpiresSeconds == 0 {
		life = defaultTokenLife
	}
	tok, err := s.NewEnrollToken(req.Name, life)
	if err != nil {
		return err
	}
	return writeJSON(w, tok)
}

// NewEnrollToken makes a one-time enrollment token; the catalog keeps only
// its hash.
func (s *Server) NewEnrollToken(name string, life time.Duration) (api.TokenResponse, error) {
	t, err := pki.NewToken(pki.KindEnroll, s.ca.Fingerprint())
	if err != nil {
		return api.TokenResponse{}, err
	}
	now := s.opts.Clock.Now()
	rec := &catalog.Token{Hash: pki.HashSecret(t.Secret), Kind: catalog.TokenEnroll, Name: name, Created: now, Expires: now.Add(life)}
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
	certPEM, serial, err := s.ca.SignClient(req.CSR, req.Name, clientCertLife)
	if err != nil {
		return badRequest("certificate request: %v", err)
	}
	cert, err := pki.ParseCertPEM(certPEM)
	if err != nil {
		return err
	}
	if err := s.env.Catalog.EnrollClient(catalog.Client{Name: req.Name, CertSerial: serial,
		CertFingerprint: pki.Fingerprint(cert), Enrolled: now, Address: r.RemoteAddr}); err != nil {
		return err
	}
	s.hub.enrolled(req.Name)
	s.log.Info("client enrolled", "client", req.Name, "remote", r.RemoteAddr, "serial", serial)
	return writeJSON(w, api.EnrollResponse{Name: req.Name, CertPEM: string(certPEM), CAPEM: string(s.ca.CertPEM)})
}

func (s *Server) getClients(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.env.Catalog.Clients()
	if err != nil {
		return err
	}
	out := []api.Client{}
	for _, c := range cs {
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
	if err := req.Validate(); err != nil {
		return err
	}
	name := r.PathValue("name")
	if req.BWLimit != nil {
		if err := s.env.Catalog.SetClientBWLimit(name, *req.BWLimit); err != nil {
			return err
		}
	}
	if req.Encrypt != nil {
		if err := s.env.Catalog.SetClientEncrypt(name, *req.Encrypt); err != nil {
			return err
		}
	}
	c, err := s.env.Catalog.Client(name)
	if err != nil {
		return err
	}
	s.hub.lastSeen(c)
	return writeJSON(w, APIClient(c, s.hub.online(name)))
}

func (s *Server) revokeClient(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := s.env.Catalog.RevokeClient(name, s.opts.Clock.Now()); err != nil {
		return err
	}
	s.log.Warn("client revoked", "client", name)
	// Cut it off now: its running jobs end, then its open polls. In that
	// order: an agent told first closes its data stream, and a job whose
	// stream broke before it was cancelled failed with the broken stream
	// instead of the revocation.
	s.cancelJobsOf(name, "client "+name+" was revoked")
	s.hub.drop(name)
	c, err := s.env.Catalog.Client(name)
	if err != nil {
		return err
	}
	return writeJSON(w, APIClient(c, false))
}
