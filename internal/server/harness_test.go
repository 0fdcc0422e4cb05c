package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/console/browsertest"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/server"
)

// childHomeEnv makes the test binary a bare server on that home instead of
// running tests (see startChildServer): a server process the test can kill.
const childHomeEnv = "KURA_TEST_CHILD_SERVER_HOME"

func TestMain(m *testing.M) {
	if home := os.Getenv(childHomeEnv); home != "" {
		os.Exit(serveChild(home))
	}
	code := m.Run()
	browsertest.Close() // the one Chromium of this package's browser tests
	os.Exit(code)
}

// serveChild runs a server on home until the process is killed. Its first
// line on stdout is "listening ADDR".
func serveChild(home string) int {
	opts := fastOpts
	opts.Home, opts.Name = home, "test"
	if at := os.Getenv(childHoldEnv); at != "" {
		opts.Events = holdForever(at)
	}
	srv, err := server.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("listening %s\n", ln.Addr())
	if err := srv.Serve(context.Background(), ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChildServer runs a server on home in a child process; kill ends it
// the way a crash or kill -9 would.
// env adds variables to the child's environment (childHoldEnv).
func startChildServer(t *testing.T, home string, env ...string) (r *rig, kill func()) {
	t.Helper()
	lw := &logWriter{t: t, prefix: "child server: "}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childHomeEnv+"="+home), env...)
	cmd.Stderr = lw
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("child server: %q, %v", line, err)
	}
	tokText, err := os.ReadFile(filepath.Join(home, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := pki.ParseTokenKind(string(tokText), pki.KindAdmin)
	if err != nil {
		t.Fatal(err)
	}
	r = &rig{t: t, home: home, url: "https://" + addr, log: lw, addr: addr, stop: kill, out: br}
	if r.admin, err = apiclient.New(r.url, pki.PinnedTLSConfig(tok.CAFingerprint, nil), string(tokText)); err != nil {
		t.Fatal(err)
	}
	return r, kill
}

// enroll enrolls an agent with its own home through the server address url
// (the rig's own when "").
func (r *rig) enroll(name, url string) (home string) {
	t := r.t
	t.Helper()
	if url == "" {
		url = r.url
	}
	home = t.TempDir()
	tok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Enroll(t.Context(), home, url, tok.Token, name); err != nil {
		t.Fatal(err)
	}
	return home
}

// launchAgent runs the agent of home without waiting for it to connect;
// Run's error arrives on done.
func launchAgent(t *testing.T, home, name string) (stop func(), done <-chan error) {
	t.Helper()
	a, err := agent.Open(agent.Options{Home: home, Log: &logWriter{t: t, prefix: name + ": "},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, ProgressEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	ended := make(chan struct{})
	go func() { defer close(ended); errc <- a.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-ended }) }
	t.Cleanup(stop)
	return stop, errc
}

// agentAPI is a client with the agent's own identity (its mTLS certificate).
func agentAPI(t *testing.T, home, url string) *apiclient.Client {
	t.Helper()
	dir := agent.Dir(home)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cert, _, err := pki.LoadClientCertificate(read("agent.crt"), read("agent.key"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pki.ClientTLSConfig(read("ca.crt"), &cert)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, url, cfg, "")
}

func newClient(t *testing.T, url string, cfg *tls.Config, token string) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New(url, cfg, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// get sends GET path (without the /api/v1 prefix) and returns the error
// answer (nil for a 2xx).
func get(t *testing.T, c *apiclient.Client, path string) error {
	t.Helper()
	req, err := c.NewRequest(t.Context(), "GET", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

// wantCode checks that err is an API error with code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted; want refused with %q", what, code)
		return
	}
	if got := apiclient.Code(err); got != code {
		t.Errorf("%s: %v (code %q); want code %q", what, err, got, code)
		return
	}
	var ae *api.Error
	if errors.As(err, &ae) && strings.TrimSpace(ae.Message) == "" {
		t.Errorf("%s: refused with code %q but no message", what, code)
	}
}

// waitLog waits until the server log holds every one of subs.
func (r *rig) waitLog(subs ...string) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := r.log.String()
		missing := ""
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				missing = sub
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("the server log has no %q", missing)
			return
		}
		time.Sleep(10 * time.Millisecond) // polling the log, which is written after the answer
	}
}

// pollJob polls a job until cond holds, and returns it.
func (r *rig) pollJob(id int64, within time.Duration, what string, cond func(*api.Job) bool) *api.Job {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		j, err := r.admin.Job(r.t.Context(), id)
		if err == nil && cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			if err != nil {
				r.t.Fatalf("job %d: %v", id, err)
			}
			r.t.Fatalf("job %d never %s (state %s, reason %q, error %q)", id, what, j.State, j.Reason, j.Error)
		}
		time.Sleep(20 * time.Millisecond) // polling a status
	}
}

// waitProgress follows a job until the server has received some of its
// data from the agent.
func (r *rig) waitProgress(id int64) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 30*time.Second)
	defer cancel()
	errGot := errors.New("got progress")
	err := r.admin.Follow(ctx, id, func(ev api.Event) error {
		if ev.Kind == api.EventProgress && ev.Bytes > 0 {
			return errGot
		}
		if ev.Kind == api.EventJobEnded {
			return fmt.Errorf("job ended (%s) before any progress", ev.Message)
		}
		return nil
	})
	if !errors.Is(err, errGot) {
		r.t.Fatalf("job %d: waiting for progress: %v", id, err)
	}
}

// randomFiles writes n files of size random (incompressible) bytes.
func randomFiles(t *testing.T, dir string, n, size int, seed uint64) int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	for i := range n {
		for j := 0; j+8 <= len(b); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				b[j+k] = byte(v >> (8 * k))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%03d.bin", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return int64(n) * int64(size)
}

// proxy forwards TCP connections to a target; freeze stops every byte in
// both directions without closing anything (a dead network), cut closes
// every connection (a reset) and lets new ones through.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen chan struct{} // non-nil while frozen; closed to thaw
	conns  map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *proxy) url() string { return "https://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go p.pipe(up, c)
			p.pipe(c, up)
		}()
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.frozen
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close stops the proxy for good: its connections are cut and new ones
// are refused (the network is gone).
func (p *proxy) close() {
	p.ln.Close()
	p.cut()
}

func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}
