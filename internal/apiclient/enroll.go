package apiclient

import (
	"context"
	"fmt"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/pki"
)

// Enrolled is what an enrollment brings home: the new private key, the
// server's answer (the certificate and the CA, both checked) and the
// server's base address as the client will use it.
type Enrolled struct {
	KeyPEM []byte
	Resp   api.EnrollResponse
	Server string
}

// EnrollWith enrolls req.Name (an agent or, with req.Kind, a storage
// node) at server with the parsed one-time token t (req.Token is its
// text): it checks the server against the token's CA fingerprint, makes a
// key and a certificate request, sends it, and checks that the CA sent
// back is the token's and the certificate fits the key. Nothing is
// written; the caller keeps the files.
func EnrollWith(ctx context.Context, server string, t pki.Token, req api.EnrollRequest) (*Enrolled, error) {
	if err := CheckHost(ctx, server, t.CAFingerprint); err != nil {
		return nil, err
	}
	keyPEM, csr, err := pki.NewClientKey(req.Name)
	if err != nil {
		return nil, err
	}
	c, err := New(server, pki.PinnedTLSConfig(t.CAFingerprint, nil), "")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req.CSR = csr
	var resp api.EnrollResponse
	if err := c.Enroll(ctx, req, &resp); err != nil {
		return nil, err
	}
	ca, err := pki.ParseCertPEM([]byte(resp.CAPEM))
	if err != nil {
		return nil, fmt.Errorf("the server's CA: %w", err)
	}
	if pki.Fingerprint(ca) != t.CAFingerprint {
		return nil, fmt.Errorf("the server sent a CA that does not match the token: %w", pki.ErrFingerprint)
	}
	if _, _, err := pki.LoadClientCertificate([]byte(resp.CertPEM), keyPEM); err != nil {
		return nil, fmt.Errorf("the certificate the server sent: %w", err)
	}
	return &Enrolled{KeyPEM: keyPEM, Resp: resp, Server: c.Base()}, nil
}
