package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/tape/s3tape/versitygw"
)

const (
	nodeS3Access = "kura-node-access"
	nodeS3Secret = "kura-node-SECRET-5eed" // the node's: never in the server's home
)

// TestStorageNodeS3: a library on a storage node whose tapes are in an S3
// bucket (the real versitygw server). The node reaches the bucket with the
// credentials of its own environment; a bucket it cannot use is refused in
// the node's words and nothing is registered; an agent's backup goes to the
// node's data port and lands in the bucket, and a restore and a verify read
// it back from there through the node.
func TestStorageNodeS3(t *testing.T) {
	bin, err := versitygw.Find()
	if err != nil {
		t.Fatal(err)
	}
	gw, err := versitygw.Start(bin, t.TempDir(), nodeS3Access, nodeS3Secret)
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(gw.Stop)
	if err := gw.Client().MakeBucket(context.Background(), "nodes", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node runs in this process: the environment is the node's.
	t.Setenv("AWS_ACCESS_KEY_ID", nodeS3Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", nodeS3Secret)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "")

	serverHome := t.TempDir()
	r := startServer(t, serverHome, "")
	ctx := t.Context()
	sn := r.startNode("sn1", r.enrollNode("sn1", ""))

	// A missing bucket: the node says so, and no library is left behind.
	_, err = r.admin.CreateLibrary(ctx, api.LibraryCreate{Name: "nobucket", Node: "sn1", S3: "http://" + gw.Addr + "/missing/kura"})
	if err == nil || !strings.Contains(err.Error(), "storage node sn1") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("creating a library on a missing bucket: %v; want the node's refusal naming the bucket", err)
	}
	if libs, err := r.admin.Libraries(ctx); err != nil {
		t.Fatal(err)
	} else {
		for _, l := range libs {
			if l.Name == "nobucket" {
				t.Errorf("a library refused by its node is registered: %+v", l)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(sn.home, "vtl", "nobucket")); !os.IsNotExist(err) {
		t.Errorf("the refused library left its folder on the node: %v", err)
	}

	// Credentials the bucket refuses: the node's words again.
	os.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	_, err = r.admin.CreateLibrary(ctx, api.LibraryCreate{Name: "denied", Node: "sn1", S3: "http://" + gw.Addr + "/nodes/denied"})
	os.Setenv("AWS_SECRET_ACCESS_KEY", nodeS3Secret)
	if err == nil || !strings.Contains(err.Error(), "storage node sn1") || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("creating a library with credentials the bucket refuses: %v; want the node's refusal", err)
	}
	if _, err := r.admin.Library(ctx, "denied"); apiclient.Code(err) != api.CodeNotFound {
		t.Errorf("after a refused create, library denied: %v; want not found", err)
	}

	url := "http://" + gw.Addr + "/nodes/far"
	lib, err := r.admin.CreateLibrary(ctx, api.LibraryCreate{Name: "cloud", Node: "sn1", S3: url,
		Slots: 2, Drives: 1, TapeSizeBytes: 64 << 20, ChunkSizeBytes: 256 << 10})
	if err != nil {
		t.Fatalf("creating an S3 library on node sn1: %v", err)
	}
	if lib.Node != "sn1" || !strings.Contains(lib.Config.Media, url) {
		t.Errorf("library cloud: node %q, media %q; want on sn1 with its tapes on %s", lib.Node, lib.Config.Media, url)
	}

	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 12, 5)
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "cloud"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("backup to the node's S3 library: %s (%s)", j.State, j.Error)
	}
	if sn.n.DataReceived() == 0 {
		t.Errorf("no backup data came to the node's data port")
	}
	rec, err := r.srv.Env().Catalog.Saveset(j.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	// The tape files are objects in the bucket, not folders on the node.
	bc := rec.Parts[0].Barcode
	var chunks int
	for o := range gw.Client().ListObjects(ctx, "nodes", minio.ListObjectsOptions{Prefix: "far/" + bc + "/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		chunks++
	}
	if chunks < 2 {
		t.Errorf("tape %s: %d objects in the bucket; want its label and its tape file's chunks", bc, chunks)
	}
	if ents, _ := os.ReadDir(filepath.Join(sn.home, "vtl", "cloud", "tapes")); len(ents) != 0 {
		t.Errorf("the node keeps tape folders for an S3 library: %d", len(ents))
	}

	r.restoreAndCheck("c1", j.SavesetID, src)
	if sn.n.DataSent() == 0 || r.srv.RestoreBytesSent() != 0 {
		t.Errorf("restore: node sent %d bytes, the server %d; want all from the node", sn.n.DataSent(), r.srv.RestoreBytesSent())
	}
	if v := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: j.SavesetID, Level: "data"})[0]); v.State != catalog.StateSucceeded {
		t.Errorf("verify of saveset %d on the node's S3 library: %s (%s)", j.SavesetID, v.State, v.Error)
	}
	// The server's home never held the node's credentials.
	filepath.WalkDir(serverHome, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), nodeS3Secret) {
				t.Errorf("%s holds the node's secret key", p)
			}
		}
		return nil
	})
}
