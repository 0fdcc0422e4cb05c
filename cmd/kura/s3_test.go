package main

// The object-storage library end to end: the CLI against a real
// S3-compatible server (versitygw over a temporary folder, on 127.0.0.1),
// started once for the package and stopped by TestMain.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/bench"
	"github.com/kura-backup/kura/internal/tape/s3tape/versitygw"
)

const (
	s3Access = "kura-cli-access"
	s3Secret = "kura-cli-SECRET-c0ffee42" // never to be seen in any output or file
)

// s3gw is the package's S3 server, started by the first test that needs it.
var s3gw struct {
	once sync.Once
	err  error
	srv  *versitygw.Server
	n    int // buckets made
	mu   sync.Mutex
}

func startS3() error {
	bin, err := versitygw.Find()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kura-cli-s3-")
	if err != nil {
		return err
	}
	s3gw.srv, err = versitygw.Start(bin, dir, s3Access, s3Secret)
	if err != nil {
		os.RemoveAll(dir)
	}
	return err
}

// stopS3 stops the server if a test started it (TestMain, at the end).
func stopS3() {
	if s3gw.srv != nil {
		s3gw.srv.Stop()
		os.RemoveAll(s3gw.srv.Dir)
	}
}

func s3Client() *minio.Client { return s3gw.srv.Client() }

// s3Bucket starts the server if needed and makes a bucket of the test's
// own; it returns the library URL http://ADDR/BUCKET/PREFIX.
func s3Bucket(t *testing.T, prefix string) (url, bucket string) {
	t.Helper()
	s3gw.once.Do(func() { s3gw.err = startS3() })
	if s3gw.err != nil {
		t.Fatalf("start the S3 server: %v", s3gw.err)
	}
	s3gw.mu.Lock()
	s3gw.n++
	bucket = fmt.Sprintf("kura-cli-%d", s3gw.n)
	s3gw.mu.Unlock()
	if err := s3Client().MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket %s: %v", bucket, err)
	}
	return "http://" + s3gw.srv.Addr + "/" + bucket + "/" + prefix, bucket
}

// s3Env gives a runner the server's credentials, in the environment.
func s3Env(k *kura) {
	k.env = append(k.env, "AWS_ACCESS_KEY_ID="+s3Access, "AWS_SECRET_ACCESS_KEY="+s3Secret,
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(k.dir, "no-such-credentials"), "AWS_PROFILE=")
}

// s3Objects lists the keys under prefix in bucket.
func s3Objects(t *testing.T, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for o := range s3Client().ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list %s/%s: %v", bucket, prefix, o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// noSecretUnder fails if the secret key is in any file under root.
func noSecretUnder(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s3Secret) {
			t.Errorf("%s holds the secret key", p)
		}
		return nil
	})
}

// s3Tree is sample data big enough to span several 64 KiB chunk objects.
func s3Tree() map[string]string {
	files, _ := sampleTree()
	files["big/random.bin"] = pseudoRandom(300_000)
	return files
}

// noSecret fails if r printed the secret key.
func noSecret(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, s3Secret) {
		t.Errorf("the secret key is in the output of:\n%s", r)
	}
}

