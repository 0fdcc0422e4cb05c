package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/private"
)

// Files in the node folder (HOME/node).
const (
	dirName    = "node"
	configFile = "node.json"
	certFile   = "node.crt"
	keyFile    = "node.key"
	caFile     = "ca.crt"
)

// Config is what enrollment leaves in the node folder.
type Config struct {
	Server   string    `json:"server"`
	Name     string    `json:"name"`
	Enrolled time.Time `json:"enrolled"`
}

// Dir is the node folder inside a node home.
func Dir(home string) string { return filepath.Join(home, dirName) }

// ErrNotEnrolled: Open found no node configuration in the home.
var ErrNotEnrolled = errors.New("this home is not an enrolled storage node")

// Enroll makes this machine a storage node of the server, with a node
// token (kura token create --node): it checks the server against the
// token's CA fingerprint, sends a certificate request, and keeps the
// certificate and the CA in HOME/node. The server records it as a node:
// a node token cannot enroll an agent, nor an agent's token a node.
//
// dataHosts are the names and addresses agents will dial for the node's
// data port (kura node run --data-listen); with none, the node has no
// data port and backups to it go through the server.
func Enroll(ctx context.Context, home, server, token, name string, dataHosts []string) (*Config, error) {
	t, err := pki.ParseTokenKind(token, pki.KindEnroll)
	if err != nil {
		return nil, fmt.Errorf("enrollment token: %w", err)
	}
	if name == "" {
		if name, err = os.Hostname(); err != nil {
			return nil, err
		}
	}
	dir := Dir(home)
	if _, err := os.Stat(filepath.Join(dir, configFile)); err == nil {
		return nil, fmt.Errorf("this home is enrolled already (%s); remove that folder to enroll again", dir)
	}
	en, err := apiclient.EnrollWith(ctx, server, t, api.EnrollRequest{Token: token, Name: name, Kind: api.EnrollNode, DataHosts: dataHosts})
	if err != nil {
		return nil, err
	}
	keyPEM, resp := en.KeyPEM, en.Resp
	if err := private.MkdirAll(dir); err != nil {
		return nil, err
	}
	cfg := &Config{Server: en.Server, Name: resp.Name, Enrolled: time.Now().UTC()}
	cb, _ := json.MarshalIndent(cfg, "", "  ")
	for _, f := range []struct {
		name string
		data []byte
	}{{keyFile, keyPEM}, {certFile, []byte(resp.CertPEM)}, {caFile, []byte(resp.CAPEM)}, {configFile, append(cb, '\n')}} {
		if err := private.WriteFileDurable(filepath.Join(dir, f.name), f.data); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// Options configure a running node.
type Options struct {
	Home string
	Log  io.Writer // default stderr
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts (1 s … 30 s).
	MinBackoff, MaxBackoff time.Duration
	// DataListen is the address of the node's data port (HOST:PORT; port
	// 0 picks one), where agents send their backups straight to the node;
	// "" for none (the data then goes through the server). The node's
	// certificate must name the host agents dial (enroll --data-host).
	DataListen string
	// TapeHardware reaches the changers and drives of the node's tape
	// libraries (nil: the mtx command and the st driver; tests give an
	// emulation).
	TapeHardware *library.Hardware
}

// Node is an enrolled storage node.
type Node struct {
	opts  Options
	cfg   Config
	tls   *tls.Config
	log   *slog.Logger
	cert  tls.Certificate
	caPEM []byte
	spans *spans
}

// Open loads an enrolled node from its home.
func Open(opts Options) (*Node, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	dir := Dir(opts.Home)
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (no %s)", ErrNotEnrolled, filepath.Join(dir, configFile))
	}
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, configFile), err)
	}
	read := func(f string) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		b, err = os.ReadFile(filepath.Join(dir, f))
		return b
	}
	certPEM, keyPEM, caPEM := read(certFile), read(keyFile), read(caFile)
	if err != nil {
		return nil, err
	}
	cert, _, err := pki.LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := pki.ClientTLSConfig(caPEM, &cert)
	if err != nil {
		return nil, err
	}
	n := &Node{opts: opts, cfg: cfg, tls: tlsCfg, cert: cert, caPEM: caPEM, spans: newSpans(""),
		log: slog.New(slog.NewTextHandler(opts.Log, nil)).With("node", cfg.Name)}
	if w := private.Check(dir); w != "" {
		n.log.Warn("node home " + w)
	}
	return n, nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Server is the server address the node dials.
