package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodesConnected waits until node list shows every name connected.
func (k *kura) nodesConnected(want bool, names ...string) {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var ns []nodeJSON
		r := k.run("node", "list", "--json")
		if r.code == 0 && decodeJSON(r.stdout, &ns) == nil {
			all := true
			for _, name := range names {
				found := false
				for _, n := range ns {
					found = found || n.Name == name && n.Connected == want
				}
				all = all && found
			}
			if all {
				return
			}
		}
		time.Sleep(100 * time.Millisecond) // polling the server's view, not our own work
	}
	k.t.Fatalf("nodes %v never all connected=%v", names, want)
}

// jobState is a job's state as jobs show --json gives it.
func (k *kura) jobState(id string) jobJSON {
	k.t.Helper()
	var j jobJSON
	k.json(0, &j, "jobs", "show", id, "--json")
	return j
}

// One server, two storage nodes and two agents, all real processes on
// loopback: backups in parallel to a library on each node, each agent
// sending its stream to the node's data port, restores from each, a node killed mid-backup (the job fails with the reason, the
// earlier saveset restores, the drive is free again once the node is
// back), and a revoked node, refused.
func TestStorageNodesEndToEnd(t *testing.T) {
	srvK := newKura(t)
	srv := srvK.start("server", "--listen", "127.0.0.1:0")
	url := strings.TrimSpace(strings.TrimPrefix(srv.line(t, "listening on"), "Kura server listening on"))
	tokb, err := os.ReadFile(filepath.Join(srvK.home, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := newKura(t)
	admin.home = ""
	admin.env = []string{"KURA_LOGIN=" + filepath.Join(admin.dir, "login.json")}
	admin.ok("login", "--server", url, "--token", strings.TrimSpace(string(tokb)))

	nodes := map[string]*kura{}
	procs := map[string]*proc{}
	for _, name := range []string{"sn1", "sn2"} {
		tok := strings.TrimSpace(admin.ok("token", "create", "--node", "--expires", "10m").stdout)
		k := newKura(t)
		r := k.ok("node", "enroll", "--server", url, "--token", tok, "--name", name, "--data-host", "127.0.0.1")
		if !strings.Contains(r.stdout, "kura node run") {
			t.Errorf("node enroll does not say what to run next:\n%s", r)
		}
		procs[name] = k.start("node", "run", "--data-listen", "127.0.0.1:0")
		nodes[name] = k
	}
	admin.nodesConnected(true, "sn1", "sn2")
	for i, name := range []string{"sn1", "sn2"} {
		lib := "far" + name[2:]
		r := admin.ok("vtl", "create", lib, "--node", name, "--slots", "2", "--drives", "1", "--tape-size", "64MiB")
		if !strings.Contains(r.stdout, name+":"+nodes[name].home) {
			t.Errorf("vtl create --node %s does not say the library is in the node's home:\n%s", name, r)
		}
		_ = i
	}
	if r := admin.ok("node", "list"); !strings.Contains(r.stdout, "sn1") || !strings.Contains(r.stdout, "far1") || !strings.Contains(r.stdout, "connected") {
		t.Errorf("node list:\n%s", r)
	}

	agents := map[string]*kura{}
	for _, name := range []string{"web1", "web2"} {
		tok := strings.TrimSpace(admin.ok("token", "create", "--expires", "10m").stdout)
		k := newKura(t)
		k.ok("agent", "enroll", "--server", url, "--token", tok, "--name", name)
		k.start("agent", "run")
		agents[name] = k
	}
	admin.connected("web1", "web2")
	src := map[string]map[string]string{}
	for i, name := range []string{"web1", "web2"} {
		files := map[string]string{"a.txt": strings.Repeat(name+" text ", 4000), "sub/b.txt": name}
		writeTree(t, filepath.Join(agents[name].dir, "src"), files)
		src[name] = readTree(t, filepath.Join(agents[name].dir, "src"))
		_ = i
	}
	// Two backups at once, each to the library of its own node.
	ids := map[string]string{}
	for i, name := range []string{"web1", "web2"} {
		lib := []string{"far1", "far2"}[i]
		ids[name] = strings.TrimSpace(admin.ok("backup", "--client", name, "--vtl", lib, "--detach", filepath.Join(agents[name].dir, "src")).stdout)
	}
	savesets := map[string]string{}
	for _, name := range []string{"web1", "web2"} {
		admin.ok("jobs", "watch", ids[name])
		savesets[name] = itoa64(admin.jobState(ids[name]).SavesetID)
	}
	for _, name := range []string{"web1", "web2"} {
		to := filepath.Join(agents[name].dir, "back")
		admin.ok("restore", "--client", name, savesets[name], "--to", to)
		sameTree(t, src[name], readTree(t, restoredAt(to, filepath.Join(agents[name].dir, "src"))))
	}

	// sn1 killed in the middle of a backup: the job fails and says why.
	big := filepath.Join(agents["web1"].dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	randomFile(t, big, "r.bin", 3<<20)
	tapeFiles := func() (n int, bytes int64) {
		fs, _ := filepath.Glob(filepath.Join(nodes["sn1"].home, "vtl", "far1", "tapes", "*", "*.data"))
		for _, f := range fs {
			if st, err := os.Stat(f); err == nil {
				n, bytes = n+1, bytes+st.Size()
			}
		}
		return n, bytes
	}
	before, used := tapeFiles()
	id := strings.TrimSpace(admin.ok("backup", "--client", "web1", "--vtl", "far1", "--bwlimit", "1MB/s", "--detach", big).stdout)
	deadline := time.Now().Add(30 * time.Second)
	// Under way: its tape file on the node has data.
	for n, b := tapeFiles(); n == before || b == used; n, b = tapeFiles() {
		if time.Now().After(deadline) {
			t.Fatalf("job %s never wrote to the node: %+v", id, admin.jobState(id))
		}
		time.Sleep(20 * time.Millisecond) // polling the node's disk
	}
	procs["sn1"].kill()
	r := admin.expect(exitFailure, "jobs", "watch", id)
	if j := admin.jobState(id); j.State != "failed" || !strings.Contains(j.Error, "sn1") {
		t.Errorf("backup whose node was killed: %s %q, want failed naming the node\n%s", j.State, j.Error, r)
	}
	// Back again: the drive is free, the earlier saveset restores, a new
	// backup runs.
	procs["sn1"] = nodes["sn1"].start("node", "run", "--data-listen", "127.0.0.1:0")
	admin.nodesConnected(true, "sn1")
	to := filepath.Join(agents["web1"].dir, "again")
	admin.ok("restore", "--client", "web1", savesets["web1"], "--to", to)
	sameTree(t, src["web1"], readTree(t, restoredAt(to, filepath.Join(agents["web1"].dir, "src"))))
	admin.ok("backup", "--client", "web1", "--vtl", "far1", filepath.Join(agents["web1"].dir, "src"))

	// Revoked: the node is cut off and its own process ends, refused.
	admin.ok("node", "revoke", "sn2")
	select {
	case <-procs["sn2"].done:
	case <-time.After(30 * time.Second):
		t.Fatal("the revoked node kept running")
	}
	admin.nodesConnected(false, "sn2")
	if r := admin.ok("node", "list"); !strings.Contains(r.stdout, "revoked") {
		t.Errorf("node list after revoke:\n%s", r)
	}
}
