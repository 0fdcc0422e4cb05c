package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// proc is a long-running kura (server, agent) started for a test.
type proc struct {
	lines chan string   // its stdout, line by line
	done  chan struct{} // closed when it exited
	stop  func()
	kill  func() // SIGKILL, as kill -9
}

// start runs kura in the background until the test ends (then it gets
// SIGINT, as systemd would send SIGTERM). Its stderr goes to the test log.
func (k *kura) start(args ...string) *proc {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.command(ctx, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	p := &proc{lines: make(chan string, 1000), done: make(chan struct{})}
	name := args[0]
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			k.t.Logf("%s: %s", name, sc.Text())
		}
	}()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		close(p.done)
	}()
	p.stop = func() { cancel(); <-p.done }
	p.kill = func() { cmd.Process.Kill(); <-p.done }
	k.t.Cleanup(p.stop)
	return p
}

// line waits for a line of the process's output that contains want.
func (p *proc) line(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, want) {
				return l
			}
		case <-p.done:
			t.Fatalf("process exited before printing %q", want)
		case <-deadline:
			t.Fatalf("no line with %q within 30 s", want)
		}
	}
}

// listenURL waits for a server's "listening on" line and returns its URL.
func (p *proc) listenURL(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(strings.TrimPrefix(p.line(t, "listening on"), "Kura server listening on"))
}

// loginAdmin logs a fresh CLI, with its own login file and no home, in
// to the server at url with the admin token from the server's home
// srvHome. env is added to the CLI's environment.
func loginAdmin(t *testing.T, srvHome, url string, env ...string) *kura {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(srvHome, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := newKura(t)
	admin.home = ""
	admin.env = append([]string{"KURA_LOGIN=" + filepath.Join(admin.dir, "login.json")}, env...)
	admin.ok("login", "--server", url, "--token", strings.TrimSpace(string(tok)))
	return admin
}

// enrollAgent makes a one-time token as the logged-in admin k and enrolls
// a new agent home with it under name (its environment env); the agent
// is not started.
func (k *kura) enrollAgent(url, name string, env []string) *kura {
	k.t.Helper()
	tok := strings.TrimSpace(k.ok("token", "create", "--expires", "10m").stdout)
	ag := newKura(k.t)
	ag.env = env
	ag.ok("agent", "enroll", "--server", url, "--token", tok, "--name", name)
	return ag
}

// enroll is enrollAgent then `agent run` with runFlags. The caller waits
// with connected.
func (k *kura) enroll(url, name string, env []string, runFlags ...string) *kura {
	k.t.Helper()
	ag := k.enrollAgent(url, name, env)
	ag.start(append([]string{"agent", "run"}, runFlags...)...)
	return ag
}

// connected waits until `kura client list` shows every name connected.
func (k *kura) connected(names ...string) {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var cs []struct {
			Name      string `json:"name"`
			Connected bool   `json:"connected"`
		}
		r := k.run("client", "list", "--json")
		if r.code == 0 && decodeJSON(r.stdout, &cs) == nil {
			up := map[string]bool{}
			for _, c := range cs {
				up[c.Name] = c.Connected
			}
			all := true
			for _, n := range names {
				all = all && up[n]
			}
			if all {
				return
			}
		}
		time.Sleep(100 * time.Millisecond) // polling the server's view, not our own work
	}
	k.t.Fatalf("clients %v never all connected", names)
}

