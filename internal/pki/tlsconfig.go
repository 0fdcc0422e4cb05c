package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// nextProtos are the server's ALPN protocols. The client configurations
// leave NextProtos empty: net/http's Transport adds "h2" itself when it is
// set up for HTTP/2 (ForceAttemptHTTP2), and offering "h2" from a Transport
// that is not breaks every request.
var nextProtos = []string{"h2", "http/1.1"}

// ServerTLSConfig is the server's TLS configuration: TLS 1.3 only, cert as
// the server certificate, and client certificates verified against the CA
// whenever one is presented (tls.VerifyClientCertIfGiven). Admin calls come
// with a bearer token and no client certificate; agents present theirs, and
// a certificate that does not verify fails the handshake. Whether a verified
// client is still enrolled is the server's check, against its client table.
func ServerTLSConfig(ca *CA, cert tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
		NextProtos:   slices.Clone(nextProtos),
	}
}

// ClientTLSConfig is the configuration of an enrolled agent or a logged-in
// admin CLI: TLS 1.3 only, the certificates in caPEM as the only roots, and
// clientCert presented when not nil. ServerName is left empty; net/http
// fills it from the URL. NextProtos is left empty too (see nextProtos); set
// ForceAttemptHTTP2 on the Transport for HTTP/2.
func ClientTLSConfig(caPEM []byte, clientCert *tls.Certificate) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("pki: client TLS config: no certificate in the CA PEM")
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    pool,
	}
	if clientCert != nil {
		cfg.Certificates = []tls.Certificate{*clientCert}
	}
	return cfg, nil
}

// PinnedTLSConfig is the configuration for enrollment and login, when the
// client knows only the CA fingerprint fp (from a token). The server is
// accepted only if a certificate in its chain, other than the leaf, is a CA
// whose Fingerprint equals fp, and the leaf verifies against that CA alone
// for server authentication and, when the connection state carries a
// server name, for that name. (For an IP address literal TLS sends no name,
// so only the CA and the server-authentication usage are checked; the CA
// issues server-authentication certificates to the server alone.)
//
// fp may be upper or lower case and may contain colons. If no certificate
// matches, the handshake fails with an error wrapping ErrFingerprint. On
// success onCA, if not nil, is called with the CA certificate so the caller
// can store its PEM; it is called on every successful handshake, from the
// goroutine doing that handshake.
//
// Go's own verification is switched off (InsecureSkipVerify); the
// VerifyConnection callback does all of it instead.
func PinnedTLSConfig(fp string, onCA func(*x509.Certificate)) *tls.Config {
	want := normalizeFingerprint(fp)
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			ca, err := verifyPinned(cs, want)
			if err != nil {
				return err
			}
			if onCA != nil {
				onCA(ca)
			}
			return nil
		},
	}
}

// verifyPinned finds the CA with fingerprint want in the peer's chain and
// verifies the leaf against it.
func verifyPinned(cs tls.ConnectionState, want string) (*x509.Certificate, error) {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: server presented no certificate", ErrFingerprint)
	}
	leaf := certs[0]
	var ca *x509.Certificate
	for _, c := range certs[1:] {
		if Fingerprint(c) == want {
			ca = c
			break
		}
	}
	if ca == nil && Fingerprint(leaf) == want {
		return nil, fmt.Errorf("%w: server presented the CA %s itself instead of a certificate issued by it", ErrFingerprint, want)
	}
	if ca == nil {
		return nil, fmt.Errorf("%w: server's chain has no certificate with fingerprint %s (its last one has %s)",
			ErrFingerprint, want, Fingerprint(certs[len(certs)-1]))
	}
	if !ca.IsCA || !ca.BasicConstraintsValid {
		return nil, fmt.Errorf("%w: the certificate with fingerprint %s is not a CA", ErrFingerprint, want)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		if c != ca {
			intermediates.AddCert(c)
		}
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		DNSName:       cs.ServerName,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("pki: server certificate does not verify against the pinned CA: %w", err)
	}
	return ca, nil
}

// normalizeFingerprint lowers fp and drops colons and surrounding space, so
// that "AB:CD:..." as printed by other tools compares equal.
func normalizeFingerprint(fp string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(fp), ":", ""))
}
