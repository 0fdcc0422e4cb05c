package pki

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
	"unicode"
)

// ErrBadCSR reports a certificate request that SignClient refuses: one that
// does not parse, whose signature does not verify, or whose key is too weak.
var ErrBadCSR = errors.New("pki: bad certificate request")

// maxNameLen is the upper bound of a common name (RFC 5280 ub-common-name).
const maxNameLen = 64

// SignClient signs a certificate request (DER) for an agent. The subject is
// CN = name; the request's own subject and extensions are ignored, only its
// public key is used, after its signature has been checked. The certificate
// is for client authentication only, valid for validity from now (but not
// beyond the CA), with a random 128-bit serial. It returns the certificate
// PEM and the serial in lowercase hex (see Serial).
func (ca *CA) SignClient(csrDER []byte, name string, validity time.Duration) (certPEM []byte, serial string, err error) {
	return ca.sign(csrDER, name, validity, nil)
}

// SignNode signs a certificate request for a storage node: a client
// certificate as SignClient's, which is also a server certificate for
// hosts (the names and addresses of the node's data port, where agents
// send their backups), so one key serves both directions.
func (ca *CA) SignNode(csrDER []byte, name string, hosts []string, validity time.Duration) (certPEM []byte, serial string, err error) {
	if len(hosts) == 0 {
		return nil, "", fmt.Errorf("pki: sign node %q: no host names for its data port", name)
	}
	return ca.sign(csrDER, name, validity, hosts)
}

func (ca *CA) sign(csrDER []byte, name string, validity time.Duration, hosts []string) (certPEM []byte, serial string, err error) {
	if err := checkName(name); err != nil {
		return nil, "", err
	}
	if validity <= 0 {
		return nil, "", fmt.Errorf("pki: sign client %q: validity %v is not positive", name, validity)
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadCSR, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadCSR, err)
	}
	if err := checkClientKey(csr.PublicKey); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadCSR, err)
	}
	sn, err := randomSerial()
	if err != nil {
		return nil, "", err
	}
	now := ca.now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) > 0 {
		dns, ips, err := splitHosts(hosts)
		if err != nil {
			return nil, "", err
		}
		tmpl.DNSNames, tmpl.IPAddresses = dns, ips
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, "", fmt.Errorf("pki: sign client %q: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), sn.Text(16), nil
}

// checkName accepts a client name for a common name: 1 to 64 bytes of
// printable UTF-8 without control characters.
func checkName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("pki: client name %q: length must be 1 to %d bytes", name, maxNameLen)
	}
	for _, r := range name {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return fmt.Errorf("pki: client name %q: not printable", name)
		}
	}
	return nil
}

func checkClientKey(pub any) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() && k.Curve != elliptic.P521() {
			return fmt.Errorf("unsupported ECDSA curve %s", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits is too short", k.N.BitLen())
		}
	default:
		return fmt.Errorf("unsupported public key type %T", pub)
	}
	return nil
}

// NewClientKey makes an agent key (ECDSA P-256) and a certificate request
// for name. It returns the key as PKCS #8 PEM and the request as DER.
func NewClientKey(name string) (keyPEM, csrDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: client key: %w", err)
	}
	csrDER, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name},
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	keyPEM, err = marshalKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return keyPEM, csrDER, nil
}

// LoadClientCertificate pairs a certificate PEM (the leaf first, any further
// certificates as its chain) with its private key PEM. It also returns the
// parsed leaf. It fails if the key does not match the certificate.
func LoadClientCertificate(certPEM, keyPEM []byte) (tls.Certificate, *x509.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("pki: load certificate: %w", err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		leaf, err = x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("pki: load certificate: %w", err)
		}
		pair.Leaf = leaf
	}
	return pair, leaf, nil
}
