package server_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/pki"
)

// The server speaks TLS 1.3 only: a client that offers at most TLS 1.2
// fails the handshake, and the server logs it.
func TestTLS12ClientRefused(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	conn, err := tls.Dial("tcp", r.addr, &tls.Config{MaxVersion: tls.VersionTLS12, InsecureSkipVerify: true})
	if err == nil {
		v := conn.ConnectionState().Version
		conn.Close()
		t.Fatalf("a TLS 1.2 client connected (version %#x)", v)
	}
	if !strings.Contains(err.Error(), "version") {
		t.Errorf("handshake error %q does not say it is the protocol version", err)
	}
	r.waitLog("TLS handshake error", "unsupported versions")

	// The same client allowed TLS 1.3 gets in: the refusal was the version.
	conn, err = tls.Dial("tcp", r.addr, &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("a TLS 1.3 client: %v", err)
	}
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("negotiated %#x; want TLS 1.3", v)
	}
	conn.Close()
}

// Agent endpoints need a client certificate: a call with the admin
// client's TLS (no certificate) is unauthorized, even with the admin token.
func TestAgentCallWithoutCertificate(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	anon := newClient(t, r.url, pki.PinnedTLSConfig(r.srv.CAFingerprint(), nil), "")
	for _, p := range []string{"/agent/orders", "/agent/jobs/1/savesets/1/index"} {
		wantCode(t, "GET "+p+" without a certificate", get(t, anon, p), api.CodeUnauthorized)
	}
	tok, err := os.ReadFile(r.srv.AdminTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	adm := newClient(t, r.url, pki.PinnedTLSConfig(r.srv.CAFingerprint(), nil), string(tok))
	wantCode(t, "GET /agent/orders with the admin token", get(t, adm, "/agent/orders"), api.CodeUnauthorized)
	r.waitLog("refused: agent call without a valid client certificate")
}

// A client certificate from another CA is refused, even with an enrolled
// name: a TLS client that heeds the server's list of acceptable CAs sends
// no certificate (unauthorized); one that sends it anyway fails the
// handshake. Both are logged.
func TestClientCertificateFromAnotherCA(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.enroll("c1", "")
	other, _, err := pki.LoadOrCreateCA(t.TempDir(), "intruder")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, csr, err := pki.NewClientKey("c1")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := other.SignClient(csr, "c1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := pki.LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(r.home, "pki", pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pki.ClientTLSConfig(caPEM, &cert)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "another CA's certificate", get(t, newClient(t, r.url, cfg, ""), "/agent/orders"), api.CodeUnauthorized)
	r.waitLog("refused: agent call without a valid client certificate")

	forced := cfg.Clone()
	forced.Certificates = nil
	forced.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	err = get(t, newClient(t, r.url, forced, ""), "/agent/orders")
	if err == nil || apiclient.Code(err) != "" {
		t.Fatalf("another CA's certificate, sent anyway: %v; want a failed handshake", err)
	}
	// (The client learns little: Go's HTTP/2 transport reports "client
	// conn could not be established". The server log says why.)
	r.waitLog("TLS handshake error", "certificate signed by unknown authority")
}

// A certificate from the right CA that is not the one enrolled (a second
// certificate for a known name) is forbidden.
func TestCertificateNotTheEnrolledOne(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.enroll("c1", "")
	cfg := r.unenrolledTLS(t, "c1")
	wantCode(t, "a second certificate for c1", get(t, newClient(t, r.url, cfg, ""), "/agent/orders"), api.CodeForbidden)
	r.waitLog("refused: certificate does not match the enrolled one")
}

// A revoked agent is cut off at once: its running backup fails, its Run
// returns the refusal, it cannot come back, and a new job for it fails.
func TestRevokedAgentRefusedAtOnce(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home := r.enroll("c1", "")
	_, done := launchAgent(t, home, "c1")
	r.waitOnline("c1", true)
	src := t.TempDir()
	randomFiles(t, src, 4, 1<<20, 7)
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "none", BWLimit: 512 << 10, FrameSize: 64 << 10})[0]
	r.waitProgress(id)

	revoked := time.Now()
	if _, err := r.admin.RevokeClient(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the revoked agent's Run ended without an error")
		}
		if c := apiclient.Code(err); c != api.CodeForbidden {
			t.Errorf("Run: %v (code %q); want forbidden", err, c)
		}
		t.Logf("Run ended after %s: %v", time.Since(revoked).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked agent's Run did not end within 10s")
	}
	j := r.wait(id)
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "revoked") {
		t.Errorf("the running backup: %s (%q); want failed because c1 was revoked", j.State, j.Error)
	}
	if ss := savesetStatus(t, r, j.SavesetID); ss == catalog.StatusComplete {
		t.Errorf("the cut-off backup's saveset is %s", ss)
	}
	r.waitLog("client revoked")

	// Started again, the agent is refused on its first call.
	_, done = launchAgent(t, home, "c1")
	select {
	case err := <-done:
		if c := apiclient.Code(err); c != api.CodeForbidden {
			t.Errorf("restarted revoked agent: %v (code %q); want forbidden", err, c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a restarted revoked agent kept running")
	}
	r.waitLog("refused: revoked client")

	// A new backup for it is refused.
	_, err := r.admin.Submit(t.Context(), api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}})
	wantCode(t, "a backup of a revoked client", err, api.CodeForbidden)
	if err != nil && !strings.Contains(err.Error(), "revoked") {
		t.Errorf("refusal %q does not say the client is revoked", err)
	}
	if cs, err := r.admin.Clients(t.Context()); err != nil {
		t.Fatal(err)
	} else if len(cs) != 1 || cs[0].Connected || cs[0].Revoked.IsZero() {
		t.Errorf("clients after revocation: %+v", cs)
	}
}

