package server_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/node"
)

// runningNode is a storage node run by a test.
type runningNode struct {
	name, home string
	n          *node.Node
	stop       func()
	done       chan error
}

// enrollNode enrolls a storage node with a node token, through url (the
// rig's own when "").
func (r *rig) enrollNode(name, url string) string {
	t := r.t
	t.Helper()
	if url == "" {
		url = r.url
	}
	home := t.TempDir()
	tok, err := r.admin.CreateToken(t.Context(), api.TokenRequest{Node: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Enroll(t.Context(), home, url, tok.Token, name, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	return home
}

// startNode runs the node of home, with a data port, and waits until the
// server sees it.
func (r *rig) startNode(name, home string) *runningNode {
	return r.startNodeOn(name, home, "127.0.0.1:0")
}

// startNodeOn is startNode with the node's data port on dataListen ("":
// none, its backups go through the server).
func (r *rig) startNodeOn(name, home, dataListen string) *runningNode {
	return r.startNodeWith(name, node.Options{Home: home, DataListen: dataListen})
}

// startNodeWith is startNode with the node's options (its log and
// reconnection backoff are the test's).
func (r *rig) startNodeWith(name string, opts node.Options) *runningNode {
	t := r.t
	t.Helper()
	home := opts.Home
	opts.Log = &logWriter{t: t, prefix: name + ": "}
	opts.MinBackoff, opts.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	n, err := node.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rn := &runningNode{name: name, home: home, n: n, done: make(chan error, 1)}
	go func() { rn.done <- n.Run(ctx) }()
	stopped := false
	rn.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-rn.done
		}
	}
	t.Cleanup(rn.stop)
	r.waitNode(name, true)
	return rn
}

// waitNode waits until the server sees the node connected (or not).
func (r *rig) waitNode(name string, want bool) api.Node {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ns, err := r.admin.Nodes(r.t.Context())
		if err != nil {
			r.t.Fatal(err)
		}
		for _, n := range ns {
			if n.Name == name && n.Connected == want {
				return n
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("node %s: connected never became %v (%+v)", name, want, ns)
		}
		time.Sleep(20 * time.Millisecond) // polling the server's view of its tunnels
	}
}

// TestStorageNodes: one server, two storage nodes, two agents. Backups run
// in parallel into a library on each node and land on the node's disk;
// restores and a verify read them back from the node; a copy goes from one
// node to the other and a restore reads the copy; a job for a node that is
// down waits with the reason; a revoked node is refused.
func TestStorageNodes(t *testing.T) {
	r := startServer(t, t.TempDir(), "")
	ctx := t.Context()

	// The kinds of tokens do not mix.
	agentTok, err := r.admin.CreateToken(ctx, api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Enroll(ctx, t.TempDir(), r.url, agentTok.Token, "sneaky", nil); err == nil || !strings.Contains(err.Error(), "node token") {
		t.Errorf("a node enrolling with an agent's token: %v, want refused", err)
	}
	nodeTok, err := r.admin.CreateToken(ctx, api.TokenRequest{Node: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Enroll(ctx, t.TempDir(), r.url, nodeTok.Token, "sneaky"); err == nil || !strings.Contains(err.Error(), "storage node") {
		t.Errorf("an agent enrolling with a node token: %v, want refused", err)
	}

	sn1 := r.startNode("sn1", r.enrollNode("sn1", ""))
	sn2 := r.startNode("sn2", r.enrollNode("sn2", ""))
	for _, l := range []api.LibraryCreate{{Name: "far1", Node: "sn1"}, {Name: "far2", Node: "sn2"}} {
		l.Slots, l.Drives, l.TapeSizeBytes = 3, 1, 64<<20
		lib, err := r.admin.CreateLibrary(ctx, l)
		if err != nil {
			t.Fatalf("creating library %s on %s: %v", l.Name, l.Node, err)
		}
		if lib.Node != l.Node || !strings.HasPrefix(lib.Dir, map[string]string{"sn1": sn1.home, "sn2": sn2.home}[l.Node]) {
			t.Errorf("library %s: on %q in %s; want in the home of %s", l.Name, lib.Node, lib.Dir, l.Node)
		}
	}
	if n := r.waitNode("sn1", true); len(n.Libraries) != 1 || n.Libraries[0] != "far1" {
		t.Errorf("node sn1 lists libraries %v, want far1", n.Libraries)
	}
	// Agents and nodes are listed apart.
	if cs, err := r.admin.Clients(ctx); err != nil || len(cs) != 0 {
		t.Errorf("clients: %+v, %v; want no agents yet (nodes are not clients)", cs, err)
	}

	r.runAgent("c1")
	c2home, _ := r.runAgent("c2")
	src1, src2 := t.TempDir(), t.TempDir()
	makeTree(t, src1, 12, 1)
	makeTree(t, src2, 12, 2)
	ids := []int64{
		r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src1}, Library: "far1"})[0],
		r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c2", Paths: []string{src2}, Library: "far2"})[0],
	}
	var ss [2]int64
	for i, id := range ids {
		j := r.wait(id)
		if j.State != catalog.StateSucceeded {
			t.Fatalf("backup job %d to a node: %s (%s)", id, j.State, j.Error)
		}
		ss[i] = j.SavesetID
	}
	// The tapes are on the nodes' disks, not the server's.
	for i, n := range []*runningNode{sn1, sn2} {
		rec, err := r.srv.Env().Catalog.Saveset(ss[i])
		if err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(n.home, "vtl", rec.Library, "tapes", rec.Parts[0].Barcode, "000001.data")
		if _, err := os.Stat(data); err != nil {
			t.Errorf("saveset %d: its data is not on node %s: %v", ss[i], n.name, err)
		}
	}
	// The agents sent their streams to the nodes' data ports, not to the
	// server.
	for _, n := range []*runningNode{sn1, sn2} {
		if n.n.DataReceived() == 0 {
			t.Errorf("node %s: no backup data came to its data port", n.name)
		}
	}
	r.restoreAndCheck("c1", ss[0], src1)
	r.restoreAndCheck("c2", ss[1], src2)
	// The restores read the tapes straight from the nodes' data ports
	// (byte-exact: the trees compare equal); no saveset byte crossed the
	// server.
	for _, n := range []*runningNode{sn1, sn2} {
		if n.n.DataSent() == 0 {
			t.Errorf("node %s: no restore data left its data port", n.name)
		}
	}
	if b := r.srv.RestoreBytesSent(); b != 0 {
		t.Errorf("the server sent %d bytes of restore data; want none (the nodes send it)", b)
	}
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: ss[0], Level: "data"})[0]); j.State != catalog.StateSucceeded {
		t.Errorf("verify of saveset %d on node sn1: %s (%s)", ss[0], j.State, j.Error)
	}
	// An encrypted backup (the node can check nothing of it but stores
	// it), an incremental on top, and a restore of the incremental.
	on := true
	if _, err := r.admin.UpdateClient(ctx, "c2", api.ClientUpdate{Encrypt: &on}); err != nil {
		t.Fatal(err)
	}
	enc := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c2", Paths: []string{src2}, Library: "far2"})[0])
	if enc.State != catalog.StateSucceeded {
		t.Fatalf("encrypted backup to node sn2: %s (%s)", enc.State, enc.Error)
	}
	makeTree(t, filepath.Join(src2, "more"), 3, 9)
	incr := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c2", Paths: []string{src2}, Library: "far2", Level: "incr"})[0])
	if incr.State != catalog.StateSucceeded || incr.Level != "incr" {
		t.Fatalf("encrypted incremental to node sn2: %s %s (%s)", incr.State, incr.Level, incr.Error)
	}
	sent := sn2.n.DataSent()
	r.restoreAndCheck("c2", incr.SavesetID, src2)
	if sn2.n.DataSent() == sent || r.srv.RestoreBytesSent() != 0 {
		t.Errorf("encrypted restore: node sn2 sent %d bytes, the server %d; want all from the node", sn2.n.DataSent()-sent, r.srv.RestoreBytesSent())
	}
	// kura agent verify (the client's key, outside a job) reads the node
	// directly too.
	ag, err := agent.Open(agent.Options{Home: c2home, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sent = sn2.n.DataSent()
	vr, err := ag.VerifyData(ctx, incr.SavesetID)
	if err != nil || len(vr.Problems) != 0 || vr.Bytes == 0 {
		t.Errorf("agent verify of the encrypted incremental: %+v, %v", vr, err)
	}
	if sn2.n.DataSent() == sent || r.srv.RestoreBytesSent() != 0 {
		t.Errorf("agent verify: node sn2 sent %d bytes, the server %d; want all from the node", sn2.n.DataSent()-sent, r.srv.RestoreBytesSent())
	}

	// A copy from the library of one node to that of the other; with the
	// original's tape exported a restore reads the copy.
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindCopy, Saveset: ss[0], Library: "far2"})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("copy of saveset %d from sn1 to sn2: %s (%s)", ss[0], j.State, j.Error)
	}
	rec, err := r.srv.Env().Catalog.Saveset(ss[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.admin.ExportTape(ctx, rec.Parts[0].Barcode); err != nil {
		t.Fatal(err)
	}
	sent = sn2.n.DataSent()
	r.restoreAndCheck("c1", ss[0], src1)
	if sn2.n.DataSent() == sent || r.srv.RestoreBytesSent() != 0 {
		t.Errorf("restore of the copy: node sn2 sent %d bytes, the server %d; want all from sn2", sn2.n.DataSent()-sent, r.srv.RestoreBytesSent())
	}

	// A node without a data port: its restores go through the server.
	sn3 := r.startNodeOn("sn3", r.enrollNode("sn3", ""), "")
	if _, err := r.admin.CreateLibrary(ctx, api.LibraryCreate{Name: "far3", Node: "sn3", Slots: 2, Drives: 1, TapeSizeBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	j3 := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src1}, Library: "far3"})[0])
	if j3.State != catalog.StateSucceeded {
		t.Fatalf("backup to node sn3 (no data port): %s (%s)", j3.State, j3.Error)
	}
	r.restoreAndCheck("c1", j3.SavesetID, src1)
	if sn3.n.DataSent() != 0 || r.srv.RestoreBytesSent() == 0 {
		t.Errorf("restore from a node without a data port: node sent %d, the server %d; want all through the server", sn3.n.DataSent(), r.srv.RestoreBytesSent())
	}

	// A node that is down: the job waits, saying so, and runs when it is
	// back.
	sn2.stop()
	r.waitNode("sn2", false)
	id := r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c2", Paths: []string{src2}, Library: "far2"})[0]
	r.pollJob(id, 20*time.Second, "waiting for node sn2", func(j *api.Job) bool {
		return j.State == catalog.StateWaiting && strings.Contains(j.Reason, "storage node sn2 is offline")
	})
	sn2 = r.startNode("sn2", sn2.home)
	if j := r.wait(id); j.State != catalog.StateSucceeded {
		t.Fatalf("backup %d after its node came back: %s (%s)", id, j.State, j.Error)
	}

	// A revoked node is cut off and refused; its savesets stay in the
	// catalog.
	if _, err := r.admin.RevokeNode(ctx, "sn2"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sn2.done:
		var re *node.RefusedError
		if !errors.As(err, &re) {
			t.Errorf("revoked node's Run ended with %v, want a refusal", err)
		}
		sn2.done <- err // for its cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("a revoked node kept running")
	}
	n := r.waitNode("sn2", false)
	if n.Revoked.IsZero() {
		t.Errorf("node sn2 after revoke: %+v", n)
	}
	if _, err := r.admin.RevokeNode(ctx, "c1"); apiclient.Code(err) != api.CodeNotFound {
		t.Errorf("revoking agent c1 as a node: %v, want not found", err)
	}
}