func (n *Node) Server() string { return n.cfg.Server }

// Run keeps the tunnel to the server up and serves the node's libraries
// over it until ctx ends. A broken tunnel is dialled again with a growing,
// jittered delay, and the session that ended releases its drives and
// aborts its unfinished tape files first; a refusal (revoked, not a node)
// ends Run with its error, since retrying cannot fix it.
func (n *Node) Run(ctx context.Context) error {
	if n.opts.DataListen != "" {
		stop, err := n.listenData(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}
	backoff := n.opts.MinBackoff
	failing := false
	for ctx.Err() == nil {
		conn, err := Dial(ctx, n.cfg.Server, n.tls, n.spans.dataURL)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var re *RefusedError
			if errors.As(err, &re) && (re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden) {
				n.log.Error("the server refuses this node", "err", err)
				return err
			}
			if !failing {
				n.log.Warn("cannot reach the server; retrying with backoff", "server", n.cfg.Server, "err", err)
				failing = true
			}
			d := backoff/2 + rand.N(backoff/2+1)
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, n.opts.MaxBackoff)
			continue
		}
		failing, backoff = false, n.opts.MinBackoff
		n.log.Info("connected", "server", n.cfg.Server)
		n.serve(ctx, conn)
		if ctx.Err() == nil {
			n.log.Warn("lost the server; reconnecting")
		}
	}
	return nil
}

// serve runs one session: the protocol over conn until it closes or ctx
// ends, then every handle of the session is released.
func (n *Node) serve(ctx context.Context, conn net.Conn) {
	libs := NewLibraries(n.opts.Home)
	libs.spans = n.spans
	libs.hw = n.opts.TapeHardware
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	ServeConn(conn, libs.Handler())
	conn.Close()
	libs.Close()
}

// DataURL is the node's data port once Run listens on it ("" before, or
// without one).
func (n *Node) DataURL() string { return n.spans.dataURL }

// DataReceived is the frame bytes agents have sent to the data port.
func (n *Node) DataReceived() int64 { return n.spans.received.Load() }

// ErrNoDataCert: the node's certificate is not a server certificate (it was
// enrolled without --data-host), so it cannot open a data port.
var ErrNoDataCert = errors.New("the node's certificate names no host for a data port (enroll with --data-host)")

// listenData opens the data port: TLS 1.3 with the node's certificate,
// and only clients with a certificate of the server's CA (agents).
func (n *Node) listenData(ctx context.Context) (stop func(), err error) {
	leaf := n.cert.Leaf
	if leaf == nil || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return nil, ErrNoDataCert
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(n.caPEM) {
		return nil, errors.New("node: no CA certificate")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{n.cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, NextProtos: []string{"http/1.1"}}
	ln, err := net.Listen("tcp", n.opts.DataListen)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		// Listening on every address: agents dial the first name the
		// certificate has.
		host = "localhost"
		if len(leaf.DNSNames) > 0 {
			host = leaf.DNSNames[0]
		}
		for _, ip := range leaf.IPAddresses {
			if !ip.IsLoopback() {
				host = ip.String()
				break
			}
		}
	}
	n.spans.dataURL = "https://" + net.JoinHostPort(host, port)
	srv := &http.Server{Handler: n.spans.DataHandler(), TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	n.log.Info("data port listening", "url", n.spans.dataURL)
	return func() { srv.Close() }, nil
}
