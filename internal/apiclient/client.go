// Package apiclient is the typed client of Kura's HTTPS API: the admin
// calls the CLI makes against a server, and the agent's calls. Every call
// returns the server's error as an *api.Error (with its stable code) when
// the server answered with one.
package apiclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/pki"
)

// Client talks to one server.
type Client struct {
	base  string // https://host:port
	hc    *http.Client
	bulk  *http.Client // HTTP/1.1: one connection per bulk stream (DoBulk)
	token string       // admin token, sent as a bearer token ("" for agents)
}

// New makes a client for the server at base (https://host:port) with the
// given TLS configuration (pki.ClientTLSConfig or pki.PinnedTLSConfig).
func New(base string, tlsCfg *tls.Config, token string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server address %q: want https://HOST:PORT", base)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 15 * time.Second,
		ResponseHeaderTimeout: 0}
	// A bulk stream (a backup's data) gets a connection of its own, in
	// HTTP/1.1: the body goes from the TLS connection to the handler without
	// HTTP/2's DATA framing, flow-control windows and buffer copies, and
	// without sharing a connection's window with the order polls.
	bulkTLS := &tls.Config{}
	if tlsCfg != nil {
		bulkTLS = tlsCfg.Clone()
	}
	bulkTLS.NextProtos = []string{"http/1.1"}
	// Its TLS records are gathered into large socket writes (bulkconn.go).
	bulk := bulkTransport(dialBulk(bulkTLS, 15*time.Second))
	return &Client{base: strings.TrimRight(u.String(), "/"), hc: &http.Client{Transport: tr}, bulk: &http.Client{Transport: bulk},
		token: strings.TrimSpace(token)}, nil
}

// bulkTransport is the HTTP/1.1 transport of bulk streams over the
// connections dial makes.
func bulkTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{DialTLSContext: dial, ForceAttemptHTTP2: false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second,
		WriteBufferSize: bulkBufferSize, ReadBufferSize: 64 << 10}
}

// Base is the server address.
func (c *Client) Base() string { return c.base }

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections(); c.bulk.CloseIdleConnections() }

// StatusError is an answer without an API error body.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string { return fmt.Sprintf("server answered %d: %s", e.Status, e.Body) }

// Code returns the API error code of err ("" if it has none).
func Code(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// NewRequest builds a request to an API path (without the /api/v1 prefix).
func (c *Client) NewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+api.Prefix+path, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// Do sends a request and turns an error answer into an error.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	return c.do(c.hc, req)
}

// DoBulk is Do for a bulk stream: over a connection of its own (HTTP/1.1).
func (c *Client) DoBulk(req *http.Request) (*http.Response, error) {
	return c.do(c.bulk, req)
}

func (c *Client) do(hc *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.base, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var ae api.Error
	if json.Unmarshal(b, &ae) == nil && ae.Code != "" {
		return &ae
	}
	return &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
}

// call sends in as JSON (if not nil) and decodes the answer into out (if
// not nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.NewRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return nil
}

// Server describes the server.
func (c *Client) Server(ctx context.Context) (*api.ServerInfo, error) {
	var out api.ServerInfo
	return &out, c.call(ctx, "GET", "/server", nil, &out)
}

// CreateToken makes a one-time enrollment token.
func (c *Client) CreateToken(ctx context.Context, req api.TokenRequest) (*api.TokenResponse, error) {
	var out api.TokenResponse
	return &out, c.call(ctx, "POST", "/tokens", req, &out)
}

// Clients lists the enrolled clients.
func (c *Client) Clients(ctx context.Context) ([]api.Client, error) {
	var out []api.Client
	return out, c.call(ctx, "GET", "/clients", nil, &out)
}

// Client is one enrolled client, with its agent's WAL spools.
func (c *Client) Client(ctx context.Context, name string) (*api.Client, error) {
	var out api.Client
	return &out, c.call(ctx, "GET", "/clients/"+url.PathEscape(name), nil, &out)
}

// RevokeClient revokes a client's certificate at once.
func (c *Client) RevokeClient(ctx context.Context, name string) (*api.Client, error) {
	var out api.Client
	return &out, c.call(ctx, "POST", "/clients/"+url.PathEscape(name)+"/revoke", struct{}{}, &out)
}