// The whole network path as a user meets it: a server, two agents that
// enroll with one-time tokens, an admin CLI that logs in, backs up one
// client and restores onto the other, watches a detached job, uses the
// library verbs through the server, and revokes a client.
func TestServerAgentsAndAdminCLI(t *testing.T) {
	t.Parallel()
	srvK := newKura(t)
	srv := srvK.start("server", "--listen", "127.0.0.1:0")
	url := strings.TrimSpace(strings.TrimPrefix(srv.line(t, "listening on"), "Kura server listening on"))
	tokb, err := os.ReadFile(filepath.Join(srvK.home, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	adminToken := strings.TrimSpace(string(tokb))

	admin := newKura(t)
	admin.home = ""
	admin.env = []string{"KURA_LOGIN=" + filepath.Join(admin.dir, "login.json")}
	if r := admin.ok("login", "--server", url, "--token", adminToken); !strings.Contains(r.stdout, "Logged in") {
		t.Fatalf("login said:\n%s", r)
	}
	// A login file is private.
	if st, err := os.Stat(filepath.Join(admin.dir, "login.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("login file: %v, %v", st, err)
	}

	agents := map[string]*kura{}
	for _, name := range []string{"c1", "c2"} {
		tok := strings.TrimSpace(admin.ok("token", "create", "--expires", "10m").stdout)
		k := newKura(t)
		// It prints the exact command to run next, home included.
		if r := k.ok("agent", "enroll", "--server", url, "--token", tok, "--name", name); !strings.Contains(r.stdout, "Now run: kura agent run --home "+k.home+"\n") {
			t.Fatalf("enroll should print the next command with its home:\n%s", r)
		}
		// The token was for one enrollment only.
		if r := newKura(t).run("agent", "enroll", "--server", url, "--token", tok, "--name", name+"x"); r.code == 0 || !strings.Contains(r.stderr, "used already") {
			t.Fatalf("second use of a token:\n%s", r)
		}
		k.start("agent", "run")
		agents[name] = k
	}
	admin.connected("c1", "c2")

	src := filepath.Join(agents["c1"].dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	var fig figures
	admin.json(0, &fig, "backup", "--client", "c1", "--json", "--compress", "low", src)
	if fig.Status != "completed" || fig.Files == 0 || fig.SavesetID == 0 {
		t.Fatalf("remote backup figures: %+v", fig)
	}

	// Restore c1's saveset onto c2, into a folder there.
	dst := filepath.Join(agents["c2"].dir, "restored")
	admin.ok("restore", "--client", "c1", "--to-client", "c2", itoa64(fig.SavesetID), "--to", dst)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(dst, src)))

	// Through the server the same JSON comes out as locally.
	var tok tokenJSON
	admin.json(0, &tok, "token", "create", "--expires", "10m", "--name", "c9", "--json")
	if !strings.HasPrefix(tok.Token, "kura") || tok.Name != "c9" || tok.Expires.IsZero() {
		t.Errorf("token create --json: %+v", tok)
	}
	conforms(t, "saveset", admin.ok("savesets", "--json"), true)
	conforms(t, "job", admin.ok("jobs", "show", itoa64(fig.JobID), "--json"), false)
	conforms(t, "tape", admin.ok("tape", "list", "--json"), true)
	snakeKeys(t, admin.ok("client", "list", "--json"))
	var cl clientJSON
	admin.json(0, &cl, "client", "set", "c2", "--bwlimit", "1MB/s", "--json")
	if cl.Name != "c2" || cl.BWLimitKBps <= 0 {
		t.Errorf("client set --json: %+v", cl)
	}
	admin.ok("client", "set", "c2", "--bwlimit", "0")
	snakeKeys(t, admin.ok("savesets", "--why", "--json"))
	var res figures
	if r := admin.json(0, &res, "verify", itoa64(fig.SavesetID), "--json"); res.RatioText == "" {
		t.Errorf("remote verify --json: %+v\n%s", res, r)
	}

	// <TAB> through the server: its clients, from its API.
	if got := admin.completions("backup", "--client", ""); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("kura backup --client <TAB> through the server: %v, want [c1 c2]", got)
	}

	// A detached job, then watched.
	id := strings.TrimSpace(admin.ok("backup", "--client", "c1", "--detach", "--level", "incr", src).stdout)
	if w := admin.ok("jobs", "watch", id); !strings.Contains(w.stdout, "Average") && !strings.Contains(w.stdout, "KB/s") {
		t.Fatalf("jobs watch printed no figures:\n%s", w)
	}
	// A request the server refuses as bad exits 2 (usage), naming the
	// field, and runs nothing; so does a name that names nothing; a
	// refusal of another kind (a conflict) exits 1.
	if r := admin.expect(exitUsage, "backup", "--client", "c1", "--drive", "200", src); !strings.Contains(r.stderr, "drive:") {
		t.Fatalf("backup on a drive the library lacks should name the field:\n%s", r)
	}
	if r := admin.expect(exitUsage, "backup", "--client", "c9", src); !strings.Contains(r.stderr, "c9") {
		t.Fatalf("backup of a client never enrolled:\n%s", r)
	}
	if r := admin.expect(exitFailure, "jobs", "cancel", itoa64(fig.JobID)); !strings.Contains(r.stderr, "has ended") {
		t.Fatalf("cancel of an ended job:\n%s", r)
	}
	// Library and catalog verbs run on the server.
	if r := admin.ok("vtl", "list"); !strings.Contains(r.stdout, "default") {
		t.Fatalf("vtl list through the server:\n%s", r)
	}
	// An explicit home means local, whatever login exists: KURA_HOME or
	// --home sees its own (empty) catalog, and verbs that need the server
	// say why they do not reach it.
	local := *admin
	local.home = filepath.Join(admin.dir, "local-home")
	var remoteSets, localSets []struct {
		ID int64 `json:"id"`
	}
	admin.json(0, &remoteSets, "savesets", "--json")
	local.json(0, &localSets, "savesets", "--json")
	if len(remoteSets) == 0 || len(localSets) != 0 {
		t.Fatalf("savesets: %d through the login, %d with KURA_HOME set (want some and none)", len(remoteSets), len(localSets))
	}
	admin.json(0, &localSets, "--home", local.home, "savesets", "--json")
	if len(localSets) != 0 {
		t.Fatalf("savesets --home: %d, want the local home's none", len(localSets))
	}
	if r := local.expect(exitFailure, "client", "list"); !strings.Contains(r.stderr, "KURA_HOME is set") {
		t.Fatalf("client list with KURA_HOME set should say it means local:\n%s", r)
	}
	if r := admin.expect(exitUsage, "--home", local.home, "backup", "--client", "c1", src); !strings.Contains(r.stderr, "--home is set") {
		t.Fatalf("backup --client with --home should say it means local:\n%s", r)
	}
	if r := local.ok("login", "--server", url, "--token", adminToken); !strings.Contains(r.stderr, "KURA_HOME is set") {
		t.Fatalf("login with KURA_HOME set should say verbs stay local:\n%s", r)
	}
	if r := admin.ok("jobs", "list"); !strings.Contains(r.stdout, "c1") {
		t.Fatalf("jobs list through the server lacks the client:\n%s", r)
	}
	// Flags reach the server: --limit and --json.
	var jobs []struct {
		ID     int64  `json:"id"`
		Client string `json:"client"`
	}
	admin.json(0, &jobs, "jobs", "list", "--limit", "1", "--json")
	if len(jobs) != 1 || jobs[0].Client != "c1" {
		t.Fatalf("jobs list --limit 1 --json through the server: %+v", jobs)
	}
	var sel []struct {
		Name string `json:"name"`
	}
	admin.ok("selection", "create", "--client", "c1", "docs", src, "--exclude", "*.tmp", "--exclude", "*.bak")
	admin.json(0, &sel, "selection", "list", "--client", "c1", "--json")
	if len(sel) != 1 || sel[0].Name != "docs" {
		t.Fatalf("selection list --client c1 --json: %+v", sel)
	}
	if r := admin.ok("selection", "show", "--client", "c1", "docs"); !strings.Contains(r.stdout, "*.bak") || !strings.Contains(r.stdout, "*.tmp") {
		t.Fatalf("repeated --exclude through the server:\n%s", r)
	}
	if r := admin.ok("ls", itoa64(fig.SavesetID), strings.TrimPrefix(src, "/")); !strings.Contains(r.stdout, "notes.txt") {
		t.Fatalf("ls through the server:\n%s", r)
	}

	// A wrong admin token is refused.
	bad := newKura(t)
	bad.home = ""
	parts := strings.Split(adminToken, "-")
	bad.env = []string{"KURA_SERVER=" + url, "KURA_TOKEN=kura1-admin-" + strings.Repeat("A", 43) + "-" + parts[len(parts)-1]}
	if r := bad.run("jobs", "list"); r.code != 1 || !strings.Contains(r.stderr, "wrong admin token") {
		t.Fatalf("wrong admin token:\n%s", r)
	}

	// Revoking c2 cuts it off: its agent stops, and it cannot be backed up.
	admin.ok("client", "revoke", "c2")
	if r := admin.run("backup", "--client", "c2", "/tmp"); r.code != 1 || !strings.Contains(r.stderr, "revoked") {
		t.Fatalf("backup of a revoked client:\n%s", r)
	}
	if r := admin.ok("client", "list"); !strings.Contains(r.stdout, "revoked") {
		t.Fatalf("client list after revoke:\n%s", r)
	}
}

func decodeJSON(s string, v any) error { return json.Unmarshal([]byte(s), v) }
