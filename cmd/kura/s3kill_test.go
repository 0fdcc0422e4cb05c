package main

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/tape/s3tape/versitygw"
)

// killProxy forwards TCP connections to an S3 server and, once armed,
// kills the server when the clients have sent killAt bytes through it,
// cutting every connection: the server dies in the middle of an upload,
// at a point the test chooses, without timing.
type killProxy struct {
	l      net.Listener
	target string
	kill   func()
	sent   atomic.Int64
	killAt atomic.Int64 // 0: never
	once   sync.Once
	killed atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newKillProxy(t *testing.T, target string, kill func()) *killProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &killProxy{l: l, target: target, kill: kill}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	return p
}

func (p *killProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *killProxy) handle(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close() // the server is down: the client sees the connection end
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, u)
	p.mu.Unlock()
	go func() {
		io.Copy(c, u)
		c.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			total := p.sent.Add(int64(n))
			if at := p.killAt.Load(); at > 0 && total >= at {
				p.once.Do(func() {
					p.killAt.Store(0) // once
					p.kill()
					p.killed.Store(true)
					p.cut()
				})
				c.Close()
				u.Close()
				return
			}
			if _, werr := u.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			u.Close()
			return
		}
	}
}

// TestS3ServerKilledMidBackup: the S3 server dies while a backup uploads
// to it. The job fails with a message saying the object store is
// unavailable (exit 1); once the server is back, the saveset before it
// restores and verifies, and the only unfinished multipart uploads in the
// bucket are those of the tape the failed job was writing.
func TestS3ServerKilledMidBackup(t *testing.T) {
	t.Parallel()
	bin, err := versitygw.Find()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := versitygw.Start(bin, t.TempDir(), s3Access, s3Secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	if err := srv.Client().MakeBucket(ctx, "killed", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := newKillProxy(t, srv.Addr, srv.Kill)
	url := "http://" + proxy.l.Addr().String() + "/killed/lib"

	k := newKura(t)
	s3Env(k)
	// Chunks of 32 MiB go up as multipart uploads of 8 MiB parts.
	k.ok("vtl", "create", "cloud", "--s3", url, "--chunk-size", "32MiB", "--tape-size", "256MiB", "--slots", "2", "--barcode-prefix", "CLD")
	first := filepath.Join(k.dir, "first")
	writeTree(t, first, s3Tree())
	want := readTree(t, first)
	id := itoa64(k.backup(first, "--vtl", "cloud").SavesetID)

	second := filepath.Join(k.dir, "second")
	writeTree(t, second, map[string]string{"big.bin": pseudoRandom(20 << 20)})
	proxy.killAt.Store(proxy.sent.Load() + 12<<20) // in the second part of the first chunk
	r := k.expect(1, "backup", second, "--vtl", "cloud")
	if !proxy.killed.Load() {
		t.Fatal("the server was never killed")
	}
	if !strings.Contains(r.stderr, "object store unavailable") || !strings.Contains(r.stderr, proxy.l.Addr().String()) {
		t.Errorf("the failed backup should say the object store is unavailable, naming it:\n%s", r)
	}
	noSecret(t, r)

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(k.dir, "out")
	k.ok("restore", id, "--to", out)
	sameTree(t, want, readTree(t, restoredAt(out, first)))
	if r := k.ok("verify", id, "--level", "data"); !strings.Contains(r.stdout, "no problems") {
		t.Errorf("verify of the earlier saveset after the crash:\n%s", r)
	}

	// The crashed job's writer lock on its tape is still leased: the next
	// backup passes that tape over (not marked full) and writes on another.
	third := filepath.Join(k.dir, "third")
	writeTree(t, third, map[string]string{"c.txt": "after the crash"})
	f := k.backup(third, "--vtl", "cloud")
	if len(f.Tapes) != 1 || f.Tapes[0] != "CLD002" {
		t.Errorf("the backup after the crash wrote on %v, want CLD002 (CLD001's writer lock is the dead job's)", f.Tapes)
	}
	var tapes []tapeInfo
	k.json(0, &tapes, "tape", "list", "--json")
	for _, tp := range tapes {
		if tp.Barcode == "CLD001" && tp.State == "full" {
			t.Errorf("the tape passed over is marked full: %+v", tp)
		}
	}
	// The multipart upload the dead job left is under its tape only; the
	// next append to that tape, once the lock's lease runs out, aborts it.
	for u := range srv.Client().ListIncompleteUploads(ctx, "killed", "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		if !strings.HasPrefix(u.Key, "lib/CLD001/") {
			t.Errorf("unfinished upload %s: not the crashed job's tape's", u.Key)
		}
	}
}