// Nodes lists the enrolled storage nodes.
func (c *Client) Nodes(ctx context.Context) ([]api.Node, error) {
	var out []api.Node
	return out, c.call(ctx, "GET", "/nodes", nil, &out)
}

// RevokeNode revokes a storage node at once: its tunnel is cut and refused
// from then on.
func (c *Client) RevokeNode(ctx context.Context, name string) (*api.Node, error) {
	var out api.Node
	return &out, c.call(ctx, "POST", "/nodes/"+url.PathEscape(name)+"/revoke", nil, &out)
}

// UpdateClient changes a client's settings.
func (c *Client) UpdateClient(ctx context.Context, name string, u api.ClientUpdate) (*api.Client, error) {
	var out api.Client
	return &out, c.call(ctx, "PATCH", "/clients/"+url.PathEscape(name), u, &out)
}

// Submit queues a job; a backup split into streams gives one job each.
func (c *Client) Submit(ctx context.Context, req api.JobRequest) ([]int64, error) {
	var out api.JobsSubmitted
	return out.Jobs, c.call(ctx, "POST", "/jobs", req, &out)
}

// Job returns a job and its figures.
func (c *Client) Job(ctx context.Context, id int64) (*api.Job, error) {
	var out api.Job
	return &out, c.call(ctx, "GET", "/jobs/"+strconv.FormatInt(id, 10), nil, &out)
}

// Cancel cancels a queued or running job.
func (c *Client) Cancel(ctx context.Context, id int64) (*api.Job, error) {
	var out api.Job
	return &out, c.call(ctx, "POST", "/jobs/"+strconv.FormatInt(id, 10)+"/cancel", struct{}{}, &out)
}

// PrunePlan says what a prune would expire and recycle now, changing
// nothing: the JSON of a prune job's result (docs/api.md), which the
// caller decodes.
func (c *Client) PrunePlan(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.call(ctx, "GET", "/prune", nil, &out)
}

// Follow calls fn with each event of a job until the job ends (the last
// event is job_ended, with the final figures) or fn returns an error. A
// stream cut by the network is reopened.
func (c *Client) Follow(ctx context.Context, id int64, fn func(api.Event) error) error {
	backoff := 250 * time.Millisecond
	for {
		ended, err := c.follow(ctx, id, fn)
		if ended || ctx.Err() != nil {
			return err
		}
		var ae *api.Error
		if errors.As(err, &ae) {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (c *Client) follow(ctx context.Context, id int64, fn func(api.Event) error) (bool, error) {
	req, err := c.NewRequest(ctx, "GET", "/jobs/"+strconv.FormatInt(id, 10)+"/events", nil)
	if err != nil {
		return true, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(line[len("data: "):]), &ev); err != nil {
			return true, fmt.Errorf("event stream: %w", err)
		}
		if err := fn(ev); err != nil {
			return true, err
		}
		if ev.Kind == api.EventJobEnded {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, io.ErrUnexpectedEOF
}

// Enroll sends an agent's enrollment request (no credentials but the token).
func (c *Client) Enroll(ctx context.Context, req api.EnrollRequest, out *api.EnrollResponse) error {
	return c.call(ctx, "POST", "/enroll", req, out)
}

// CheckHost connects to the server trusting only the CA with fingerprint
// fp, and checks that the server's certificate is valid for the host the
// address names: later calls verify it that way, so a login or enrollment
// that would only work once is refused up front.
func CheckHost(ctx context.Context, base, fp string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("server address %q: want https://HOST:PORT", base)
	}
	host := u.Hostname()
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(host, "443")
	}
	d := tls.Dialer{Config: pki.PinnedTLSConfig(fp, nil)}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", base, err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return fmt.Errorf("%s: the server showed no certificate", base)
	}
	if err := certs[0].VerifyHostname(host); err != nil {
		return fmt.Errorf("the server's certificate is not valid for %q (%v): use a name it has, or restart the server with --host %s", host, err, host)
	}
	return nil
}
