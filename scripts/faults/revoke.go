package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is a long-running kura process (server, agent) in its own process
// group.
type proc struct {
	cmd    *exec.Cmd
	done   chan error
	out    *strings.Builder
	exited bool
}

func (c *campaign) start(home string, env []string, lines chan<- string, args ...string) (*proc, error) {
	cmd := exec.Command(c.kura, args...)
	cmd.Env = c.cmdEnv(home, env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &proc{cmd: cmd, done: make(chan error, 1), out: &strings.Builder{}}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if p.out.Len() < 1<<16 {
				p.out.WriteString(sc.Text() + "\n")
			}
			if lines != nil {
				select {
				case lines <- sc.Text():
				default:
				}
			}
		}
	}()
	go func() { err := cmd.Wait(); pw.Close(); p.done <- err }()
	return p, nil
}

// stop sends SIGTERM and waits up to d; it reports whether the process
// ended in time (it is killed otherwise).
func (p *proc) stop(d time.Duration) bool {
	if p.exited {
		return true
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	return p.wait(d)
}

// wait waits up to d for the process to end on its own, and kills it if it
// does not.
func (p *proc) wait(d time.Duration) bool {
	if p.exited {
		return true
	}
	defer func() { p.exited = true }()
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return false
	}
}

// agentExitLimit is how long a revoked agent may take to exit.
const agentExitLimit = 10 * time.Second

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// revokeFault runs a server and an agent, revokes the client while a backup
// (even trials) or a restore (odd trials) of it runs, and checks that the
// agent exits within seconds, that the job ends failed, and that the
// client's earlier saveset still restores exactly from the server's home.
func (c *campaign) revokeFault(t *Trial, d *trialDir, i int) {
	mid := "backup"
	if i%2 == 1 {
		mid = "restore"
	}
	t.Fault = "client revoked mid-" + mid
	srvHome, agHome := filepath.Join(d.root, "server"), filepath.Join(d.root, "agent")
	port, err := freePort()
	if err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	lines := make(chan string, 64)
	srv, err := c.start(srvHome, nil, lines, "server", "--home", srvHome, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	defer srv.stop(10 * time.Second)
	if !waitLine(lines, "listening", 60*time.Second) {
		t.Outcome, t.Detail = Hang, "the server did not start listening within 60 s: "+srv.out.String()
		return
	}
	tok := c.kuraCmd(t, srvHome, nil, "token", "create", "--home", srvHome)
	if tok.Exit != 0 {
		t.Outcome, t.Detail = Skipped, "token create: "+tok.Output
		return
	}
	if r := c.kuraCmd(t, agHome, nil, "agent", "enroll", "--home", agHome, "--server", url, "--token", lastLine(tok.stdout), "--name", "web1"); r.Exit != 0 {
		t.Outcome, t.Detail = Skipped, "enroll: "+r.Output
		return
	}
	ag, err := c.start(agHome, nil, nil, "agent", "run", "--home", agHome)
	if err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	defer ag.wait(0)
	admin, err := os.ReadFile(filepath.Join(srvHome, "admin.token"))
	if err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	env := []string{"KURA_SERVER=" + url, "KURA_TOKEN=" + strings.TrimSpace(string(admin))}
	if r := c.kuraCmd(t, d.home, env, "backup", "--client", "web1", c.src); r.Exit != 0 {
		t.Outcome, t.Detail = Skipped, fmt.Sprintf("first backup through the agent: exit %d", r.Exit)
		if r.Exit == -1 {
			t.Outcome = Hang
		}
		return
	}
	var job Command
	switch mid {
	case "backup":
		job = c.kuraCmd(t, d.home, env, "backup", "--client", "web1", "--bwlimit", "64Kbit", "--detach", c.big)
	case "restore":
		if r := c.kuraCmd(t, d.home, env, "backup", "--client", "web1", c.big); r.Exit != 0 {
			t.Outcome, t.Detail = Skipped, fmt.Sprintf("second backup through the agent: exit %d", r.Exit)
			return
		}
		job = c.kuraCmd(t, d.home, env, "restore", "--client", "web1", "2", "--bwlimit", "64Kbit", "--detach", "--to", d.target("target-revoke"))
	}
	if job.Exit != 0 {
		t.Outcome, t.Detail = Skipped, "start the job: "+job.Output
		return
	}
	jobID := lastLine(job.stdout)
	// Wait until the job runs, then a random moment more.
	state := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if state = c.jobState(d.home, env, jobID); state == "running" {
			break
		}
	}
	if state != "running" {
		t.Outcome, t.Detail = Skipped, "the job never ran: "+state
		return
	}
	time.Sleep(time.Duration(c.rng.IntN(1500)) * time.Millisecond) // the fault's moment
	revoked := time.Now()
	if r := c.kuraCmd(t, d.home, env, "client", "revoke", "web1"); r.Exit != 0 {
		t.Outcome, t.Detail = Detected, "revoke failed: "+r.Output
		return
	}
	// "Within seconds": a revoked agent stops its job and exits; the job
	// itself would run for about a minute more at 64 Kbit/s.
	if !ag.wait(agentExitLimit) {
		t.Outcome, t.Detail = Hang, fmt.Sprintf("the agent was still running %v after its revocation (killed); its log: %s", agentExitLimit, tail(ag.out.String(), 800))
		if tr, err := snapshot(d.target("target-revoke")); err == nil && len(tr) > 0 {
			t.Detail += fmt.Sprintf("; %d entries restored by then", len(tr))
		}
		return
	}
	t.Detail += fmt.Sprintf("agent exited %.1fs after the revocation; ", time.Since(revoked).Seconds())
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if state = c.jobState(d.home, env, jobID); state != "running" && state != "queued" && state != "waiting" {
			break
		}
	}
	t.Detail += "job " + jobID + " ended " + state + "; "
	if state == "running" || state == "queued" || state == "waiting" {
		t.Outcome = Hang
		t.Detail += "the job did not end within 60 s of the revocation; "
		return
	}
	if !srv.stop(30 * time.Second) {
		t.Outcome, t.Detail = Hang, t.Detail+"the server did not stop within 30 s of SIGTERM; "
		return
	}
	// The client's first saveset restores exactly from the server's home.
	to := d.target("target-after")
	r := c.kuraCmd(t, srvHome, nil, "restore", "1", "--to", to)
	got, err := snapshot(filepath.Join(to, strings.TrimPrefix(c.src, "/")))
	diff := ""
	if err != nil {
		diff = err.Error()
	} else {
		diff = c.tree2.diff(got)
	}
	switch {
	case r.Exit == -1:
		t.Outcome = Hang
	case r.Exit == 0 && diff != "":
		t.Outcome, t.Detail = Silent, t.Detail+"restore of the earlier saveset exited 0 but differs: "+diff
	case r.Exit != 0 || diff != "":
		t.Outcome, t.Lost, t.Detail = Detected, true, t.Detail+"the earlier saveset no longer restores; "
	case state == "succeeded":
		// The job ended before the revocation reached it.
		t.Outcome = Harmless
		t.Detail += "the job finished before the revocation reached it; "
	default:
		t.Outcome = Detected
	}
}

func (c *campaign) jobState(home string, env []string, id string) string {
	r := c.kuraCmd(nil, home, env, "jobs", "show", id, "--json")
	var j map[string]any
	if json.Unmarshal([]byte(r.stdout), &j) != nil {
		return "unknown: " + tail(r.Output, 200)
	}
	if s, ok := j["state"].(string); ok {
		return s
	}
	if jj, ok := j["job"].(map[string]any); ok {
		if s, ok := jj["state"].(string); ok {
			return s
		}
	}
	return "unknown"
}

func waitLine(lines <-chan string, substr string, d time.Duration) bool {
	timer := time.After(d)
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, substr) {
				return true
			}
		case <-timer:
			return false
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}
