package apiclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countingConn counts the socket writes under a bulk connection.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// tlsPair starts a TLS server on loopback that sends everything it reads
// to got (or drops it, if !keep), and returns a bulk connection to it over
// a counting socket.
func tlsPair(t testing.TB, keep bool) (*bulkConn, *countingConn, <-chan []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bulk"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 16)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
		buf := make([]byte, 1<<20)
		for {
			n, err := tc.Read(buf)
			if n > 0 && keep {
				got <- bytes.Clone(buf[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	sock, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cc := &countingConn{Conn: sock}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	bc, err := newBulkConn(t.Context(), cc, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	return bc, cc, got
}

// receive reads n bytes from the server's side, failing the test if they
// do not all come within the test's deadline.
func receive(t testing.TB, got <-chan []byte, n int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []byte
	for len(out) < n {
		select {
		case b, ok := <-got:
			if !ok {
				t.Fatalf("the connection ended after %d of %d bytes", len(out), n)
			}
			out = append(out, b...)
		case <-ctx.Done():
			t.Fatalf("%d of %d bytes reached the server: the rest waits in a buffer", len(out), n)
		}
	}
	return out
}

// A large write goes to the socket in a few large writes rather than one
// per 16 KiB TLS record, arrives whole, and nothing stays buffered after
// Write returns (a small write reaches the server with nothing after it).
func TestBulkConnGathersRecords(t *testing.T) {
	bc, cc, got := tlsPair(t, true)
	data := make([]byte, 1<<20)
	rand.Read(data)
	before := cc.writes.Load()
	if n, err := bc.Write(data); err != nil || n != len(data) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	writes := cc.writes.Load() - before
	if max := int64(len(data)/bulkWriteSize + 2); writes > max {
		t.Errorf("1 MiB took %d socket writes; want at most %d (one per %d KiB, not one per 16 KiB record)", writes, max, bulkWriteSize>>10)
	}
	if !bytes.Equal(receive(t, got, len(data)), data) {
		t.Fatal("the server received other bytes than were written")
	}
	if _, err := bc.Write([]byte("end")); err != nil {
		t.Fatal(err)
	}
	if b := receive(t, got, 3); string(b) != "end" {
		t.Fatalf("server received %q after the small write", b)
	}
}

// failConn fails every write.
type failConn struct{ net.Conn }

var errCut = errors.New("connection cut")

func (failConn) Write([]byte) (int, error) { return 0, errCut }

// A failed socket write is reported by the TLS write whose records it
// carried, and by every write after it: no bytes are silently dropped.
func TestGatherConnWriteErrorSticks(t *testing.T) {
	c := &gatherConn{Conn: failConn{}}
	c.gather()
	if _, err := c.Write([]byte("record")); err != nil {
		t.Fatalf("a gathered write failed before reaching the socket: %v", err)
	}
	if err := c.flush(); !errors.Is(err, errCut) {
		t.Fatalf("flush = %v; want the socket's error", err)
	}
	if _, err := c.Write([]byte("more")); !errors.Is(err, errCut) {
		t.Fatalf("a write after the failure = %v; want the socket's error", err)
	}
	big := make([]byte, bulkWriteSize+1)
	if _, err := c.Write(big); !errors.Is(err, errCut) {
		t.Fatalf("a large write after the failure = %v; want the socket's error", err)
	}
}

// BenchmarkBulkTLS: 1 MiB writes over TLS on loopback, with and without
// gathering records, and the CPU both ends of the connection spend per
// GiB (user + system of this process, which holds both): the floor of
// the network path's cost on a machine, whatever Kura does around it.
//
//	go test -run X -bench BulkTLS -benchtime 2000x -count 5 ./internal/apiclient
func BenchmarkBulkTLS(b *testing.B) {
	for _, gather := range []bool{false, true} {
		name := map[bool]string{false: "records", true: "gathered"}[gather]
		b.Run(name, func(b *testing.B) {
			bc, _, _ := tlsPair(b, false)
			if !gather {
				bc.raw.mu.Lock()
				bc.raw.buf = nil
				bc.raw.mu.Unlock()
			}
			data := make([]byte, 1<<20)
			rand.Read(data)
			b.SetBytes(int64(len(data)))
			c0 := cpuSeconds()
			b.ResetTimer()
			for range b.N {
				if _, err := bc.Write(data); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((cpuSeconds()-c0)/(float64(b.N)/1024), "cpu-s/GiB")
		})
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// piecesBody is a request body that writes pieces of 64 KiB, each as one
// Write (as the agent's bandwidth limiter does), and then sends how many
// socket writes they took.
type piecesBody struct {
	pieces int
	cc     *countingConn
	took   chan int64
}

func (b *piecesBody) Read([]byte) (int, error) { return 0, errors.New("piecesBody: WriteTo only") }

func (b *piecesBody) WriteTo(w io.Writer) (int64, error) {
	before := b.cc.writes.Load()
	piece := make([]byte, 64<<10)
	var n int64
	for range b.pieces {
		m, err := w.Write(piece)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	b.took <- b.cc.writes.Load() - before
	return n, errPiecesDone // ends the request
}

var errPiecesDone = errors.New("piecesBody: done")

// A 64 KiB write of a bulk request body (chunked) goes to the socket as one
// write: chunk header, bytes and end in the transport's buffer at once, not
// cut into a buffer's worth, the rest and the end (three writes, each a
// TLS record batch and a packet).
func TestBulkChunkIsOneSocketWrite(t *testing.T) {
	bc, cc, _ := tlsPair(t, false)
	tr := bulkTransport(func(context.Context, string, string) (net.Conn, error) { return bc, nil })
	defer tr.CloseIdleConnections()
	const pieces = 8
	body := &piecesBody{pieces: pieces, cc: cc, took: make(chan int64, 1)}
	req, err := http.NewRequestWithContext(t.Context(), "POST", "https://127.0.0.1/data", body)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-done
	var took int64
	select {
	case took = <-body.took:
	default:
		t.Fatal("the request ended before its body was written")
	}
	if took != pieces {
		t.Errorf("%d writes of 64 KiB took %d socket writes, want one each", pieces, took)
	}
}