// TestS3LibraryBackupRestoreVerify: `kura vtl create --s3` refuses a
// missing or wrong credential and a missing bucket with a clear message,
// making nothing; then a library on the bucket takes a backup as chunk
// objects, restores it whole and one file alone, and verifies at media,
// data and source levels — and the secret key is in no output and no file.
func TestS3LibraryBackupRestoreVerify(t *testing.T) {
	t.Parallel()
	url, bucket := s3Bucket(t, "site/lib")
	k := newKura(t)
	create := []string{"vtl", "create", "cloud", "--s3", url, "--chunk-size", "64KiB", "--block-size", "16KiB",
		"--buffer", "64KiB", "--tape-size", "64MiB", "--slots", "2", "--barcode-prefix", "CLD"}

	// No credentials: the message names what to set; nothing is made.
	k.env = []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(k.dir, "none"), "AWS_PROFILE="}
	r := k.expect(exitUsage, create...)
	if !strings.Contains(r.stderr, "AWS_ACCESS_KEY_ID") || !strings.Contains(r.stderr, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("create without credentials should name what to set:\n%s", r)
	}
	// A wrong secret: access denied, and neither secret is shown.
	k.env = []string{"AWS_ACCESS_KEY_ID=" + s3Access, "AWS_SECRET_ACCESS_KEY=wrong-" + s3Secret, "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(k.dir, "none")}
	r = k.expect(exitUsage, create...)
	if !strings.Contains(r.stderr, "access denied") {
		t.Errorf("create with a wrong secret should say access was denied:\n%s", r)
	}
	noSecret(t, r)
	// Credentials in the URL are refused, not stored.
	s3Env(k)
	withUser := strings.Replace(url, "http://", "http://"+s3Access+":"+s3Secret+"@", 1)
	r = k.expect(exitUsage, "vtl", "create", "cloud", "--s3", withUser)
	if !strings.Contains(r.stderr, "credentials do not belong in the URL") {
		t.Errorf("create with credentials in the URL:\n%s", r)
	}
	noSecret(t, r)
	// A bucket that does not exist.
	r = k.expect(exitUsage, "vtl", "create", "cloud", "--s3", strings.Replace(url, bucket, "no-such-bucket", 1))
	if !strings.Contains(r.stderr, "bucket does not exist") {
		t.Errorf("create on a missing bucket:\n%s", r)
	}
	if r := k.ok("vtl", "list"); strings.Contains(r.stdout, "cloud") {
		t.Fatalf("a refused create left a library:\n%s", r)
	}
	if keys := s3Objects(t, bucket, ""); len(keys) != 0 {
		t.Fatalf("a refused create wrote %v", keys)
	}

	r = k.ok(create...)
	if !strings.Contains(r.stdout, "Its tapes are kept on s3 "+url) {
		t.Errorf("vtl create --s3 should say where the tapes are:\n%s", r)
	}
	for _, key := range []string{"site/lib/CLD001/label", "site/lib/CLD001/label.copy", "site/lib/CLD002/label"} {
		if !contains(s3Objects(t, bucket, "site/lib/"), key) {
			t.Errorf("no object %s after create: %v", key, s3Objects(t, bucket, ""))
		}
	}

	src := filepath.Join(k.dir, "src")
	files := s3Tree()
	writeTree(t, src, files)
	want := readTree(t, src)
	f := k.backup(src, "--vtl", "cloud")
	if len(f.Tapes) != 1 || !strings.HasPrefix(f.Tapes[0], "CLD") {
		t.Fatalf("backup to the S3 library: tapes %v", f.Tapes)
	}
	chunks := 0
	for _, key := range s3Objects(t, bucket, "site/lib/"+f.Tapes[0]+"/") {
		if strings.Contains(key, ".data.") {
			chunks++
		}
	}
	if chunks < 4 {
		t.Errorf("the saveset's tape files are %d chunk objects: want several 64 KiB chunks", chunks)
	}
	id := itoa64(f.SavesetID)

	out := filepath.Join(k.dir, "out")
	k.ok("restore", id, "--to", out)
	sameTree(t, want, readTree(t, restoredAt(out, src)))
	one := filepath.Join(k.dir, "one")
	rel := strings.TrimPrefix(filepath.Join(src, "sub", "deeper", "a.txt"), "/")
	k.ok("restore", id, "--to", one, "--include", rel)
	got, nfiles := readTree(t, one), 0
	for p := range got {
		if !strings.HasSuffix(p, "/") {
			nfiles++
		}
	}
	if nfiles != 1 || got[rel] != "alpha\n" {
		t.Errorf("restore of one file from the S3 library: %v", got)
	}
	for _, level := range []string{"media", "data", "source"} {
		if r := k.ok("verify", id, "--level", level); !strings.Contains(r.stdout, "no problems") {
			t.Errorf("verify --level %s on the S3 library:\n%s", level, r)
		}
	}
	// The stock-tool recipe: the chunk objects fetched in order with curl
	// (its own S3 signing), through zstd and tar, without Kura.
	for _, c := range []string{"curl", "zstd", "tar", "sh"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is required for the recipe (scripts/test.sh installs it): %v", c, err)
		}
	}
	r = k.ok("saveset", "recipe", id)
	noSecret(t, r)
	if !strings.Contains(r.stdout, "curl") || !strings.Contains(r.stdout, url+"/"+f.Tapes[0]+"/000001.data.000001") {
		t.Fatalf("the recipe of a saveset in the bucket should fetch its chunk objects with curl:\n%s", r)
	}
	stock := t.TempDir()
	sh := exec.Command("sh", "-c", r.stdout)
	sh.Dir = stock
	sh.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3Access, "AWS_SECRET_ACCESS_KEY="+s3Secret)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the recipe failed: %v\n%s\n%s", err, r.stdout, out)
	}
	sameTree(t, want, readTree(t, filepath.Join(stock, strings.TrimPrefix(src, "/"))))

	var libs []struct {
		Name   string `json:"name"`
		Config struct {
			Media string `json:"media"`
		} `json:"config"`
	}
	k.json(0, &libs, "vtl", "list", "--json")
	for _, l := range libs {
		if l.Name == "cloud" && l.Config.Media != "s3 "+url {
			t.Errorf("vtl list --json: media %q, want %q", l.Config.Media, "s3 "+url)
		}
	}
	noSecretUnder(t, k.dir)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// s3Create creates library cloud on url with small chunks and blocks.
