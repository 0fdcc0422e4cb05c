package s3tape

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/build"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The tests run against a real S3-compatible server: versitygw over a
// folder, on 127.0.0.1, started once for the package (and again by the
// tests that kill it). scripts/test.sh installs it at a pinned version
// and sets KURA_VERSITYGW.

const (
	versitygwModule = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	testAccess      = "kura-test-access"
	testSecret      = "kura-test-SECRET-7f3a9c"
	testBucket      = "kura"
)

var (
	gwBin string  // the versitygw binary
	srv   *server // the package's server
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bin, err := findVersitygw()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL s3tape: %v\n", err)
		return 1
	}
	gwBin = bin
	dir, err := os.MkdirTemp("", "kura-s3tape-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err = startServer(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL s3tape: start versitygw: %v\n", err)
		return 1
	}
	defer srv.stop()
	return m.Run()
}

// findVersitygw looks in $KURA_VERSITYGW, then PATH, then $GOPATH/bin.
func findVersitygw() (string, error) {
	if p := os.Getenv("KURA_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("KURA_VERSITYGW=%s: %v; run ./scripts/test.sh, which installs %s", p, err, versitygwModule)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("versitygw (the S3 server these tests run against) is not installed: not in $KURA_VERSITYGW, PATH or %s; run ./scripts/test.sh, which installs %s (or go install it yourself)",
		filepath.Dir(p), versitygwModule)
}

// server is a versitygw process serving dir.
type server struct {
	dir  string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startServer(dir string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{dir: filepath.Join(dir, "gw"), addr: addr}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	if err := s.client().MakeBucket(context.Background(), testBucket, minio.MakeBucketOptions{}); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// client is a plain client of the server that retries (minio-go's bounded
// backoff, 10 attempts) until the port answers.
func (s *server) client() *minio.Client {
	c, err := minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, ""), MaxRetries: 10})
	if err != nil {
		panic(err) // only a malformed address fails here
	}
	return c
}

// start runs the server and returns once it answers requests.
func (s *server) start() error {
	cmd := exec.Command(gwBin, "--port", s.addr, "--access", testAccess, "--secret", testSecret, "posix", s.dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		var log []string
		for sc.Scan() {
			log = append(log, sc.Text())
			if !said && strings.Contains(sc.Text(), "listening on") {
				said = true
				ready <- true
			}
		}
		if !said {
			fmt.Fprintf(os.Stderr, "versitygw exited: %s\n", strings.Join(log, "\n"))
			ready <- false
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(s.done)
	}()
	if !<-ready {
		return errors.New("versitygw did not start")
	}
	// It says so just before it listens: the first request retries until
	// the port answers.
	if _, err := s.client().ListBuckets(context.Background()); err != nil {
		s.kill()
		return fmt.Errorf("versitygw does not answer: %w", err)
	}
	return nil
}

// kill kills the server at once (SIGKILL), as a crash would.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

func (s *server) stop() {
	if s.cmd != nil && s.cmd.ProcessState == nil {
		s.kill()
	}
}

// newServer starts a server of the test's own, stopped at its end.
func newServer(t *testing.T) *server {
	t.Helper()
	s, err := startServer(t.TempDir())
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

var barcodes struct {
	sync.Mutex
	n int
}

// newBarcode gives every test tape its own barcode in the shared bucket.
func newBarcode() string {
	barcodes.Lock()
	defer barcodes.Unlock()
	barcodes.n++
	return fmt.Sprintf("S%05d", barcodes.n)
}

// testConfig is a configuration for s with static test credentials, small
// chunks and few retries.
func testConfig(s *server) Config {
	return Config{
		Endpoint: s.addr, Insecure: true, Bucket: testBucket, Prefix: "tapes",
		ChunkSize: 1 << 20, Retries: 3,
		Credentials: credentials.NewStaticV4(testAccess, testSecret, ""),
	}
}

// objectFiles lists the files under the server's folder for bucket/prefix
// (what the store holds, seen from its disk).
func objectFiles(t *testing.T, s *server, rel string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(s.dir, rel)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(root, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}
