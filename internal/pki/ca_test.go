package pki

import (
	"bytes"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c fakeClock) Now() time.Time { return c.t }

func newTestCA(t *testing.T) (*CA, string) {
	t.Helper()
	dir := t.TempDir()
	ca, created, err := LoadOrCreateCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("created = false for an empty directory")
	}
	return ca, dir
}

func TestLoadOrCreateCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	ca, created, err := LoadOrCreateCA(dir, "backup1")
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Error("created = false on first call")
	}
	if got, want := ca.Cert.Subject.CommonName, "Kura CA backup1"; got != want {
		t.Errorf("CN = %q, want %q", got, want)
	}
	if !ca.Cert.IsCA || !ca.Cert.BasicConstraintsValid {
		t.Error("certificate is not a CA")
	}
	if life := ca.Cert.NotAfter.Sub(time.Now()); life < 9*365*24*time.Hour || life > 11*365*24*time.Hour {
		t.Errorf("CA lifetime %v, want about 10 years", life)
	}
	fp := ca.Fingerprint()
	if len(fp) != 64 || strings.ToLower(fp) != fp {
		t.Errorf("fingerprint %q is not 64 lowercase hex digits", fp)
	}

	again, created, err := LoadOrCreateCA(dir, "backup1")
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Error("created = true on second call")
	}
	if again.Fingerprint() != fp {
		t.Errorf("fingerprint changed on load: %s, want %s", again.Fingerprint(), fp)
	}
	if !bytes.Equal(again.CertPEM, ca.CertPEM) {
		t.Error("CertPEM differs after load")
	}
	if !publicKeysEqual(again.Cert.PublicKey, again.Key.Public()) {
		t.Error("loaded key does not match certificate")
	}

	for name, want := range map[string]os.FileMode{CAKeyFile: 0o600, CACertFile: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	assertNoTempFiles(t, dir)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestLoadOrCreateCAHalfState(t *testing.T) {
	for _, keep := range []string{CAKeyFile, CACertFile} {
		t.Run(keep, func(t *testing.T) {
			_, dir := newTestCA(t)
			for _, f := range []string{CAKeyFile, CACertFile} {
				if f != keep {
					if err := os.Remove(filepath.Join(dir, f)); err != nil {
						t.Fatal(err)
					}
				}
			}
			before, _ := os.ReadFile(filepath.Join(dir, keep))
			if _, _, err := LoadOrCreateCA(dir, "test"); err == nil {
				t.Fatal("no error with only one CA file present")
			}
			after, _ := os.ReadFile(filepath.Join(dir, keep))
			if !bytes.Equal(before, after) {
				t.Errorf("%s was overwritten", keep)
			}
		})
	}
}

func TestLoadOrCreateCAMismatchedKey(t *testing.T) {
	_, dir := newTestCA(t)
	_, other := newTestCA(t)
	key, err := os.ReadFile(filepath.Join(other, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateCA(dir, "test"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("err = %v, want a key mismatch", err)
	}
}

func TestLoadOrCreateCACorrupt(t *testing.T) {
	_, dir := newTestCA(t)
	if err := os.WriteFile(filepath.Join(dir, CACertFile), []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateCA(dir, "test"); err == nil {
		t.Fatal("no error for a corrupt CA certificate")
	}
}

func hasIP(ips []net.IP, s string) bool {
	return slices.ContainsFunc(ips, net.ParseIP(s).Equal)
}

func TestServerCertificate(t *testing.T) {
	ca, dir := newTestCA(t)
	first, err := ca.ServerCertificate(dir, []string{"backup.example.com", "10.0.0.5:8443"})
	if err != nil {
		t.Fatal(err)
	}
	leaf := first.Leaf
	for _, name := range []string{"localhost", "backup.example.com"} {
		if !slices.Contains(leaf.DNSNames, name) {
			t.Errorf("DNSNames %v lack %s", leaf.DNSNames, name)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.0.0.5"} {
		if !hasIP(leaf.IPAddresses, ip) {
			t.Errorf("IPAddresses %v lack %s", leaf.IPAddresses, ip)
		}
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("ExtKeyUsage = %v, want server auth only", leaf.ExtKeyUsage)
	}
	if life := leaf.NotAfter.Sub(time.Now()); life < 700*24*time.Hour || life > 740*24*time.Hour {
		t.Errorf("server certificate lifetime %v, want about 2 years", life)
	}
	if len(first.Certificate) != 2 || !bytes.Equal(first.Certificate[1], ca.Cert.Raw) {
		t.Errorf("chain has %d certificates, want leaf then CA", len(first.Certificate))
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "backup.example.com"}); err != nil {
		t.Errorf("leaf does not verify against the CA: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, ServerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("server key mode %v, want 0600", fi.Mode().Perm())
	}
	assertNoTempFiles(t, dir)
}

func TestServerCertificateReissue(t *testing.T) {
	ca, _ := newTestCA(t)
	other, _ := newTestCA(t)
	hosts := []string{"backup.example.com", "10.0.0.5"}
	later := func(d time.Duration) *CA {
		c := *ca
		c.Clock = fakeClock{time.Now().Add(d)}
		return &c
	}
	writeFile := func(name string, data []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	otherKey, _, err := NewClientKey("x")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ca      *CA
		hosts   []string
		damage  func(t *testing.T, dir string)
		reissue bool
		covers  []string
	}{
		{name: "same hosts", ca: ca, hosts: []string{"BACKUP.example.com.", "10.0.0.5:443"}, covers: hosts},
		{name: "subset", ca: ca, hosts: nil, covers: hosts},
		{name: "a year later", ca: later(365 * 24 * time.Hour), hosts: hosts, covers: hosts},
		{name: "new IP", ca: ca, hosts: []string{"10.0.0.6"}, reissue: true, covers: []string{"10.0.0.6"}},
		{name: "new IPv6", ca: ca, hosts: []string{"[fd00::7]:443"}, reissue: true, covers: []string{"fd00::7"}},
		{name: "new name", ca: ca, hosts: []string{"nas"}, reissue: true, covers: []string{"nas"}},
		{name: "near expiry", ca: later(2*365*24*time.Hour - 10*24*time.Hour), hosts: hosts, reissue: true, covers: hosts},
		{name: "other CA", ca: other, hosts: hosts, reissue: true, covers: hosts},
		{name: "corrupt certificate", ca: ca, hosts: hosts, damage: writeFile(ServerCertFile, []byte("junk")), reissue: true, covers: hosts},
		{name: "foreign key", ca: ca, hosts: hosts, damage: writeFile(ServerKeyFile, otherKey), reissue: true, covers: hosts},
		{name: "key missing", ca: ca, hosts: hosts, damage: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ServerKeyFile)) }, reissue: true, covers: hosts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first, err := ca.ServerCertificate(dir, hosts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			c, err := tc.ca.ServerCertificate(dir, tc.hosts)
			if err != nil {
				t.Fatal(err)
			}
			leaf := c.Leaf
			if re := Serial(leaf) != Serial(first.Leaf); re != tc.reissue {
				t.Fatalf("reissued = %v, want %v", re, tc.reissue)
			}
			if len(c.Certificate) != 2 || !bytes.Equal(c.Certificate[1], tc.ca.Cert.Raw) {
				t.Errorf("chain has %d certificates, want leaf then CA", len(c.Certificate))
			}
			if err := leaf.CheckSignatureFrom(tc.ca.Cert); err != nil {
				t.Errorf("certificate not signed by the CA: %v", err)
			}
			now := tc.ca.now()
			if now.Before(leaf.NotBefore) || now.Add(serverRenewBefore).After(leaf.NotAfter) {
				t.Errorf("certificate valid %v to %v, not usable at %v", leaf.NotBefore, leaf.NotAfter, now)
			}
			for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, tc.covers...) {
				if leaf.VerifyHostname(h) != nil {
					t.Errorf("certificate does not cover %s", h)
				}
			}
			// What was written is what the next call loads.
			again, err := tc.ca.ServerCertificate(dir, tc.hosts)
			if err != nil {
				t.Fatal(err)
			}
			if Serial(again.Leaf) != Serial(leaf) {
				t.Error("certificate reissued again on the next call")
			}
		})
	}
}

func TestServerCertificateBadHost(t *testing.T) {
	ca, dir := newTestCA(t)
	if _, err := ca.ServerCertificate(dir, []string{"a b"}); err == nil {
		t.Fatal("no error for host name with a space")
	}
}

func TestSignClient(t *testing.T) {
	ca, _ := newTestCA(t)
	keyPEM, csr, err := NewClientKey("whatever-the-agent-says")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, serial, err := ca.SignClient(csr, "agent-7", 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, cert, err := LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if pair.Leaf != cert {
		t.Error("LoadClientCertificate: Leaf is not the returned certificate")
	}
	if cert.Subject.CommonName != "agent-7" {
		t.Errorf("CN = %q, want agent-7 (the CSR's subject must be ignored)", cert.Subject.CommonName)
	}
	if Serial(cert) != serial || len(serial) < 16 {
		t.Errorf("serial %q, certificate has %q", serial, Serial(cert))
	}
	if cert.SerialNumber.BitLen() > 128 {
		t.Errorf("serial has %d bits", cert.SerialNumber.BitLen())
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage = %v, want client auth only", cert.ExtKeyUsage)
	}
	if d := cert.NotAfter.Sub(time.Now().Add(90 * 24 * time.Hour)); d < -time.Minute || d > time.Minute {
		t.Errorf("NotAfter %v is not 90 days from now", cert.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("client certificate verifies for server authentication")
	}
	if _, s2, err := ca.SignClient(csr, "agent-7", time.Hour); err != nil || s2 == serial {
		t.Errorf("second signing: serial %q (first %q), err %v", s2, serial, err)
	}
}

func TestSignClientRejects(t *testing.T) {
	ca, _ := newTestCA(t)
	_, csr, err := NewClientKey("agent-1")
	if err != nil {
		t.Fatal(err)
	}
	tamperedSubject := bytes.Replace(csr, []byte("agent-1"), []byte("agent-2"), 1)
	if bytes.Equal(tamperedSubject, csr) {
		t.Fatal("test CSR does not contain its name")
	}
	tamperedSig := bytes.Clone(csr)
	tamperedSig[len(tamperedSig)-1] ^= 0x01

	for name, der := range map[string][]byte{
		"tampered subject":   tamperedSubject,
		"tampered signature": tamperedSig,
		"garbage":            []byte("garbage"),
		"empty":              nil,
		"truncated":          csr[:len(csr)/2],
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := ca.SignClient(der, "agent-1", time.Hour)
			if !errors.Is(err, ErrBadCSR) {
				t.Fatalf("err = %v, want ErrBadCSR", err)
			}
		})
	}
	for _, name := range []string{"", strings.Repeat("x", 65), "bad\nname"} {
		if _, _, err := ca.SignClient(csr, name, time.Hour); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, _, err := ca.SignClient(csr, "agent-1", 0); err == nil {
		t.Error("zero validity accepted")
	}
}

func TestParseCertPEM(t *testing.T) {
	ca, _ := newTestCA(t)
	keyPEM, _, err := NewClientKey("x")
	if err != nil {
		t.Fatal(err)
	}
	// A key block before the certificate is skipped.
	cert, err := ParseCertPEM(append(bytes.Clone(keyPEM), ca.CertPEM...))
	if err != nil {
		t.Fatal(err)
	}
	if Fingerprint(cert) != ca.Fingerprint() {
		t.Error("parsed certificate differs")
	}
	if _, err := ParseCertPEM(keyPEM); err == nil {
		t.Error("no error without a certificate")
	}
	if _, _, err := LoadClientCertificate(ca.CertPEM, keyPEM); err == nil {
		t.Error("LoadClientCertificate accepted a key that does not match")
	}
}
