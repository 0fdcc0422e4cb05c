package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/stream"
)

// certFor makes a key and a certificate of ca for name: a node's (with
// hosts) or an agent's.
func certFor(t *testing.T, ca *pki.CA, name string, hosts []string) tls.Certificate {
	t.Helper()
	keyPEM, csr, err := pki.NewClientKey(name)
	if err != nil {
		t.Fatal(err)
	}
	var certPEM []byte
	if hosts != nil {
		certPEM, _, err = ca.SignNode(csr, name, hosts, time.Hour)
	} else {
		certPEM, _, err = ca.SignClient(csr, name, time.Hour)
	}
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := pki.LoadClientCertificate(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestSpanSession: the direct data path on the node alone. The server's
// end opens a span session on a drive over the tunnel; an agent with a
// certificate of the same CA, named as the session says, streams frames to
// the data port; the node writes them as a tape file and reports where they
// went. Another agent, a second use of the ticket, a cancelled session and
// a damaged frame are refused.
func TestSpanSession(t *testing.T) {
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
	lib, err := c.CreateLibrary(library.Config{Name: "far", Slots: 2, Drives: 1, TapeSize: 16 << 20, BarcodePrefix: "SN"})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := lib.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Release()
	dev, bc, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	conn, h, ok := SpanOn(dev)
	if !ok || conn != c {
		t.Fatal("SpanOn: the node's device has no data port")
	}

	agent := func(name string) *http.Client {
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, Certificates: []tls.Certificate{certFor(t, ca, name, nil)}}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(bytes.Repeat([]byte("a frame of the saveset stream "), 2000), nil)
	enc.Close()
	send := func(hc *http.Client, ticket string, frames ...[]byte) (*http.Response, error) {
		var body bytes.Buffer
		for _, f := range frames {
			api.WriteMsg(&body, api.MsgFrame, f)
		}
		end, _ := json.Marshal(api.BackupEnd{Files: 1, Entries: 1})
		api.WriteMsg(&body, api.MsgEnd, end)
		return hc.Post(c.DataURL+api.Prefix+"/span/"+ticket, "application/octet-stream", &body)
	}
	status := func(resp *http.Response, err error) int {
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}

	opened, err := c.OpenSpan(h, SpanRequest{Agent: "web1", Label: &stream.Label{Format: "kura-saveset", Version: 1, SavesetID: 1},
		Tag: "saveset 1 data"})
	if err != nil {
		t.Fatal(err)
	}
	if got := status(send(agent("web2"), opened.Ticket, frame)); got != http.StatusForbidden {
		t.Errorf("another agent's stream: %d, want 403", got)
	}
	results := make(chan *SpanResult, 1)
	go func() {
		res, err := c.SpanEvents(context.Background(), opened.Ticket, func(json.RawMessage) {}, func(json.RawMessage) {})
		if err != nil {
			t.Error(err)
		}
		results <- res
	}()
	answer := make(chan int, 1)
	go func() { answer <- status(send(agent("web1"), opened.Ticket, frame, frame)) }()
	res := <-results
	if res == nil || res.Error != "" || len(res.Frames) != 2 || len(res.Parts) != 1 || len(res.Tapes) != 1 || res.Tapes[0] != bc {
		t.Fatalf("span result %+v; want 2 frames in 1 part on %s", res, bc)
	}
	if err := c.CloseSpan(opened.Ticket, api.BackupClose{}); err != nil {
		t.Fatal(err)
	}
	if got := <-answer; got != http.StatusOK {
		t.Errorf("the agent's answer: %d, want 200", got)
	}
	files, err := dev.Files()
	if err != nil || len(files) != 1 || files[0].Bytes != res.MediaBytes || !strings.HasPrefix(files[0].Tag, "saveset 1 data") {
		t.Errorf("tape files after the stream: %+v, %v; want one of %d bytes", files, err, res.MediaBytes)
	}
	if n.DataReceived() != int64(2*len(frame)) {
		t.Errorf("data port received %d frame bytes, want %d", n.DataReceived(), 2*len(frame))
	}
	if got := status(send(agent("web1"), opened.Ticket, frame)); got != http.StatusForbidden {
		t.Errorf("the ticket used again: %d, want 403", got)
	}

	// A cancelled session's ticket is dead.
	opened, err = c.OpenSpan(h, SpanRequest{Agent: "web1", Tag: "saveset 2 data"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CancelSpan(opened.Ticket, "test"); err != nil {
		t.Fatal(err)
	}
	if got := status(send(agent("web1"), opened.Ticket, frame)); got != http.StatusForbidden {
		t.Errorf("a cancelled session's ticket: %d, want 403", got)
	}

	// A damaged frame fails the stream; nothing of it is kept.
	opened, err = c.OpenSpan(h, SpanRequest{Agent: "web1", Tag: "saveset 3 data"})
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(frame)
	bad[len(bad)-1] ^= 0xff
	go func() {
		res, _ := c.SpanEvents(context.Background(), opened.Ticket, func(json.RawMessage) {}, func(json.RawMessage) {})
		results <- res
	}()
	if got := status(send(agent("web1"), opened.Ticket, bad)); got != http.StatusBadGateway {
		t.Errorf("a damaged frame: %d, want 502", got)
	}
	if res := <-results; res == nil || !strings.Contains(res.Error, "damaged") {
		t.Errorf("damaged frame's result: %+v", res)
	}
	if files, err := dev.Files(); err != nil || len(files) != 1 {
		t.Errorf("after the damaged stream: %+v, %v; want only the first file", files, err)
	}
}