func savesetStatus(t *testing.T, r *rig, id int64) string {
	t.Helper()
	if id == 0 {
		return ""
	}
	ss, err := r.srv.Env().Catalog.Saveset(id)
	if err != nil {
		t.Fatal(err)
	}
	return ss.Status
}

// Enrollment tokens are one-time and expire; the server's clock decides.
func TestEnrollmentTokens(t *testing.T) {
	t.Parallel()
	clock := monitor.NewFakeClock(time.Now())
	opts := fastOpts
	opts.Clock = clock
	r := startServerWith(t, t.TempDir(), "", opts)
	enroll := func(tok, name string) error {
		_, err := agent.Enroll(t.Context(), t.TempDir(), r.url, tok, name)
		return err
	}

	tok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := enroll(tok.Token, "c1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a reused token", enroll(tok.Token, "c2"), api.CodeTokenUsed)
	r.waitLog("the token was used already")

	tok, err = r.admin.CreateToken(t.Context(), api.TokenRequest{ExpiresSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if want := clock.Now().Add(time.Minute); !tok.Expires.Equal(want) {
		t.Errorf("token expires %s; want %s", tok.Expires, want)
	}
	clock.Advance(61 * time.Second)
	wantCode(t, "an expired token", enroll(tok.Token, "c3"), api.CodeTokenExpired)
	r.waitLog("the token has expired")

	// A token for one name enrolls no other.
	tok, err = r.admin.CreateToken(t.Context(), api.TokenRequest{Name: "c4"})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a token for c4 used by c5", enroll(tok.Token, "c5"), api.CodeForbidden)
	r.waitLog("the token is for client c4")

	// A well-formed token this server never made.
	fake, err := pki.NewToken(pki.KindEnroll, r.srv.CAFingerprint())
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "an unknown token", enroll(fake.String(), "c6"), api.CodeUnauthorized)
	r.waitLog("unknown token")

	if cs, err := r.admin.Clients(t.Context()); err != nil {
		t.Fatal(err)
	} else if len(cs) != 1 || cs[0].Name != "c1" {
		t.Errorf("enrolled clients: %+v; want only c1", cs)
	}
}

// Admin calls need the right admin token.
func TestWrongAdminToken(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	fp := r.srv.CAFingerprint()
	other, err := pki.NewToken(pki.KindAdmin, fp)
	if err != nil {
		t.Fatal(err)
	}
	enrollTok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for what, tok := range map[string]string{
		"another admin token":      other.String(),
		"an enrollment token":      enrollTok.Token,
		"a token that is no token": "hunter2",
	} {
		c := newClient(t, r.url, pki.PinnedTLSConfig(fp, nil), tok)
		_, err := c.Clients(t.Context())
		wantCode(t, what, err, api.CodeUnauthorized)
		_, err = c.Submit(t.Context(), api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{"/"}})
		wantCode(t, what+" (submit)", err, api.CodeUnauthorized)
	}
	_, err = newClient(t, r.url, pki.PinnedTLSConfig(fp, nil), "").Clients(t.Context())
	wantCode(t, "no token", err, api.CodeUnauthorized)
	r.waitLog("refused: wrong admin token", "refused: no admin token")
}