// TestStorageNodeRestoreDamage: a damaged block on a node's tape, read
// straight from the node's data port, costs the restore the files in the
// frames it holds, each named as damaged on media with the tape; the
// restore reads on after it (with a fresh read ticket), and still no byte
// crosses the server.
func TestStorageNodeRestoreDamage(t *testing.T) {
	r := startServer(t, t.TempDir(), "")
	sn1 := r.startNode("sn1", r.enrollNode("sn1", ""))
	if _, err := r.admin.CreateLibrary(t.Context(), api.LibraryCreate{Name: "far1", Node: "sn1", Slots: 2, Drives: 1, TapeSizeBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 24, 3)
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "far1", Compress: "none", FrameSize: 64 << 10})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("backup to node sn1: %s (%s)", j.State, j.Error)
	}
	rec, err := r.srv.Env().Catalog.Saveset(j.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	bc := rec.Parts[0].Barcode
	data := filepath.Join(sn1.home, "vtl", "far1", "tapes", bc, "000001.data")
	f, err := os.OpenFile(data, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	at := st.Size() / 2
	if _, err := f.ReadAt(b[:], at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], at); err != nil {
		t.Fatal(err)
	}
	f.Close()

	to := t.TempDir()
	rj := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: j.SavesetID, To: to})[0])
	if rj.State != catalog.StateFailed || !strings.Contains(rj.Error, "damaged media") {
		t.Fatalf("restore over a damaged block: %s (%s); want failed for damaged media", rj.State, rj.Error)
	}
	named := 0
	for _, w := range rj.Warnings {
		if strings.Contains(w, "NOT RESTORED, damaged on media") && strings.Contains(w, "corrupt") && strings.Contains(w, bc) {
			named++
		}
	}
	if named == 0 {
		t.Errorf("no file named as damaged on tape %s: %q", bc, rj.Warnings)
	}
	// The files after the damage were restored: the restore read on.
	want, got := treeSum(t, src), treeSum(t, filepath.Join(to, src))
	if len(got) == 0 || len(got)+named < len(want) {
		t.Errorf("restored %d of %d files with %d named damaged", len(got), len(want), named)
	}
	for p, sum := range got {
		if want[p] != sum {
			t.Errorf("%s restored with the wrong content", p)
		}
	}
	if sn1.n.DataSent() == 0 || r.srv.RestoreBytesSent() != 0 {
		t.Errorf("node sent %d bytes, the server %d; want all from the node", sn1.n.DataSent(), r.srv.RestoreBytesSent())
	}
}