func s3Create(k *kura, url string) result {
	k.t.Helper()
	return k.ok("vtl", "create", "cloud", "--s3", url, "--chunk-size", "64KiB", "--block-size", "16KiB",
		"--buffer", "64KiB", "--tape-size", "64MiB", "--slots", "4", "--barcode-prefix", "CLD")
}

// labelOnly reports whether the tape under base holds its label and
// nothing else (a recycled tape).
func labelOnly(t *testing.T, bucket, base string) bool {
	t.Helper()
	for _, k := range s3Objects(t, bucket, base) {
		if name := strings.TrimPrefix(k, base); name != "label" && name != "label.copy" {
			return false
		}
	}
	return true
}

// TestS3LibraryCopyPruneCatalogScan: the offsite copy from a folder library
// to the bucket and back, each restorable with the other tape exported;
// prune recycles a tape in the bucket (its objects erased, a new label);
// the catalog backup on the bucket and `kura tape scan` of its tapes bring
// everything back after the home is lost, from the bucket alone.
func TestS3LibraryCopyPruneCatalogScan(t *testing.T) {
	t.Parallel()
	url, bucket := s3Bucket(t, "lib")
	k := newKura(t)
	s3Env(k)
	s3Create(k, url)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, s3Tree())
	want := readTree(t, src)
	restores := func(id int64, what string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out")
		if r := k.run("restore", itoa64(id), "--to", out); r.code != 0 {
			t.Fatalf("restore %s:\n%s", what, r)
		}
		sameTree(t, want, readTree(t, restoredAt(out, src)))
	}

	// Folder → bucket: the copy restores with the folder tape exported.
	local := k.backup(src)
	var c figures
	k.json(0, &c, "copy", itoa64(local.SavesetID), "--to-vtl", "cloud", "--json")
	if len(c.Tapes) != 1 || !strings.HasPrefix(c.Tapes[0], "CLD") {
		t.Fatalf("copy to the S3 library: tapes %v", c.Tapes)
	}
	k.ok("tape", "export", local.Tapes[0])
	restores(local.SavesetID, "from the copy in the bucket")
	if r := k.ok("verify", itoa64(local.SavesetID), "--copy", "1"); !strings.Contains(r.stdout, "no problems") {
		t.Errorf("verify --copy 1 in the bucket:\n%s", r)
	}
	k.ok("tape", "import", local.Tapes[0])

	// Bucket → folder.
	cloud := k.backup(src, "--vtl", "cloud")
	k.ok("vtl", "create", "back", "--tape-size", "64MiB", "--slots", "2")
	k.ok("copy", itoa64(cloud.SavesetID), "--to-vtl", "back")
	k.ok("tape", "export", cloud.Tapes[0])
	restores(cloud.SavesetID, "from the folder copy of a saveset in the bucket")
	k.ok("tape", "import", cloud.Tapes[0])

	// Prune recycles a tape of the bucket: a policy keeping one
	// generation, its first run on tape A, the second (A exported) on B.
	k.ok("selection", "create", "docs", src)
	k.ok("policy", "create", "p", "--selection", "docs", "--full", "0 1 * * 0", "--keep-generations", "1", "--vtl", "cloud")
	var p1, p2 figures
	k.json(0, &p1, "policy", "run", "p", "--json")
	k.ok("tape", "export", p1.Tapes[0])
	k.json(0, &p2, "policy", "run", "p", "--json")
	k.ok("tape", "import", p1.Tapes[0])
	if p1.Tapes[0] == p2.Tapes[0] || labelOnly(t, bucket, "lib/"+p1.Tapes[0]+"/") {
		t.Fatalf("policy runs on tapes %v then %v", p1.Tapes, p2.Tapes)
	}
	var pr struct {
		Expired  []int64  `json:"expired"`
		Recycled []string `json:"recycled"`
	}
	k.json(0, &pr, "prune", "--json")
	if !contains(pr.Recycled, p1.Tapes[0]) {
		t.Fatalf("prune recycled %v, want %s", pr.Recycled, p1.Tapes[0])
	}
	if !labelOnly(t, bucket, "lib/"+p1.Tapes[0]+"/") {
		t.Errorf("recycled tape %s still holds %v", p1.Tapes[0], s3Objects(t, bucket, "lib/"+p1.Tapes[0]+"/"))
	}
	restores(p2.SavesetID, "the generation kept")

	// The catalog goes to the bucket too.
	var cb catalogBackup
	k.json(0, &cb, "catalog", "backup", "--vtl", "cloud", "--json")
	if !strings.HasPrefix(cb.Barcode, "CLD") {
		t.Fatalf("catalog backup to the S3 library: %+v", cb)
	}

	// The home is lost (catalog, indexes, the library folder): the library
	// created again over the bucket takes its tapes back, and the catalog
	// backup in the bucket brings every saveset back.
	if err := os.RemoveAll(k.home); err != nil {
		t.Fatal(err)
	}
	s3Create(k, url)
	if tapes := k.tapes(); len(tapes) < 3 {
		t.Fatalf("the library created again over its bucket has tapes %v: want its old ones", tapes)
	}
	k.ok("catalog", "restore", "--tape", cb.Barcode)
	restores(cloud.SavesetID, "after a catalog restore from the bucket")

	// Lost again, without the catalog backup: `tape scan` rebuilds from
	// the bucket alone.
	if err := os.RemoveAll(k.home); err != nil {
		t.Fatal(err)
	}
	s3Create(k, url)
	r := k.ok("tape", "scan", cloud.Tapes[0])
	if !strings.Contains(r.stdout, "saveset records rebuilt from tape "+cloud.Tapes[0]) {
		t.Errorf("tape scan of a tape in the bucket:\n%s", r)
	}
	restores(cloud.SavesetID, "after a tape scan of the bucket")
	noSecretUnder(t, k.dir)
}

