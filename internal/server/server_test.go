package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/server"
)

// logWriter sends a component's log to the test log.
type logWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	buf    bytes.Buffer
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.t.Logf("%s%s", w.prefix, bytes.TrimRight(p, "\n"))
	return len(p), nil
}

func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// rig is a server on 127.0.0.1 with its admin client.
type rig struct {
	t     testing.TB
	home  string
	srv   *server.Server
	url   string
	admin *apiclient.Client
	log   *logWriter
	stop  func()
	addr  string
	out   *bufio.Reader // a child server's stdout, after its "listening" line
}

// fastOpts are short timeouts for tests. The scheduler is off: its daily
// prune and catalog backup at start would add a job and take a drive and a
// tape behind the test's back (schedule_test.go drives it with Tick).
var fastOpts = server.Options{PollTimeout: time.Second, IdleTimeout: 3 * time.Second, StartTimeout: 10 * time.Second,
	SchedulerEvery: -1}

func startServer(t testing.TB, home, addr string) *rig {
	t.Helper()
	return startServerWith(t, home, addr, fastOpts)
}

// startServerWith starts a server with opts (Home, Log and Name are set here).
func startServerWith(t testing.TB, home, addr string, opts server.Options) *rig {
	t.Helper()
	lw := &logWriter{t: t, prefix: "server: "}
	opts.Home, opts.Log, opts.Name = home, lw, "test"
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	r := &rig{t: t, home: home, srv: srv, url: "https://" + ln.Addr().String(), log: lw, addr: ln.Addr().String()}
	tok, err := os.ReadFile(srv.AdminTokenPath())
	if err != nil {
		t.Fatal(err)
	}
	r.admin, err = apiclient.New(r.url, pki.PinnedTLSConfig(srv.CAFingerprint(), nil), string(tok))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		srv.Close()
		r.admin.Close()
	}
	t.Cleanup(r.stop)
	return r
}

// runAgent enrolls an agent with its own home and runs it until the test ends.
func (r *rig) runAgent(name string) (home string, stop func()) {
	t := r.t
	t.Helper()
	home = t.TempDir()
	tok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Enroll(t.Context(), home, r.url, tok.Token, name); err != nil {
		t.Fatal(err)
	}
	return home, r.startAgent(home, name)
}

func (r *rig) startAgent(home, name string) (stop func()) {
	t := r.t
	a, err := agent.Open(agent.Options{Home: home, Log: &logWriter{t: t, prefix: name + ": "},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, ProgressEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	r.waitOnline(name, true)
	once := sync.Once{}
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitOnline waits until the server sees the agent connected (or not).
func (r *rig) waitOnline(name string, want bool) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cs, err := r.admin.Clients(r.t.Context())
		if err == nil {
			for _, c := range cs {
				if c.Name == name && c.Connected == want {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // polling a status; not synchronisation of our own work
	}
	r.t.Fatalf("agent %s never became connected=%v", name, want)
}

// wait follows a job to its end and returns it.
func (r *rig) wait(id int64) *api.Job {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 60*time.Second)
	defer cancel()
	if err := r.admin.Follow(ctx, id, func(api.Event) error { return nil }); err != nil {
		r.t.Fatalf("following job %d: %v", id, err)
	}
	j, err := r.admin.Job(r.t.Context(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

func (r *rig) submit(req api.JobRequest) []int64 {
	r.t.Helper()
	ids, err := r.admin.Submit(r.t.Context(), req)
	if err != nil {
		r.t.Fatalf("submit %+v: %v", req, err)
	}
	return ids
}

// makeTree writes a small tree of files: text that compresses, and random
// bytes that do not.
func makeTree(t *testing.T, dir string, files int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%4))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		var b []byte
		if i%3 == 0 {
			b = make([]byte, 20_000+rng.IntN(200_000))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		} else {
			b = []byte(strings.Repeat(fmt.Sprintf("line %d of file %d, seed %d\n", i, i, seed), 200+rng.IntN(2000)))
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.dat", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// treeSum hashes every regular file's path (relative to root) and content.
func treeSum(t testing.TB, root string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out[rel] = sha256.Sum256(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t testing.TB, want, got string) {
	t.Helper()
	w, g := treeSum(t, want), treeSum(t, got)
	if len(w) == 0 {
		t.Fatalf("no files under %s", want)
	}
	for p, h := range w {
		if gh, ok := g[p]; !ok {
			t.Errorf("%s: missing after restore", p)
		} else if gh != h {
			t.Errorf("%s: content differs after restore", p)
		}
	}
	for p := range g {
		if _, ok := w[p]; !ok {
			t.Errorf("%s: restored but was never backed up", p)
		}
	}
}

var _ = io.EOF

// TestServesOpenAPI: GET /api/v1/openapi.json answers the document, without
// credentials.
func TestServesOpenAPI(t *testing.T) {
	r := startServer(t, t.TempDir(), "")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: pki.PinnedTLSConfig(r.srv.CAFingerprint(), nil)}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(r.url + api.Prefix + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET openapi.json: %s, %q: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/jobs"]["post"] == nil {
		t.Errorf("the document served is not the API's: openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
	if !bytes.Equal(body, api.OpenAPI) {
		t.Errorf("the document served differs from docs/openapi.json")
	}
}
