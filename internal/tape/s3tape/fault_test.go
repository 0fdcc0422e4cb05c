package s3tape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// faultTransport wraps the HTTP transport: it records every request and
// lets a test answer one itself (a 503) or act before it goes out (kill
// the server).
type faultTransport struct {
	base http.RoundTripper

	mu       sync.Mutex
	requests []string // "METHOD key?query range"
	hook     func(r *http.Request) *http.Response
}

func newFaultTransport() *faultTransport {
	return &faultTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
}

func (f *faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, fmt.Sprintf("%s %s?%s %s", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Range")))
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		if resp := hook(r); resp != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			resp.Request = r
			return resp, nil
		}
	}
	return f.base.RoundTrip(r)
}

func (f *faultTransport) setHook(h func(r *http.Request) *http.Response) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

// take returns the requests recorded since the last call.
func (f *faultTransport) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

// chunkGETs are the GETs of chunk objects among requests.
func chunkGETs(requests []string) []string {
	var out []string
	for _, r := range requests {
		if strings.HasPrefix(r, "GET ") && strings.Contains(r, ".data.") {
			out = append(out, r)
		}
	}
	return out
}

// unavailable is the answer of an overloaded S3 server.
func unavailable() *http.Response {
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`
	return &http.Response{
		Status: "503 Service Unavailable", StatusCode: http.StatusServiceUnavailable,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/xml"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
	}
}

func isChunkPut(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, ".data.")
}

// TestSeekReadsOnlyTheChunksItNeeds: a tape file of six 1 MiB chunks; a
// reader that seeks into the fourth fetches that chunk alone, by a ranged
// GET from the block it needs, and reading on fetches each later chunk
// once. Reading the whole file is one GET per chunk, not one per block.
func TestSeekReadsOnlyTheChunksItNeeds(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport = ft
	const bs = 64 << 10
	d := formatTape(t, cfg, 16<<20, bs)
	data := tapetest.Payload(11, 5<<20+1000)
	tapetest.WriteFile(t, d, "six chunks", data, 100000)
	keys, err := d.Keys(1)
	if err != nil || len(keys) != 6 {
		t.Fatalf("Keys(1) = %v, %v; want 6 chunks", keys, err)
	}

	r, err := d.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ft.take()
	off := int64(3<<20 + 512<<10 + 100) // in chunk 4, block 56
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10000)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, data[off:off+10000]) {
		t.Fatal("read after seek: wrong data")
	}
	gets := chunkGETs(ft.take())
	want := fmt.Sprintf("/%s/%s? bytes=%d-%d", testBucket, keys[3], 512<<10, 1<<20-1)
	if len(gets) != 1 || !strings.HasSuffix(gets[0], want) {
		t.Fatalf("seek into chunk 4 and read 10000 bytes made chunk GETs %q, want one ranged GET: %s", gets, want)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, data[off+10000:]) {
		t.Fatalf("read on to the end: %d bytes, %v", len(rest), err)
	}
	if gets := chunkGETs(ft.take()); len(gets) != 2 {
		t.Fatalf("reading on from chunk 4 to the end made chunk GETs %q, want chunks 5 and 6 once each", gets)
	}

	if got := tapetest.ReadFile(t, d, 1); !bytes.Equal(got, data) {
		t.Fatal("whole read differs")
	}
	if gets := chunkGETs(ft.take()); len(gets) != 6 {
		t.Fatalf("reading the whole file made %d chunk GETs, want 6 (one per chunk): %q", len(gets), gets)
	}
}

// TestMultipartChunks: chunks bigger than a part go up as multipart
// uploads (parts of 5 MiB and a short last one) and read back.
func TestMultipartChunks(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport = ft
	cfg.ChunkSize, cfg.PartSize = 12<<20, 5<<20
	d := formatTape(t, cfg, 64<<20, 256<<10)
	data := tapetest.Payload(12, 30<<20+7)
	tapetest.WriteFile(t, d, "multipart", data, 1<<20)
	parts := 0
	for _, r := range ft.take() {
		if strings.HasPrefix(r, "PUT ") && strings.Contains(r, "partNumber=") {
			parts++
		}
	}
	if parts != 8 { // 12 MiB = 5+5+2, twice; 6 MiB = 5+1
		t.Errorf("%d part uploads, want 8", parts)
	}
	if keys, _ := d.Keys(1); len(keys) != 3 {
		t.Errorf("chunks %v, want 3", keys)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d, 1), data) {
		t.Fatal("read back differs")
	}
}

// TestServerKilledMidUpload: the S3 server dies while a chunk's parts go
// up. The write fails with ErrUnavailable; after a restart on the same
// folder the earlier tape file reads back, the broken one is incomplete
// (not readable), and the next Append removes it and aborts the
// multipart upload it left.
func TestServerKilledMidUpload(t *testing.T) {
	s := newServer(t)
	ft := newFaultTransport()
	cfg := testConfig(s)
	cfg.Transport = ft
	cfg.ChunkSize, cfg.PartSize, cfg.Retries = 12<<20, 5<<20, 2
	d := formatTape(t, cfg, 64<<20, 256<<10)
	first := tapetest.Payload(13, 1<<20)
	tapetest.WriteFile(t, d, "before the crash", first, 0)

	killed := false
	ft.setHook(func(r *http.Request) *http.Response {
		if !killed && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "000002.data.000002") &&
			r.URL.Query().Get("partNumber") == "2" {
			killed = true
			s.Kill()
		}
		return nil
	})
	w, err := d.Append("crashes")
	if err != nil {
		t.Fatal(err)
	}
	chunk := tapetest.Payload(14, 1<<20)
	var werr error
	for i := 0; i < 30 && werr == nil; i++ {
		_, werr = w.Write(chunk)
	}
	if !killed {
		t.Fatal("the server was never killed")
	}
	if !errors.Is(werr, ErrUnavailable) || !strings.Contains(werr.Error(), s.Addr) {
		t.Fatalf("write with the server dead: %v; want ErrUnavailable naming %s", werr, s.Addr)
	}
	if _, err := w.Finish(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Finish after the failure: %v", err)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	ft.setHook(nil)
	// A new process, after the dead writer's lease ran out.
	cfg2 := cfg
	cfg2.Clock = func() time.Time { return time.Now().Add(DefaultLockLease + time.Minute) }
	d2, err := Open(cfg2, d.Barcode())
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	files, err := d2.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Status != tape.FileComplete || files[1].Status != tape.FileIncomplete || files[1].Bytes != 12<<20 {
		t.Fatalf("after the restart Files() = %+v; want file 1 complete, file 2 incomplete with its first 12 MiB chunk", files)
	}
	if _, err := d2.Open(2); !errors.Is(err, tape.ErrIncomplete) {
		t.Errorf("Open(2) = %v, want ErrIncomplete", err)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d2, 1), first) {
		t.Fatal("tape file 1 differs after the crash")
	}
	if n := incompleteUploads(t, d2); n != 1 {
		t.Errorf("%d unfinished multipart uploads after the crash, want 1 (the chunk being sent)", n)
	}

	second := tapetest.Payload(15, 3<<20)
	info := tapetest.WriteFile(t, d2, "after the crash", second, 0)
	if info.Number != 2 {
		t.Errorf("Append after the crash made tape file %d, want 2", info.Number)
	}
	if n := incompleteUploads(t, d2); n != 0 {
		t.Errorf("%d unfinished multipart uploads after the next Append, want 0", n)
	}
	if keys, _ := d2.Keys(2); len(keys) != 1 {
		t.Errorf("tape file 2 has chunks %v: the crashed file's chunk is still there", keys)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d2, 2), second) || !bytes.Equal(tapetest.ReadFile(t, d2, 1), first) {
		t.Fatal("tape files wrong after the next Append")
	}
}

func incompleteUploads(t *testing.T, d *Tape) int {
	t.Helper()
	r, err := d.s.core.ListMultipartUploads(context.Background(), d.s.cfg.Bucket, d.base, "", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(r.Uploads)
}

// TestRetries503: a store that answers 503 to a few requests is retried,
// with backoff, and the tape file is written whole.
func TestRetries503(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport, cfg.Retries = ft, 5
	d := formatTape(t, cfg, 8<<20, 4096)
	var mu sync.Mutex
	injected := 0
	ft.setHook(func(r *http.Request) *http.Response {
		mu.Lock()
		defer mu.Unlock()
		if isChunkPut(r) && injected < 4 {
			injected++
			return unavailable()
		}
		return nil
	})
	data := tapetest.Payload(16, 3<<20+5)
	tapetest.WriteFile(t, d, "through 503s", data, 0)
	if injected != 4 {
		t.Fatalf("%d 503s answered, want 4", injected)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d, 1), data) {
		t.Fatal("read back differs")
	}
}

// TestUnavailableFailsCleanly: a store that keeps answering 503 fails the
// write after the bounded retries with ErrUnavailable; the tape keeps its
// earlier tape file and nothing of the failed one.
func TestUnavailableFailsCleanly(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport, cfg.Retries = ft, 3
	d := formatTape(t, cfg, 8<<20, 4096)
	first := tapetest.Payload(17, 100000)
	tapetest.WriteFile(t, d, "kept", first, 0)
	w, err := d.Append("fails")
	if err != nil {
		t.Fatal(err)
	}
	fails := 0
	ft.setHook(func(r *http.Request) *http.Response {
		if isChunkPut(r) && strings.Contains(r.URL.Path, "000002.data.000002") {
			fails++
			return unavailable()
		}
		return nil
	})
	var werr error
	for i := 0; i < 10 && werr == nil; i++ {
		_, werr = w.Write(tapetest.Payload(18, 1<<20))
	}
	if !errors.Is(werr, ErrUnavailable) || !strings.Contains(werr.Error(), "SlowDown") {
		t.Fatalf("write against a store answering 503: %v; want ErrUnavailable with the server's code", werr)
	}
	if fails != 3 {
		t.Errorf("the failing PUT was tried %d times, want 3 (Retries)", fails)
	}
	if _, err := w.Finish(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Finish: %v", err)
	}
	ft.setHook(nil)
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || d.Used() != int64(len(first)) {
		t.Fatalf("after the failed write Files() = %+v, Used() = %d; want tape file 1 alone", files, d.Used())
	}
	if !bytes.Equal(tapetest.ReadFile(t, d, 1), first) {
		t.Fatal("tape file 1 differs")
	}
}

// TestNoSuchBucket: a bucket that does not exist is a clear error, and
// nothing is created.
func TestNoSuchBucket(t *testing.T) {
	cfg := testConfig(srv)
	cfg.Bucket = "no-such-bucket"
	_, err := Format(cfg, tape.Label{Barcode: newBarcode(), BlockSize: 4096, Capacity: 1 << 20})
	if !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), `"no-such-bucket"`) {
		t.Fatalf("Format in a missing bucket: %v; want ErrNoBucket naming it", err)
	}
	if _, err := Open(cfg, "S00001"); !errors.Is(err, ErrNoBucket) {
		t.Fatalf("Open in a missing bucket: %v", err)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir, "no-such-bucket")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the missing bucket was created: %v", err)
	}
}

// TestWrongCredentials: a wrong secret is ErrAccessDenied, the message
// holds no secret, and nothing is written.
func TestWrongCredentials(t *testing.T) {
	good := formatTape(t, testConfig(srv), 1<<20, 4096)
	tapetest.WriteFile(t, good, "kept", []byte("earlier backup"), 0)
	before := objectFiles(t, srv, testBucket)

	const wrong = "wrong-SECRET-0d15ea5e"
	cfg := testConfig(srv)
	cfg.Credentials = credentials.NewStaticV4(testAccess, wrong, "")
	bc := newBarcode()
	_, err := Format(cfg, tape.Label{Barcode: bc, BlockSize: 4096, Capacity: 1 << 20})
	if !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("Format with a wrong secret: %v; want ErrAccessDenied", err)
	}
	for _, secret := range []string{wrong, testSecret} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error shows a secret: %v", err)
		}
	}
	_, err = Open(cfg, good.Barcode())
	if !errors.Is(err, ErrAccessDenied) || strings.Contains(err.Error(), wrong) {
		t.Fatalf("Open with a wrong secret: %v", err)
	}
	cfg.Credentials = credentials.NewStaticV4("no-such-key", wrong, "")
	if _, err := Open(cfg, good.Barcode()); !errors.Is(err, ErrAccessDenied) || strings.Contains(err.Error(), wrong) {
		t.Fatalf("Open with an unknown access key: %v", err)
	}
	if after := objectFiles(t, srv, testBucket); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("objects changed with wrong credentials:\n%v\nwas\n%v", after, before)
	}
	if got := tapetest.ReadFile(t, good, 1); string(got) != "earlier backup" {
		t.Fatal("the earlier tape file changed")
	}
}

// clearAWSEnv empties every variable the credential providers read.
func clearAWSEnv(t *testing.T) {
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY",
		"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", t.TempDir())
}

// TestCredentialsFromEnvironment, ...FromFile, and none at all.
func TestCredentialsFromEnvironment(t *testing.T) {
	clearAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", testAccess)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
	cfg := testConfig(srv)
	cfg.Credentials = nil
	d := formatTape(t, cfg, 1<<20, 4096)
	tapetest.WriteFile(t, d, "env", []byte("x"), 0)
}

func TestCredentialsFromFile(t *testing.T) {
	clearAWSEnv(t)
	f := filepath.Join(t.TempDir(), "credentials")
	conf := fmt.Sprintf("[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[kura]\naws_access_key_id = %s\naws_secret_access_key = %s\n", testAccess, testSecret)
	if err := os.WriteFile(f, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", f)
	t.Setenv("AWS_PROFILE", "kura")
	cfg := testConfig(srv)
	cfg.Credentials = nil
	d := formatTape(t, cfg, 1<<20, 4096)
	tapetest.WriteFile(t, d, "file", []byte("x"), 0)

	t.Setenv("AWS_PROFILE", "")
	if _, err := Open(cfg, d.Barcode()); !errors.Is(err, ErrAccessDenied) || strings.Contains(err.Error(), "nothing") {
		t.Fatalf("the default profile's wrong key: %v; want ErrAccessDenied", err)
	}
}

func TestNoCredentials(t *testing.T) {
	clearAWSEnv(t)
	cfg := testConfig(srv)
	cfg.Credentials = nil
	if _, err := Open(cfg, "S00001"); !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("Open without credentials: %v; want ErrNoCredentials saying what to set", err)
	}
}

// TestWriterLock: one writer per tape across devices (processes); a lock
// whose lease ran out is taken over, and the writer that lost it stops
// without touching the tape file that is now the other's.
func TestWriterLock(t *testing.T) {
	cfg := testConfig(srv)
	cfg.ChunkSize = 64 << 10
	d1 := formatTape(t, cfg, 4<<20, 4096)
	d2, err := Open(cfg, d1.Barcode())
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	w1, err := d1.Append("one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Append("two"); !errors.Is(err, tape.ErrBusy) || !strings.Contains(err.Error(), "held by") {
		t.Fatalf("second writer on another device: %v; want ErrBusy naming the holder", err)
	}
	w1.Write([]byte("first"))
	if _, err := w1.Finish(); err != nil {
		t.Fatal(err)
	}
	w2, err := d2.Append("two")
	if err != nil {
		t.Fatalf("Append after the first writer finished: %v", err)
	}
	if _, err := w2.Write(tapetest.Payload(19, 10000)); err != nil {
		t.Fatal(err)
	}

	// w2 stalls past its lease; a third device takes the tape over.
	late := cfg
	late.Clock = func() time.Time { return time.Now().Add(DefaultLockLease + time.Minute) }
	d3, err := Open(late, d1.Barcode())
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	w3, err := d3.Append("three")
	if err != nil {
		t.Fatalf("Append over an expired lock: %v", err)
	}
	third := tapetest.Payload(20, 200000)
	if _, err := w3.Write(third); err != nil {
		t.Fatal(err)
	}
	// Its next chunk finds the lock lost (at this Write or, uploads being
	// asynchronous, at Finish), and it stores nothing more.
	if _, err := w2.Write(tapetest.Payload(21, 100000)); err != nil && !errors.Is(err, tape.ErrBusy) {
		t.Fatalf("the stalled writer's Write: %v", err)
	}
	if _, err := w2.Finish(); !errors.Is(err, tape.ErrBusy) {
		t.Fatalf("the stalled writer's Finish: %v", err)
	}
	if _, err := w3.Finish(); err != nil {
		t.Fatalf("the writer that took over: %v", err)
	}
	if got := tapetest.ReadFile(t, d3, 2); !bytes.Equal(got, third) {
		t.Fatal("tape file 2 is not the third writer's")
	}
	if files, err := d1.Files(); err != nil || len(files) != 2 {
		t.Fatalf("Files() = %+v, %v", files, err)
	}
}

// TestParseURL: the --s3 location, and no credentials in it.
func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Config
	}{
		{"https://s3.example.com/backups", Config{Endpoint: "s3.example.com", Bucket: "backups"}},
		{"http://127.0.0.1:9000/b/kura/vtl1/", Config{Endpoint: "127.0.0.1:9000", Insecure: true, Bucket: "b", Prefix: "kura/vtl1"}},
	} {
		got, err := ParseURL(c.in)
		if err != nil || got.String() != c.want.String() || got.Prefix != c.want.Prefix {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"s3.example.com/b", "ftp://h/b", "https://h/", "https:///b"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
	_, err := ParseURL("https://AKIA:topsecret@s3.example.com/b")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("a URL with credentials: %v", err)
	}
}

// TestFailedUploadIsAborted: a chunk going up as a multipart upload whose
// part keeps failing: the writer fails, and its Finish aborts the upload
// and removes the tape file's chunks at once (the store still answers).
func TestFailedUploadIsAborted(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport, cfg.Retries = ft, 2
	cfg.ChunkSize, cfg.PartSize = 12<<20, 5<<20
	d := formatTape(t, cfg, 64<<20, 64<<10)
	first := tapetest.Payload(22, 3<<20)
	tapetest.WriteFile(t, d, "kept", first, 0)
	ft.setHook(func(r *http.Request) *http.Response {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "000002.data.000002") && r.URL.Query().Get("partNumber") == "2" {
			return unavailable()
		}
		return nil
	})
	w, err := d.Append("fails in chunk 2")
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for i := 0; i < 40 && werr == nil; i++ {
		_, werr = w.Write(tapetest.Payload(23, 1<<20))
	}
	if !errors.Is(werr, ErrUnavailable) {
		t.Fatalf("write: %v, want ErrUnavailable", werr)
	}
	if n := incompleteUploads(t, d); n != 1 {
		t.Fatalf("%d unfinished uploads while the writer is open, want 1", n)
	}
	if _, err := w.Finish(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Finish: %v", err)
	}
	ft.setHook(nil)
	if n := incompleteUploads(t, d); n != 0 {
		t.Errorf("%d unfinished uploads after the failed Finish, want 0", n)
	}
	objs, err := d.s.list(context.Background(), d.base+"000002.")
	if err != nil || len(objs) != 0 {
		t.Errorf("objects of the failed tape file left: %v, %v", objs, err)
	}
	if files, err := d.Files(); err != nil || len(files) != 1 || d.Used() != int64(len(first)) {
		t.Errorf("Files() = %+v, %v, Used() = %d", files, err, d.Used())
	}
	if !bytes.Equal(tapetest.ReadFile(t, d, 1), first) {
		t.Fatal("tape file 1 differs")
	}
}

// TestFilesFetchesEachFilemarkOnce: listing a tape's files again costs one
// LIST, not a GET per filemark; a filemark that changed in the bucket is
// read again (and here found damaged).
func TestFilesFetchesEachFilemarkOnce(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport = ft
	d := formatTape(t, cfg, 1<<20, 4096)
	for i := range 5 {
		tapetest.WriteFile(t, d, fmt.Sprintf("file %d", i+1), tapetest.Payload(uint64(50+i), 5000), 0)
	}
	markGETs := func() int {
		n := 0
		for _, r := range ft.take() {
			if strings.HasPrefix(r, "GET ") && strings.Contains(r, ".mark?") {
				n++
			}
		}
		return n
	}
	first, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	markGETs()
	again, err := d.Files()
	if err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("Files() again = %v, %v", again, err)
	}
	if n := markGETs(); n != 0 {
		t.Errorf("Files() again fetched %d filemarks, want 0", n)
	}
	b, err := d.s.get(context.Background(), d.base+"000003.mark", tape.MaxFilemarkBytes)
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 1
	if _, err := d.s.put(context.Background(), d.base+"000003.mark", b, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	var ce *tape.CorruptError
	if _, err := d.Files(); !errors.As(err, &ce) || ce.File != 3 {
		t.Fatalf("Files() after filemark 3 changed: %v; want a CorruptError naming tape file 3", err)
	}
}

// TestLockAnswerLost: the store takes the lock (or its renewal) but the
// answer is lost (503 after the fact); the retry's conditional PUT fails
// against the writer's own lock, which stays its own.
func TestLockAnswerLost(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport, cfg.Retries, cfg.ChunkSize = ft, 3, 16<<10
	d := formatTape(t, cfg, 1<<20, 4096)
	for _, header := range []string{"If-None-Match", "If-Match"} {
		lost := 0
		ft.setHook(func(r *http.Request) *http.Response {
			if lost == 0 && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/lock") && r.Header.Get(header) != "" {
				lost++
				resp, err := ft.base.RoundTrip(r) // the store does it ...
				if err != nil {
					t.Errorf("lock PUT: %v", err)
					return nil
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return unavailable() // ... and the answer is lost
			}
			return nil
		})
		data := tapetest.Payload(70, 40000) // three chunks: the lock is renewed three times
		info := tapetest.WriteFile(t, d, header, data, 0)
		if lost != 1 {
			t.Fatalf("%s: %d answers lost, want 1", header, lost)
		}
		if !bytes.Equal(tapetest.ReadFile(t, d, info.Number), data) {
			t.Fatalf("%s: read back differs", header)
		}
	}
	ft.setHook(nil)
}

// TestCompletionAnswerLost: a multipart chunk's completion goes through
// but its answer is lost; the retry finds no upload (versitygw completes
// again, other stores answer NoSuchUpload, which the test plays), and the
// writer sees the chunk is there, whole, and goes on.
func TestCompletionAnswerLost(t *testing.T) {
	ft := newFaultTransport()
	cfg := testConfig(srv)
	cfg.Transport, cfg.Retries = ft, 3
	cfg.ChunkSize, cfg.PartSize = 6<<20, 5<<20
	d := formatTape(t, cfg, 64<<20, 64<<10)
	completions := 0
	ft.setHook(func(r *http.Request) *http.Response {
		if r.Method != http.MethodPost || r.URL.Query().Get("uploadId") == "" {
			return nil
		}
		completions++
		switch completions {
		case 1:
			resp, err := ft.base.RoundTrip(r) // the store completes ...
			if err != nil {
				t.Errorf("complete: %v", err)
				return nil
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return unavailable() // ... and the answer is lost
		case 2:
			body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`
			return &http.Response{
				Status: "404 Not Found", StatusCode: http.StatusNotFound, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
				ContentLength: int64(len(body)),
			}
		}
		return nil
	})
	data := tapetest.Payload(71, 13<<20)
	tapetest.WriteFile(t, d, "completion lost", data, 1<<20)
	ft.setHook(nil)
	if completions != 3 { // chunk 1: sent and retried; chunk 2 (chunk 3, 1 MiB, is one PUT)
		t.Fatalf("%d completions, want 3", completions)
	}
	if !bytes.Equal(tapetest.ReadFile(t, d, 1), data) {
		t.Fatal("read back differs")
	}
}