// TestS3LibraryThroughServerAndAgent: an admin creates the S3 library
// through a server (the credentials are the server's, from its
// environment; the admin has none), an agent's files are backed up to it
// and restored to the agent, one file alone too.
func TestS3LibraryThroughServerAndAgent(t *testing.T) {
	t.Parallel()
	url, bucket := s3Bucket(t, "srv")
	srvK := newKura(t)
	s3Env(srvK)
	srv := srvK.start("server", "--listen", "127.0.0.1:0")
	srvURL := srv.listenURL(t)
	admin := loginAdmin(t, srvK.home, srvURL, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")

	// A bucket that does not exist: refused by the server as a bad request.
	r := admin.expect(exitUsage, "vtl", "create", "cloud", "--s3", strings.Replace(url, bucket, "no-such-bucket", 1))
	if !strings.Contains(r.stderr, "bucket does not exist") || !strings.Contains(r.stderr, "AWS_ACCESS_KEY_ID") {
		t.Errorf("create on a missing bucket through the server should say so, with where credentials come from:\n%s", r)
	}
	r = admin.ok("vtl", "create", "cloud", "--s3", url, "--chunk-size", "64KiB", "--block-size", "16KiB",
		"--buffer", "64KiB", "--tape-size", "64MiB", "--slots", "2", "--barcode-prefix", "SRV")
	if !strings.Contains(r.stdout, "Its tapes are kept on s3 "+url) {
		t.Errorf("vtl create --s3 through the server:\n%s", r)
	}

	ag := newKura(t)
	enroll := strings.TrimSpace(admin.ok("token", "create", "--expires", "10m").stdout)
	ag.ok("agent", "enroll", "--server", srvURL, "--token", enroll, "--name", "c1")
	ag.start("agent", "run")
	admin.connected("c1")

	src := filepath.Join(ag.dir, "src")
	writeTree(t, src, s3Tree())
	want := readTree(t, src)
	var fig figures
	admin.json(0, &fig, "backup", "--client", "c1", "--vtl", "cloud", "--json", src)
	if fig.Status != "completed" || len(fig.Tapes) != 1 || !strings.HasPrefix(fig.Tapes[0], "SRV") {
		t.Fatalf("backup of an agent to the S3 library: %+v", fig)
	}
	if keys := s3Objects(t, bucket, "srv/"+fig.Tapes[0]+"/000001.data."); len(keys) < 2 {
		t.Errorf("the agent's saveset in the bucket: %v", keys)
	}
	dst := filepath.Join(ag.dir, "restored")
	admin.ok("restore", "--client", "c1", itoa64(fig.SavesetID), "--to", dst)
	sameTree(t, want, readTree(t, restoredAt(dst, src)))
	if r := admin.ok("verify", itoa64(fig.SavesetID), "--level", "media"); !strings.Contains(r.stdout, "no problems") {
		t.Errorf("verify --level media through the server:\n%s", r)
	}
	noSecretUnder(t, srvK.dir)
	noSecretUnder(t, admin.dir)
}

// The s3 part of `kura bench run` on tiny data against the test server:
// pairs of a folder library and an S3 library on the same set, alternating
// which runs first, each a backup then a restore; the report's table; the
// bucket's chunk objects erased after each S3 side — never how fast.
func TestBenchRunS3PartOnTinyData(t *testing.T) {
	url, bucket := s3Bucket(t, "bench")
	k := newKura(t)
	s3Env(k)
	r := k.expect(exitUsage, "bench", "run", "--data", k.dir, "--out", filepath.Join(k.dir, "r0"), "--parts", "s3")
	if !strings.Contains(r.stderr, "--s3") {
		t.Errorf("the s3 part without a bucket should say --s3 is needed:\n%s", r)
	}
	out, _, res := benchRunTiny(k, "test2", "--parts", "s3", "--s3", url, "--runs", "2", "--no-drop-caches")
	var order []string
	for _, run := range res.Runs {
		if !run.OK() {
			t.Errorf("run failed: %+v", run)
		}
		if run.Test != bench.TestObject || run.Tool != bench.ToolKura {
			t.Errorf("a %s run of %s in the s3 part", run.Test, run.Tool)
		}
		order = append(order, fmt.Sprintf("%d %s %s", run.Rep, run.Library, run.Phase))
	}
	want := []string{"1 folder backup", "1 folder restore", "1 s3 backup", "1 s3 restore", "2 s3 backup", "2 s3 restore", "2 folder backup", "2 folder restore"}
	if !slices.Equal(order, want) {
		t.Errorf("runs %v, want %v", order, want)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"## Object store ÷ folder library (issue 13)", "| test2 |"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	for _, key := range s3Objects(t, bucket, "bench/") {
		if strings.Contains(key, ".data.") {
			t.Errorf("chunk object %s left in the bucket after the part", key)
		}
	}
	checkScratchGone(t, out)
}
