package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// whoami answers with the verified client's CN and serial, or 401 when the
// connection carries no verified client certificate.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "no client certificate", http.StatusUnauthorized)
		return
	}
	leaf := r.TLS.VerifiedChains[0][0]
	fmt.Fprintf(w, "%s %s %x", leaf.Subject.CommonName, Serial(leaf), r.TLS.Version)
})

func startServer(t *testing.T, cfg *tls.Config) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(whoami)
	s.EnableHTTP2 = true
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.TLS = cfg
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// get fetches url with cfg and returns the status and body.
func get(t *testing.T, cfg *tls.Config, url string) (int, string, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func serverConfig(t *testing.T, ca *CA, dir string) *tls.Config {
	t.Helper()
	cert, err := ca.ServerCertificate(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ServerTLSConfig(ca, cert)
}

// enroll makes a client key and has ca sign it.
func enroll(t *testing.T, ca *CA, name string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	keyPEM, csr, err := NewClientKey(name)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.SignClient(csr, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, leaf, err := LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, leaf
}

func TestTLS12Refused(t *testing.T) {
	ca, dir := newTestCA(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverConfig(t, ca, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()

	cfg, err := ClientTLSConfig(ca.CertPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS13 {
		t.Errorf("client MinVersion %x", cfg.MinVersion)
	}
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err != nil {
		t.Fatalf("TLS 1.3 client refused: %v", err)
	}
	if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("negotiated version %x, want TLS 1.3", v)
	}
	c.Close()

	old := cfg.Clone()
	old.MinVersion = tls.VersionTLS12
	old.MaxVersion = tls.VersionTLS12
	c, err = tls.Dial("tcp", ln.Addr().String(), old)
	if err == nil {
		c.Close()
		t.Fatal("TLS 1.2 client accepted")
	}
	if !strings.Contains(err.Error(), "protocol version") {
		t.Logf("TLS 1.2 refused with: %v", err)
	}
}

func TestMutualTLS(t *testing.T) {
	ca, dir := newTestCA(t)
	srv := startServer(t, serverConfig(t, ca, dir))
	agentCert, agentLeaf := enroll(t, ca, "agent-1")

	t.Run("agent", func(t *testing.T) {
		cfg, err := ClientTLSConfig(ca.CertPEM, &agentCert)
		if err != nil {
			t.Fatal(err)
		}
		code, body, err := get(t, cfg, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("agent-1 %s %x", Serial(agentLeaf), tls.VersionTLS13)
		if code != http.StatusOK || body != want {
			t.Errorf("got %d %q, want 200 %q", code, body, want)
		}
	})
	t.Run("admin without certificate", func(t *testing.T) {
		cfg, err := ClientTLSConfig(ca.CertPEM, nil)
		if err != nil {
			t.Fatal(err)
		}
		code, _, err := get(t, cfg, srv.URL)
		if err != nil {
			t.Fatalf("handshake without client certificate failed: %v", err)
		}
		if code != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", code)
		}
	})
	t.Run("certificate of another CA", func(t *testing.T) {
		other, _ := newTestCA(t)
		foreign, _ := enroll(t, other, "agent-1")
		cfg, err := ClientTLSConfig(ca.CertPEM, &foreign)
		if err != nil {
			t.Fatal(err)
		}
		if code, body, err := get(t, cfg, srv.URL); err == nil {
			t.Fatalf("foreign client certificate accepted: %d %q", code, body)
		}
	})
	t.Run("server of another CA", func(t *testing.T) {
		other, otherDir := newTestCA(t)
		impostor := startServer(t, serverConfig(t, other, otherDir))
		cfg, err := ClientTLSConfig(ca.CertPEM, &agentCert)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := get(t, cfg, impostor.URL); err == nil {
			t.Fatal("client trusted a server of another CA")
		}
	})
}

// TestProtocols: the configurations work with an HTTP/1.1 Transport as well
// as with an HTTP/2 one.
func TestProtocols(t *testing.T) {
	ca, dir := newTestCA(t)
	srv := startServer(t, serverConfig(t, ca, dir))
	agentCert, _ := enroll(t, ca, "agent-1")
	client, err := ClientTLSConfig(ca.CertPEM, &agentCert)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []struct {
		name string
		cfg  *tls.Config
	}{{"client", client}, {"pinned", PinnedTLSConfig(ca.Fingerprint(), nil)}} {
		for _, h2 := range []bool{false, true} {
			tr := &http.Transport{TLSClientConfig: cfg.cfg, ForceAttemptHTTP2: h2}
			resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(srv.URL)
			if err != nil {
				t.Errorf("%s, HTTP/2 %v: %v", cfg.name, h2, err)
				continue
			}
			resp.Body.Close()
			tr.CloseIdleConnections()
			if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
				t.Errorf("%s: protocol %s, want major version %d", cfg.name, resp.Proto, want)
			}
		}
	}
}

func TestRequireClientCertificate(t *testing.T) {
	ca, dir := newTestCA(t)
	cfg := serverConfig(t, ca, dir)
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	srv := startServer(t, cfg)

	good, _ := enroll(t, ca, "agent-2")
	other, _ := newTestCA(t)
	foreign, _ := enroll(t, other, "agent-2")
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		ok   bool
	}{
		{"signed", &good, true},
		{"none", nil, false},
		{"other CA", &foreign, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ccfg, err := ClientTLSConfig(ca.CertPEM, tc.cert)
			if err != nil {
				t.Fatal(err)
			}
			code, _, err := get(t, ccfg, srv.URL)
			if tc.ok && (err != nil || code != http.StatusOK) {
				t.Fatalf("got %d, %v; want 200", code, err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("accepted with status %d", code)
			}
		})
	}
}

func TestClientTLSConfigBadPEM(t *testing.T) {
	if _, err := ClientTLSConfig([]byte("nothing here"), nil); err == nil {
		t.Fatal("no error for a PEM without certificates")
	}
}

func TestPinnedTLSConfig(t *testing.T) {
	ca, dir := newTestCA(t)
	srv := startServer(t, serverConfig(t, ca, dir))

	t.Run("right fingerprint", func(t *testing.T) {
		var got *x509.Certificate
		code, _, err := get(t, PinnedTLSConfig(ca.Fingerprint(), func(c *x509.Certificate) { got = c }), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized {
			t.Errorf("status %d, want 401 (no client certificate)", code)
		}
		if got == nil || Fingerprint(got) != ca.Fingerprint() {
			t.Fatal("onCA not called with the CA")
		}
		// What onCA hands over is enough for ClientTLSConfig.
		cfg, err := ClientTLSConfig(ca.CertPEM, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := get(t, cfg, srv.URL); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("fingerprint with colons in upper case", func(t *testing.T) {
		var fp strings.Builder
		for i, c := range strings.ToUpper(ca.Fingerprint()) {
			if i > 0 && i%2 == 0 {
				fp.WriteByte(':')
			}
			fp.WriteRune(c)
		}
		if _, _, err := get(t, PinnedTLSConfig(fp.String(), nil), srv.URL); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("wrong fingerprint", func(t *testing.T) {
		other, _ := newTestCA(t)
		called := false
		_, _, err := get(t, PinnedTLSConfig(other.Fingerprint(), func(*x509.Certificate) { called = true }), srv.URL)
		if !errors.Is(err, ErrFingerprint) {
			t.Fatalf("err = %v, want ErrFingerprint", err)
		}
		if !strings.Contains(err.Error(), "fingerprint") {
			t.Errorf("error %q does not mention the fingerprint", err)
		}
		if called {
			t.Error("onCA called on mismatch")
		}
	})
	t.Run("host name", func(t *testing.T) {
		addr := srv.Listener.Addr().String()
		cfg := PinnedTLSConfig(ca.Fingerprint(), nil)
		cfg.ServerName = "localhost"
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatalf("localhost refused: %v", err)
		}
		c.Close()
		cfg.ServerName = "elsewhere.example.com"
		if c, err := tls.Dial("tcp", addr, cfg); err == nil {
			c.Close()
			t.Fatal("certificate accepted for a host it does not name")
		}
	})
}

// TestPinnedRejectsImpostor: an impostor can copy the real CA certificate
// into its chain, but cannot make a leaf that verifies against it.
func TestPinnedRejectsImpostor(t *testing.T) {
	ca, _ := newTestCA(t)
	evil, evilDir := newTestCA(t)
	evilCert, err := evil.ServerCertificate(evilDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A leaf without the right CA in its chain at all.
	alone := evilCert
	alone.Certificate = alone.Certificate[:1]
	// The real CA appended to the impostor's chain.
	copied := evilCert
	copied.Certificate = [][]byte{evilCert.Certificate[0], ca.Cert.Raw}
	// A CA certificate presented as the leaf, pinned by its own
	// fingerprint: the pinned CA must come after the leaf.
	self := tls.Certificate{Certificate: [][]byte{evil.Cert.Raw}, PrivateKey: evil.Key}

	for _, tc := range []struct {
		name   string
		cert   tls.Certificate
		pin    string
		wantFP bool
	}{
		{"leaf only", alone, ca.Fingerprint(), true},
		{"copied CA", copied, ca.Fingerprint(), false},
		{"CA as leaf", self, evil.Fingerprint(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{tc.cert}})
			called := false
			_, _, err := get(t, PinnedTLSConfig(tc.pin, func(*x509.Certificate) { called = true }), srv.URL)
			if err == nil {
				t.Fatal("impostor accepted")
			}
			t.Logf("refused: %v", err)
			if tc.wantFP != errors.Is(err, ErrFingerprint) {
				t.Errorf("err = %v; ErrFingerprint expected: %v", err, tc.wantFP)
			}
			if called {
				t.Error("onCA called for an impostor")
			}
		})
	}
}

// TestPinnedRejectsClientCertificate: a certificate the CA issued to an
// agent cannot serve as the server's, since it lacks server authentication.
func TestPinnedRejectsClientCertificate(t *testing.T) {
	ca, _ := newTestCA(t)
	agent, _ := enroll(t, ca, "localhost")
	agent.Certificate = append(agent.Certificate, ca.Cert.Raw)
	srv := startServer(t, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{agent}})
	if _, _, err := get(t, PinnedTLSConfig(ca.Fingerprint(), nil), srv.URL); err == nil {
		t.Fatal("agent certificate accepted as a server certificate")
	}
}

// TestPinnedVerifiesLeafAgainstPinnedCA: a leaf that names the pinned CA as
// its issuer but was signed by another key fails, though the chain holds the
// pinned CA.
func TestPinnedVerifiesLeafAgainstPinnedCA(t *testing.T) {
	ca, _ := newTestCA(t)
	evil, _ := newTestCA(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// Same subject and names as a real server certificate, but signed by
	// evil and claiming the real CA as issuer name.
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "Kura server"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	parent := *evil.Cert
	parent.Subject = ca.Cert.Subject
	parent.RawSubject = ca.Cert.RawSubject
	der, err := x509.CreateCertificate(rand.Reader, tmpl, &parent, key.Public(), evil.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}
	srv := startServer(t, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}})
	_, _, err = get(t, PinnedTLSConfig(ca.Fingerprint(), nil), srv.URL)
	if err == nil {
		t.Fatal("leaf forged under the pinned CA's name accepted")
	}
	if errors.Is(err, ErrFingerprint) {
		t.Errorf("err = %v: the fingerprint matched, the signature did not", err)
	}
}
