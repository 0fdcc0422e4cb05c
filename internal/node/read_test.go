package node

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/tape"
)

// TestReadTicket: the direct read path on the node alone. The server's end
// opens a read session over the tunnel for a saveset's parts; the agent
// the session names reads the bytes from the data port, byte-exact from
// any location. Another agent, a second use of the ticket, a cancelled
// ticket and the ticket of a revoked client are refused; a damaged block on the tape ends the read with the
// trailer naming the damage (api.CodeCorrupt and the tape), not as a
// clean end.
func TestReadTicket(t *testing.T) {
	ca, _, err := pki.LoadOrCreateCA(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{opts: Options{DataListen: "127.0.0.1:0"}, cert: certFor(t, ca, "sn1", []string{"127.0.0.1"}),
		caPEM: ca.CertPEM, spans: newSpans(""), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stop, err := n.listenData(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	homeDir := t.TempDir()
	srvEnd, nodeEnd := net.Pipe()
	libs := NewLibraries(homeDir)
	libs.spans = n.spans
	go func() { ServeConn(nodeEnd, libs.Handler()); libs.Close() }()
	cc, hc, err := NewClient(srvEnd)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := &Conn{Node: "sn1", HC: hc, DataURL: n.DataURL()}
	lib, err := c.CreateLibrary(library.Config{Name: "far", Slots: 2, Drives: 1, TapeSize: 16 << 20, BarcodePrefix: "SN"})
	if err != nil {
		t.Fatal(err)
	}

	// A saveset of two parts on one tape, written through the tunnel.
	drv, err := lib.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, bc, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var want []byte
	var parts []span.Part
	for i := range 2 {
		data := make([]byte, 300_000+i*1000)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		fw, err := dev.Append("saveset 7 data")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(data); err != nil {
			t.Fatal(err)
		}
		info, err := fw.Finish()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, span.Part{Barcode: bc, File: info.Number, Bytes: int64(len(data))})
		want = append(want, data...)
	}
	if err := drv.Release(); err != nil {
		t.Fatal(err)
	}

	agent := func(name string) *http.Client {
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, Certificates: []tls.Certificate{certFor(t, ca, name, nil)}}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	web1 := agent("web1")
	open := func(part int, off int64) string {
		t.Helper()
		o, err := c.OpenRead("far", ReadRequest{Agent: "web1", Saveset: 7, Parts: parts, Part: part, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		if o.DataURL != n.DataURL() {
			t.Fatalf("data URL %q, want %q", o.DataURL, n.DataURL())
		}
		return o.Ticket
	}
	// read returns the status, the body, and the trailer's error (if any).
	read := func(hc *http.Client, ticket string) (int, []byte, *api.Error) {
		t.Helper()
		resp, err := hc.Get(c.DataURL + api.Prefix + "/read/" + ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		var ae *api.Error
		if tr := resp.Trailer.Get(api.TrailerError); tr != "" {
			ae = &api.Error{}
			if err := json.Unmarshal([]byte(tr), ae); err != nil {
				t.Fatalf("trailer %q: %v", tr, err)
			}
		}
		return resp.StatusCode, b, ae
	}

	// From the start, and from inside the second part.
	tk := open(0, 0)
	if st, _, _ := read(agent("web2"), tk); st != http.StatusForbidden {
		t.Errorf("another agent's read: %d, want 403", st)
	}
	st, got, ae := read(web1, tk)
	if st != http.StatusOK || ae != nil || !bytes.Equal(got, want) {
		t.Fatalf("read from the start: %d, %d bytes (want %d), equal %v, trailer %+v", st, len(got), len(want), bytes.Equal(got, want), ae)
	}
	if n.DataSent() != int64(len(want)) {
		t.Errorf("data port sent %d bytes, want %d", n.DataSent(), len(want))
	}
	if st, _, _ := read(web1, tk); st != http.StatusForbidden {
		t.Errorf("the ticket used again: %d, want 403", st)
	}
	if st, got, ae := read(web1, open(1, 1234)); st != http.StatusOK || ae != nil || !bytes.Equal(got, want[parts[0].Bytes+1234:]) {
		t.Errorf("read from part 1 offset 1234: %d, %d bytes, trailer %+v", st, len(got), ae)
	}

	// A cancelled ticket is dead.
	tk = open(0, 0)
	if err := c.CancelRead(tk, "the job ended"); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := read(web1, tk); st != http.StatusForbidden {
		t.Errorf("a cancelled ticket: %d, want 403", st)
	}
	if err := c.CancelRead(tk, "again"); err != nil {
		t.Errorf("cancelling a dead ticket: %v", err)
	}
	// A revoked client's tickets die, another client's do not.
	tk = open(0, 0)
	other, err := c.OpenRead("far", ReadRequest{Agent: "web2", Saveset: 7, Parts: parts})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CancelAgent("web1"); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := read(web1, tk); st != http.StatusForbidden {
		t.Errorf("a revoked client's ticket: %d, want 403", st)
	}
	if st, got, _ := read(agent("web2"), other.Ticket); st != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("another client's ticket after web1 was revoked: %d, %d bytes", st, len(got))
	}

	// A damaged block in the second part: the bytes before it arrive, and
	// the read ends naming the damage on tape.
	local, err := library.Open(home.LibraryDir(homeDir, "far"))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := local.OpenTape(bc)
	if err != nil {
		t.Fatal(err)
	}
	path := tp.(tape.DataPather).DataPath(parts[1].File)
	tp.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], 200_000); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], 200_000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, got, ae = read(web1, open(0, 0))
	if st != http.StatusOK || ae == nil || ae.Code != api.CodeCorrupt || !strings.Contains(ae.Message, bc) {
		t.Fatalf("read over a damaged block: %d, trailer %+v; want code %s naming tape %s", st, ae, api.CodeCorrupt, bc)
	}
	if len(got) < int(parts[0].Bytes) || !bytes.Equal(got, want[:len(got)]) || len(got) >= len(want) {
		t.Errorf("read over a damaged block: %d bytes, want the good %d of the first part and no more than the good ones", len(got), parts[0].Bytes)
	}
}

// TestReadCancelCuts: the server's cancel cuts a read under way. The agent
// takes the headers and stops reading while the node is held by the
// unread bytes (12 MiB, more than the sockets buffer); after the cancel
// the rest of the answer is an error, never a clean end of fewer bytes.
func TestReadCancelCuts(t *testing.T) {
	ca, _, err := pki.LoadOrCreateCA(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{opts: Options{DataListen: "127.0.0.1:0"}, cert: certFor(t, ca, "sn1", []string{"127.0.0.1"}),
		caPEM: ca.CertPEM, spans: newSpans(""), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stop, err := n.listenData(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	srvEnd, nodeEnd := net.Pipe()
	libs := NewLibraries(t.TempDir())
	libs.spans = n.spans
	go func() { ServeConn(nodeEnd, libs.Handler()); libs.Close() }()
	cc, hc, err := NewClient(srvEnd)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := &Conn{Node: "sn1", HC: hc, DataURL: n.DataURL()}
	lib, err := c.CreateLibrary(library.Config{Name: "far", Slots: 1, Drives: 1, TapeSize: 64 << 20, BarcodePrefix: "SN"})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := lib.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, bc, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	const size = 12 << 20
	fw, err := dev.Append("saveset 8 data")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{8})
	chunk := make([]byte, 1<<20)
	for range size / len(chunk) {
		rng.Read(chunk)
		if _, err := fw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	info, err := fw.Finish()
	if err != nil {
		t.Fatal(err)
	}
	drv.Release()

	o, err := c.OpenRead("far", ReadRequest{Agent: "web1", Saveset: 8, Parts: []span.Part{{Barcode: bc, File: info.Number, Bytes: size}}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	hcl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool,
		Certificates: []tls.Certificate{certFor(t, ca, "web1", nil)}}}}
	resp, err := hcl.Get(o.DataURL + api.Prefix + "/read/" + o.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read: %d", resp.StatusCode)
	}
	if err := c.CancelRead(o.Ticket, "the job was cancelled"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err == nil && resp.Trailer.Get(api.TrailerError) == "" {
		t.Fatalf("a cancelled read ended cleanly after %d of %d bytes", len(got), size)
	}
	if len(got) >= size {
		t.Errorf("a cancelled read delivered all %d bytes", len(got))
	}
}
