package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/kura-backup/kura/internal/private"
)

// File names inside the directory given to LoadOrCreateCA and
// CA.ServerCertificate.
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
)

const (
	caValidity = 10 * 365 * 24 * time.Hour
	// backdate is subtracted from NotBefore so that a peer whose clock is
	// a little behind still accepts a fresh certificate.
	backdate = 5 * time.Minute
)

// ErrFingerprint reports that a server's chain holds no CA with the pinned
// fingerprint.
var ErrFingerprint = errors.New("pki: CA fingerprint does not match")

// Clock tells the time. CA reads time only through its Clock, so expiry
// decisions are testable.
type Clock interface {
	Now() time.Time
}

// CA is the server's certificate authority (ECDSA P-256, self-signed, 10
// years).
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte

	// Clock, if not nil, replaces the wall clock for issuing and for the
	// expiry checks of ServerCertificate.
	Clock Clock
}

func (ca *CA) now() time.Time {
	if ca.Clock != nil {
		return ca.Clock.Now()
	}
	return time.Now()
}

// LoadOrCreateCA loads dir/ca.crt and dir/ca.key, or creates both (and dir,
// mode 0700) when neither exists. created reports whether it made a new CA.
// name goes into the subject CN ("Kura CA <name>"). Exactly one of the two
// files existing is an error: making a new CA would strand every enrolled
// agent, so that is left to the operator.
func LoadOrCreateCA(dir, name string) (ca *CA, created bool, err error) {
	certPath := filepath.Join(dir, CACertFile)
	keyPath := filepath.Join(dir, CAKeyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	certMissing := errors.Is(certErr, fs.ErrNotExist)
	keyMissing := errors.Is(keyErr, fs.ErrNotExist)
	switch {
	case certMissing && keyMissing:
		ca, err := createCA(dir, name)
		if err != nil {
			return nil, false, err
		}
		return ca, true, nil
	case certErr != nil && !certMissing:
		return nil, false, fmt.Errorf("pki: read CA certificate: %w", certErr)
	case keyErr != nil && !keyMissing:
		return nil, false, fmt.Errorf("pki: read CA key: %w", keyErr)
	case certMissing:
		return nil, false, fmt.Errorf("pki: %s exists but %s is missing; restore it, or remove %s to create a new CA (every agent must then enroll again)", keyPath, certPath, keyPath)
	case keyMissing:
		return nil, false, fmt.Errorf("pki: %s exists but %s is missing; restore it, or remove %s to create a new CA (every agent must then enroll again)", certPath, keyPath, certPath)
	}
	ca, err = parseCA(certPEM, keyPEM)
	if err != nil {
		return nil, false, fmt.Errorf("pki: load CA from %s: %w", dir, err)
	}
	return ca, false, nil
}

func createCA(dir, name string) (*CA, error) {
	if err := private.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("pki: create CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	cn := "Kura CA"
	if name != "" {
		cn += " " + name
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Kura"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	keyPEM, err := marshalKeyPEM(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	// Key first: a crash in between leaves a key without a certificate,
	// which LoadOrCreateCA reports instead of silently replacing.
	if err := writeFileAtomic(filepath.Join(dir, CAKeyFile), keyPEM, private.FileMode); err != nil {
		return nil, fmt.Errorf("pki: write CA key: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, CACertFile), certPEM, private.FileMode); err != nil {
		return nil, fmt.Errorf("pki: write CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, nil
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, errors.New("certificate is not a CA")
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		return nil, fmt.Errorf("CA certificate is not self-signed: %w", err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("CA key does not match CA certificate")
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}, nil
}

// Fingerprint is the lowercase hex SHA-256 of the CA certificate's DER.
func (ca *CA) Fingerprint() string { return Fingerprint(ca.Cert) }

// Fingerprint is the lowercase hex SHA-256 of cert's DER encoding: 64
// characters.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// Serial is cert's serial number in lowercase hex, the form SignClient
// returns, so that the server can look a connection's certificate up in its
// client table.
func Serial(cert *x509.Certificate) string {
	return cert.SerialNumber.Text(16)
}

// ParseCertPEM parses the first CERTIFICATE block in b, skipping any other
// PEM blocks before it.
func ParseCertPEM(b []byte) (*x509.Certificate, error) {
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("pki: no CERTIFICATE PEM block")
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("pki: parse certificate: %w", err)
		}
		return cert, nil
	}
}

// randomSerial returns a random, non-zero 128-bit serial number.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("pki: serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

func marshalKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseKeyPEM parses the first private key block in b: PKCS #8 ("PRIVATE
// KEY") or SEC 1 ("EC PRIVATE KEY").
func parseKeyPEM(b []byte) (crypto.Signer, error) {
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("pki: no private key PEM block")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pki: parse private key: %w", err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("pki: private key of type %T cannot sign", key)
		}
		return signer, nil
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory: write, fsync, chmod, rename, fsync the directory. Readers see
// the old content or the new, never a mix.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600, so a key is never readable by others,
	// not even before this Chmod.
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