// An agent sees only its own jobs, and in them only their savesets.
func TestAgentCannotReachOtherJobs(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	h1, _ := r.runAgent("c1")
	h2, _ := r.runAgent("c2")
	src1, src2 := t.TempDir(), t.TempDir()
	makeTree(t, src2, 8, 2)
	randomFiles(t, src1, 4, 1<<20, 3)

	// c2 has a saveset of its own.
	b2 := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c2", Paths: []string{src2}})[0])
	if b2.State != catalog.StateSucceeded {
		t.Fatalf("c2's backup: %s (%s)", b2.State, b2.Error)
	}
	// c1 runs a slow backup.
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src1}, Compress: "none", BWLimit: 1 << 20, FrameSize: 64 << 10})[0]
	r.waitProgress(id)
	j1, err := r.admin.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := agentAPI(t, h1, r.url), agentAPI(t, h2, r.url)

	// c2 asks about c1's running job.
	for _, p := range []string{
		fmt.Sprintf("/agent/jobs/%d/savesets/%d/index", id, j1.SavesetID),
		fmt.Sprintf("/agent/jobs/%d/savesets/%d", id, j1.SavesetID),
		fmt.Sprintf("/agent/jobs/%d/savesets/%d/data", id, b2.SavesetID),
	} {
		wantCode(t, "c2: GET "+p, get(t, c2, p), api.CodeForbidden)
	}
	req, err := c2.NewRequest(t.Context(), "POST", fmt.Sprintf("/agent/jobs/%d/progress", id), strings.NewReader(`{"files":1}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c2.Do(req)
	wantCode(t, "c2: POST progress of c1's job", err, api.CodeForbidden)
	r.waitLog("refused: agent asked about another agent's job")

	// c1 asks, in its own job, for a saveset that is not part of it:
	// c2's, and its own running one (a full backup reads no saveset).
	for _, ss := range []int64{b2.SavesetID, j1.SavesetID} {
		p := fmt.Sprintf("/agent/jobs/%d/savesets/%d/index", id, ss)
		wantCode(t, "c1: GET "+p, get(t, c1, p), api.CodeForbidden)
		p = fmt.Sprintf("/agent/jobs/%d/savesets/%d/data", id, ss)
		wantCode(t, "c1: GET "+p, get(t, c1, p), api.CodeForbidden)
	}
	r.waitLog("refused: agent asked for a saveset outside its job")

	if _, err := r.admin.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if j := r.wait(id); j.State != catalog.StateCanceled {
		t.Errorf("c1's canceled backup: %s (%s)", j.State, j.Error)
	}
}

// Job requests are checked before they are queued.
func TestJobRequestValidation(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	r.enroll("c1", "")
	abs := "/srv/data"
	for what, req := range map[string]api.JobRequest{
		"a relative path":           {Kind: api.KindBackup, Client: "c1", Paths: []string{"srv/data"}},
		"a path with ..":            {Kind: api.KindBackup, Client: "c1", Paths: []string{"/srv/../etc"}},
		"an empty path":             {Kind: api.KindBackup, Client: "c1", Paths: []string{""}},
		"an unknown level":          {Kind: api.KindBackup, Client: "c1", Paths: []string{abs}, Level: "weekly"},
		"an unknown compression":    {Kind: api.KindBackup, Client: "c1", Paths: []string{abs}, Compress: "max9000"},
		"a negative bwlimit":        {Kind: api.KindBackup, Client: "c1", Paths: []string{abs}, BWLimit: -1},
		"too many streams":          {Kind: api.KindBackup, Client: "c1", Paths: []string{abs}, Streams: 1000},
		"no paths":                  {Kind: api.KindBackup, Client: "c1"},
		"a relative restore target": {Kind: api.KindRestore, Client: "c1", Latest: true, To: "restore/here"},
		"a restore of nothing":      {Kind: api.KindRestore, Client: "c1", To: abs},
		"an unknown overwrite":      {Kind: api.KindRestore, Client: "c1", Latest: true, To: abs, Overwrite: "sometimes"},
		"a restore with no target":  {Kind: api.KindRestore, Client: "c1", Latest: true},
		"a restore to two targets":  {Kind: api.KindRestore, Client: "c1", Latest: true, To: abs, InPlace: true},
		"a client name with /":      {Kind: api.KindBackup, Client: "c1/../c2", Paths: []string{abs}},
		"a client name ..":          {Kind: api.KindBackup, Client: "..", Paths: []string{abs}},
		"an unknown kind":           {Kind: "format", Client: "c1"},
	} {
		_, err := r.admin.Submit(t.Context(), req)
		wantCode(t, what, err, api.CodeBadRequest)
	}
	_, err := r.admin.CreateToken(t.Context(), api.TokenRequest{Name: "../evil"})
	wantCode(t, "a token for ../evil", err, api.CodeBadRequest)
	tok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Enroll(t.Context(), t.TempDir(), r.url, tok.Token, "a/b")
	wantCode(t, "enrolling a/b", err, api.CodeBadRequest)
	// The refused name did not use the token up.
	if _, err := agent.Enroll(t.Context(), t.TempDir(), r.url, tok.Token, "c2"); err != nil {
		t.Errorf("enrolling c2 after a refused name: %v", err)
	}

	if jobs, err := r.admin.Jobs(t.Context(), api.JobFilter{Limit: 100}); err != nil {
		t.Fatal(err)
	} else if len(jobs) != 0 {
		t.Errorf("%d jobs queued from invalid requests", len(jobs))
	}
	r.waitLog("refused: bad request", "paths on a client must be absolute", "unknown level", "say where to restore")
}

// Whether a client name is taken cannot be learned without a valid token:
// the token is checked first. A valid token refused for a taken name is
// not spent.
func TestEnrollNameNotProbedWithoutToken(t *testing.T) {
	t.Parallel()
	clock := monitor.NewFakeClock(time.Now())
	opts := fastOpts
	opts.Clock = clock
	r := startServerWith(t, t.TempDir(), "", opts)
	r.enroll("c1", "")
	enroll := func(tok, name string) error {
		_, err := agent.Enroll(t.Context(), t.TempDir(), r.url, tok, name)
		return err
	}
	fake, err := pki.NewToken(pki.KindEnroll, r.srv.CAFingerprint())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c1", "free"} {
		err := enroll(fake.String(), name)
		wantCode(t, "a token this server never made, name "+name, err, api.CodeUnauthorized)
		if err != nil && strings.Contains(err.Error(), "enrolled already") {
			t.Errorf("a caller without a valid token learned that %s is taken: %v", name, err)
		}
	}
	expired, err := r.admin.CreateToken(t.Context(), api.TokenRequest{ExpiresSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	used, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := enroll(used.Token, "c2"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	wantCode(t, "an expired token, taken name", enroll(expired.Token, "c1"), api.CodeTokenExpired)
	wantCode(t, "a used token, taken name", enroll(used.Token, "c1"), api.CodeTokenUsed)

	// A valid token learns the name is taken, and stays good.
	tok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a valid token, taken name", enroll(tok.Token, "c1"), api.CodeConflict)
	if err := enroll(tok.Token, "c3"); err != nil {
		t.Errorf("the token refused for a taken name was spent: %v", err)
	}
	r.waitLog("unknown token", "enrolled already")
}

// unenrolledTLS is a client TLS configuration with a certificate for name
// signed by the server's own CA but never enrolled: the right CA, not the
// enrolled certificate.
func (r *rig) unenrolledTLS(t testing.TB, name string) *tls.Config {
	t.Helper()
	ca, _, err := pki.LoadOrCreateCA(filepath.Join(r.home, "pki"), "test")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, csr, err := pki.NewClientKey(name)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.SignClient(csr, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := pki.LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pki.ClientTLSConfig(ca.CertPEM, &cert)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
