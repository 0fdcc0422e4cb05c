package s3tape

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/kura-backup/kura/internal/tape/s3tape/versitygw"
)

// The tests run against a real S3-compatible server: versitygw over a
// folder, on 127.0.0.1, started once for the package (and again by the
// tests that kill it). scripts/test.sh installs it at a pinned version
// and sets KURA_VERSITYGW.

const (
	testAccess = "kura-test-access"
	testSecret = "kura-test-SECRET-7f3a9c"
	testBucket = "kura"
)

var (
	gwBin string  // the versitygw binary
	srv   *server // the package's server
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bin, err := versitygw.Find()
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
	defer srv.Stop()
	return m.Run()
}

// server is a versitygw process serving its folder.
type server = versitygw.Server

// startServer starts a server over a folder of dir, with the test key
// pair and the bucket testBucket.
func startServer(dir string) (*server, error) {
	gw := filepath.Join(dir, "gw")
	if err := os.MkdirAll(gw, 0o700); err != nil {
		return nil, err
	}
	s, err := versitygw.Start(gwBin, gw, testAccess, testSecret)
	if err != nil {
		return nil, err
	}
	if err := s.Client().MakeBucket(context.Background(), testBucket, minio.MakeBucketOptions{}); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// newServer starts a server of the test's own, stopped at its end.
func newServer(t *testing.T) *server {
	t.Helper()
	s, err := startServer(t.TempDir())
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(s.Stop)
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
		Endpoint: s.Addr, Insecure: true, Bucket: testBucket, Prefix: "tapes",
		ChunkSize: 1 << 20, Retries: 3,
		Credentials: credentials.NewStaticV4(testAccess, testSecret, ""),
	}
}

// objectFiles lists the files under the server's folder for bucket/prefix
// (what the store holds, seen from its disk).
func objectFiles(t *testing.T, s *server, rel string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(s.Dir, rel)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(root, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}