// TestCredentialsWithSessionToken: temporary credentials (a session
// token beside the keys, from AWS_SESSION_TOKEN or a profile's
// aws_session_token) go with every request as x-amz-security-token. The
// test server issues no session tokens and refuses every one: that is an
// ErrAccessDenied, a credentials problem, like a token that expired.
func TestCredentialsWithSessionToken(t *testing.T) {
	for _, from := range []string{"environment", "file"} {
		t.Run(from, func(t *testing.T) {
			clearAWSEnv(t)
			token := "kura-session-token-" + from
			if from == "environment" {
				t.Setenv("AWS_ACCESS_KEY_ID", testAccess)
				t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
				t.Setenv("AWS_SESSION_TOKEN", token)
			} else {
				f := filepath.Join(t.TempDir(), "credentials")
				conf := fmt.Sprintf("[temp]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n", testAccess, testSecret, token)
				if err := os.WriteFile(f, []byte(conf), 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AWS_SHARED_CREDENTIALS_FILE", f)
				t.Setenv("AWS_PROFILE", "temp")
			}
			ft := newFaultTransport()
			var sent, without atomic.Int64
			ft.setHook(func(r *http.Request) *http.Response {
				if r.Header.Get("X-Amz-Security-Token") == token {
					sent.Add(1)
				} else {
					without.Add(1)
				}
				return nil
			})
			cfg := testConfig(srv)
			cfg.Credentials, cfg.Transport = nil, ft
			_, err := Open(cfg, "S99999")
			if !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "InvalidToken") || strings.Contains(err.Error(), testSecret) {
				t.Fatalf("open with a session token the server refuses: %v; want ErrAccessDenied naming the token", err)
			}
			if sent.Load() == 0 || without.Load() != 0 {
				t.Errorf("%d requests carried the session token, %d did not", sent.Load(), without.Load())
			}
		})
	}
}
