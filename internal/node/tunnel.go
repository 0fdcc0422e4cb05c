package node

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http2"
)

// The tunnel: a node dials the server (TLS 1.3, its client certificate,
// ALPN http/1.1) and asks to upgrade GET /api/v1/node/tunnel to the
// protocol "kura-node/1". Once the server has answered 101 Switching
// Protocols the roles turn: the server is the HTTP/2 client on that one
// connection and the node serves the changer protocol (Libraries.Handler).
// So the node needs no port the server dials, and every call of the server
// is one HTTP/2 stream of a connection the node's certificate
// authenticated.

// TunnelPath is the server's endpoint the node dials.
const TunnelPath = "/api/v1/node/tunnel"

// Protocol is the Upgrade token; a new protocol takes a new token.
const Protocol = "kura-node/1"

// HeaderDataURL is the tunnel request's header announcing the node's data
// port (https://HOST:PORT), when it has one.
const HeaderDataURL = "Kura-Data-URL"

// Accept takes over the connection of an upgrade request (server side): it
// answers 101 and returns the connection, ready for NewClient.
func Accept(w http.ResponseWriter, r *http.Request) (net.Conn, error) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), Protocol) {
		return nil, fmt.Errorf("%w: the tunnel needs Upgrade: %s", errBadRequest, Protocol)
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("the tunnel needs an HTTP/1.1 connection of its own: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	if _, err := rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + Protocol + "\r\n\r\n"); err != nil {
		conn.Close()
		return nil, err
	}
	if err := rw.Flush(); err != nil {
		conn.Close()
		return nil, err
	}
	return &bufConn{Conn: conn, r: rw.Reader}, nil
}

// maxFrame is the largest HTTP/2 frame each end takes: tape data moves in
// frames of up to 1 MiB instead of HTTP/2's default 16 KiB, so a stream of
// tape files costs fewer frames, and fewer TLS records and writes.
const maxFrame = 1 << 20

// pingEvery is how often each end checks that the other is there.
const pingEvery = 5 * time.Second

// NewClient makes the server's HTTP/2 client over an accepted tunnel.
func NewClient(conn net.Conn) (*http2.ClientConn, *http.Client, error) {
	t := &http2.Transport{ReadIdleTimeout: pingEvery, PingTimeout: 2 * pingEvery, AllowHTTP: true,
		MaxReadFrameSize: maxFrame}
	cc, err := t.NewClientConn(conn)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return cc, &http.Client{Transport: cc}, nil
}

// Dial connects to the server's tunnel endpoint (node side) and returns the
// upgraded connection, ready for ServeConn. An answer other than 101 is
// returned as the server's error text.
func Dial(ctx context.Context, server string, cfg *tls.Config, dataURL string) (net.Conn, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server address %q: want https://HOST:PORT", server)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}, Config: cfg}
	raw, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	req, _ := http.NewRequest("GET", "https://"+u.Host+TunnelPath, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", Protocol)
	if dataURL != "" {
		req.Header.Set(HeaderDataURL, dataURL)
	}
	_ = raw.SetDeadline(time.Now().Add(30 * time.Second))
	if err := req.Write(raw); err != nil {
		raw.Close()
		return nil, err
	}
	br := bufio.NewReader(raw)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		raw.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer raw.Close()
		return nil, &RefusedError{Status: resp.StatusCode, Body: readBody(resp)}
	}
	_ = raw.SetDeadline(time.Time{})
	return &bufConn{Conn: raw, r: br}, nil
}

// ServeConn serves h on an upgraded tunnel (node side) until it closes.
func ServeConn(conn net.Conn, h http.Handler) {
	srv := &http2.Server{IdleTimeout: 0, ReadIdleTimeout: pingEvery, PingTimeout: 2 * pingEvery,
		MaxReadFrameSize: maxFrame, MaxUploadBufferPerStream: 16 << 20, MaxUploadBufferPerConnection: 64 << 20}
	srv.ServeConn(conn, &http2.ServeConnOpts{Handler: h, BaseConfig: &http.Server{}})
}

// bufConn reads first what a bufio.Reader already took from the connection.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
