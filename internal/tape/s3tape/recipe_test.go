package s3tape

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// TestStockToolsRestore: a tape file holding a zstd-compressed tar comes
// back without Kura: its chunk keys (Keys) fetched in order with real
// curl's own S3 signing by the recipe Kura prints (stream.RecipeS3),
// concatenated, through `zstd -dc | tar -x`.
func TestStockToolsRestore(t *testing.T) {
	for _, c := range []string{"curl", "zstd", "tar", "sh"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is required for this test (scripts/test.sh installs zstd and tar): %v", c, err)
		}
	}
	files := map[string][]byte{"a.txt": []byte("hello from a bucket\n"), "big.bin": tapetest.Payload(60, 70000)}
	var tarZst bytes.Buffer
	zw, err := zstd.NewWriter(&tarZst)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, name := range []string{"a.txt", "big.bin"} {
		if err := tw.WriteHeader(&tar.Header{Name: "src/" + name, Mode: 0o644, Size: int64(len(files[name])), Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()

	cfg := testConfig(srv)
	cfg.ChunkSize = 16 << 10
	d := formatTape(t, cfg, 1<<20, 4096)
	tapetest.WriteFile(t, d, "saveset", tarZst.Bytes(), 0)
	keys, err := d.Keys(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 4 {
		t.Fatalf("%d chunks: want several", len(keys))
	}
	var urls []string
	for _, k := range keys {
		urls = append(urls, "http://"+srv.Addr+"/"+testBucket+"/"+k)
	}
	// The recipe Kura prints (kura saveset recipe): the credentials go to
	// curl on its standard input, never on its command line.
	script := stream.RecipeS3(urls, "us-east-1")
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+testAccess, "AWS_SECRET_ACCESS_KEY="+testSecret)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, "src", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s restored with curl, zstd and tar: %d bytes, %v", name, len(got), err)
		}
	}
}
