package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/private"
)

const (
	serverValidity = 2 * 365 * 24 * time.Hour
	// serverRenewBefore is how long before expiry ServerCertificate
	// replaces the server certificate.
	serverRenewBefore = 30 * 24 * time.Hour
)

// defaultHosts are always in the server certificate, so that local tools
// and tests can connect without configuration.
var defaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// ServerCertificate loads dir/server.crt and dir/server.key, or issues a new
// pair (ECDSA P-256, 2 years, server authentication) and writes it. The
// certificate names every host in hosts (IP addresses as IP SANs, the rest
// as DNS SANs; "host:port" and "[v6]" forms are accepted) plus localhost,
// 127.0.0.1 and ::1. A stored pair is replaced when it cannot be read, does
// not cover every host, was not signed by this CA, or expires within 30
// days. The returned chain is the leaf followed by the CA certificate, so a
// client that pins the CA fingerprint sees the CA.
func (ca *CA) ServerCertificate(dir string, hosts []string) (tls.Certificate, error) {
	dnsNames, ips, err := splitHosts(hosts)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPath := filepath.Join(dir, ServerCertFile)
	keyPath := filepath.Join(dir, ServerKeyFile)
	if cert, ok := ca.loadServerCertificate(certPath, keyPath, dnsNames, ips); ok {
		return cert, nil
	}
	return ca.issueServerCertificate(certPath, keyPath, dnsNames, ips)
}

// loadServerCertificate returns the stored server certificate if it is
// usable as is. Any failure just means "issue a new one".
func (ca *CA) loadServerCertificate(certPath, keyPath string, dnsNames []string, ips []net.IP) (tls.Certificate, bool) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, false
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, false
	}
	pair, leaf, err := LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, false
	}
	if leaf.CheckSignatureFrom(ca.Cert) != nil {
		return tls.Certificate{}, false
	}
	now := ca.now()
	if now.Before(leaf.NotBefore) || now.Add(serverRenewBefore).After(leaf.NotAfter) {
		return tls.Certificate{}, false
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return tls.Certificate{}, false
	}
	for _, name := range dnsNames {
		if !slices.ContainsFunc(leaf.DNSNames, func(s string) bool { return strings.EqualFold(s, name) }) {
			return tls.Certificate{}, false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return tls.Certificate{}, false
		}
	}
	pair.Certificate = [][]byte{leaf.Raw, ca.Cert.Raw}
	return pair, true
}

func (ca *CA) issueServerCertificate(certPath, keyPath string, dnsNames []string, ips []net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: server key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	now := ca.now()
	notAfter := now.Add(serverValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Kura server", Organization: []string{"Kura"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: issue server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: issue server certificate: %w", err)
	}
	keyPEM, err := marshalKeyPEM(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := private.MkdirAll(filepath.Dir(certPath)); err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: write server certificate: %w", err)
	}
	// Key first: after a crash in between, the old certificate does not
	// match the new key and the next start issues again.
	if err := writeFileAtomic(keyPath, keyPEM, private.FileMode); err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: write server key: %w", err)
	}
	if err := writeFileAtomic(certPath, certPEM, private.FileMode); err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: write server certificate: %w", err)
	}
	return tls.Certificate{
		Certificate: [][]byte{der, ca.Cert.Raw},
		PrivateKey:  key,
		Leaf:        leaf,
	}, nil
}

// splitHosts normalizes the default hosts plus hosts into de-duplicated
// DNS names (lower case) and IP addresses, in order of first appearance.
func splitHosts(hosts []string) ([]string, []net.IP, error) {
	var dnsNames []string
	var ips []net.IP
	for _, h := range slices.Concat(defaultHosts, hosts) {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if ip := net.ParseIP(h); ip != nil {
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if strings.ContainsAny(h, " /\\:@") || h == "" {
			return nil, nil, fmt.Errorf("pki: invalid server host name %q", h)
		}
		if !slices.Contains(dnsNames, h) {
			dnsNames = append(dnsNames, h)
		}
	}
	return dnsNames, ips, nil
}
