package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// A cluster is a Kura server and its agents, started as subprocesses of
// this binary for the remote parts of a run and stopped after them: the
// server listens on a free loopback port, every agent enrolls with a
// one-time token and dials in, and the admin commands reach the server
// through KURA_SERVER and KURA_TOKEN. Everything lives in one folder,
// removed by stop.
type cluster struct {
	rn      *runner
	dir     string // the cluster's folder: server home, agent homes, logs
	home    string // the server's home
	url     string
	token   string // the admin token
	server  *exec.Cmd
	agents  []*exec.Cmd
	clients []string
	logs    []string // the log file of each process, for errors
	agent   agentSetup
}

// agentSetup is what the agents of a cluster run with beyond kura agent
// run: its flags (--allow-plugin) and environment (the database's).
type agentSetup struct {
	Args, Env []string
}

// clusterStart is how long a server may take to listen and agents to
// connect before the run gives up.
const clusterStart = 60 * time.Second

// libSpec is a library made in the server's home before it starts.
type libSpec struct {
	Name  string
	Combo Combo
}

// startCluster creates dir with a server home holding libs, starts the
// server and one agent per client name, and waits until every agent is
// connected.
func (rn *runner) startCluster(ctx context.Context, dir string, libs []libSpec, clients []string) (_ *cluster, err error) {
	return rn.startClusterWith(ctx, dir, libs, clients, agentSetup{})
}

// startClusterWith is startCluster whose agents run with setup.
func (rn *runner) startClusterWith(ctx context.Context, dir string, libs []libSpec, clients []string, setup agentSetup) (_ *cluster, err error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	c := &cluster{rn: rn, dir: dir, home: filepath.Join(dir, "server"), clients: clients, agent: setup}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if err := createLibraries(c.home, libs); err != nil {
		return nil, fmt.Errorf("creating the libraries: %w", err)
	}
	if err := c.startServer(ctx); err != nil {
		return nil, err
	}
	for _, name := range clients {
		if err := c.startAgent(ctx, name); err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
	}
	if err := c.waitConnected(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// createLibraries makes a Kura home with the libraries (two drives each).
func createLibraries(home string, libs []libSpec) error {
	env, err := engine.Open(home)
	if err != nil {
		return err
	}
	defer env.Close()
	for _, l := range libs {
		if _, err := env.CreateLibrary(library.Config{Name: l.Name, BlockSize: l.Combo.Block, BufferSize: l.Combo.Buffer}); err != nil {
			return fmt.Errorf("library %s: %w", l.Name, err)
		}
	}
	return nil
}

// serverLine is what `kura server` prints once it listens.
const serverLine = "Kura server listening on "

// parseServerURL finds the server's address in its first lines of output.
func parseServerURL(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), serverLine)
	if !ok || !strings.HasPrefix(rest, "https://") {
		return "", false
	}
	return strings.Fields(rest)[0], true
}

func (c *cluster) logFile(name string) (*os.File, error) {
	p := filepath.Join(c.dir, name+".log")
	c.logs = append(c.logs, p)
	return os.Create(p)
}

// background starts a long-running kura process whose stderr goes to its
// log; it gets SIGTERM when stopped (or when ctx ends).
func (c *cluster) background(ctx context.Context, name string, argv []string, stdout io.Writer, env ...string) (*exec.Cmd, error) {
	log, err := c.logFile(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = c.rn.env(env)
	cmd.Stdout, cmd.Stderr = stdout, log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	log.Close() // the child holds its own descriptor
	return cmd, nil
}

func (c *cluster) startServer(ctx context.Context) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	argv := []string{c.rn.o.Kura, "--home", c.home, "server", "--listen", "127.0.0.1:0", "--name", "bench"}
	c.server, err = c.background(ctx, "server", argv, pw)
	pw.Close()
	if err != nil {
		pr.Close()
		return fmt.Errorf("starting the server: %w", err)
	}
	found := make(chan string, 1)
	go func() {
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := parseServerURL(sc.Text()); ok {
				found <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr) // the rest of its output
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			return fmt.Errorf("the server exited without listening: %s", c.logTail())
		}
		c.url = u
	case <-time.After(clusterStart):
		return fmt.Errorf("the server did not listen within %s: %s", clusterStart, c.logTail())
	case <-ctx.Done():
		return ctx.Err()
	}
	b, err := os.ReadFile(filepath.Join(c.home, "admin.token"))
	if err != nil {
		return fmt.Errorf("reading the admin token: %w", err)
	}
	c.token = strings.TrimSpace(string(b))
	return nil
}

// adminEnv is the environment of an admin command (the token is not
// recorded: Run.Env gets displayEnv).
func (c *cluster) adminEnv() []string {
	return []string{"KURA_SERVER=" + c.url, "KURA_TOKEN=" + c.token}
}

// displayEnv is adminEnv as results.json records it.
func (c *cluster) displayEnv() []string {
	return []string{"KURA_SERVER=" + c.url, `KURA_TOKEN=$(cat ` + filepath.Join(c.home, "admin.token") + `)`}
}

// admin runs an admin command against the server and returns its stdout.
func (c *cluster) admin(ctx context.Context, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, c.rn.o.Kura, args...)
	cmd.Env = c.rn.env(c.adminEnv())
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kura %s: %w: %s", strings.Join(args, " "), err, tail(errb.String()))
	}
	return out.String(), nil
}

func (c *cluster) agentHome(name string) string { return filepath.Join(c.dir, "agent-"+name) }

func (c *cluster) startAgent(ctx context.Context, name string) error {
	out, err := c.admin(ctx, "token", "create", "--name", name, "--expires", "10m")
	if err != nil {
		return err
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return errors.New("kura token create printed no token")
	}
	tok := lines[len(lines)-1]
	home := c.agentHome(name)
	if _, err := c.admin(ctx, "--home", home, "agent", "enroll", "--server", c.url, "--token", tok, "--name", name); err != nil {
		return err
	}
	a, err := c.background(ctx, "agent-"+name, append([]string{c.rn.o.Kura, "--home", home, "agent", "run"}, c.agent.Args...), io.Discard, c.agent.Env...)
	if err != nil {
		return err
	}
	c.agents = append(c.agents, a)
	return nil
}

// waitConnected polls the server's client list until every agent is
// connected.
func (c *cluster) waitConnected(ctx context.Context) error {
	deadline := time.Now().Add(clusterStart)
	for {
		out, err := c.admin(ctx, "client", "list", "--json")
		if err == nil {
			var cs []struct {
				Name      string `json:"name"`
				Connected bool   `json:"connected"`
			}
			if json.Unmarshal([]byte(out), &cs) == nil {
				up := 0
				for _, cl := range cs {
					for _, n := range c.clients {
						if cl.Name == n && cl.Connected {
							up++
						}
					}
				}
				if up == len(c.clients) {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agents %v did not all connect within %s (last: %v): %s", c.clients, clusterStart, err, c.logTail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends the agents, then the server (SIGTERM, then SIGKILL after the
// wait delay), and removes the cluster's folder.
func (c *cluster) stop() {
	for _, a := range c.agents {
		terminate(a)
	}
	if c.server != nil {
		terminate(c.server)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		c.rn.logf("removing %s: %v", c.dir, err)
	}
}

func terminate(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// cpu returns the CPU time (user + system, all threads) the server and
// the agents have used so far, from /proc (zero where it cannot be read).
func (c *cluster) cpu() (server, agents float64) {
	if c.server != nil && c.server.Process != nil {
		server = procCPU(c.server.Process.Pid)
	}
	for _, a := range c.agents {
		if a.Process != nil {
			agents += procCPU(a.Process.Pid)
		}
	}
	return server, agents
}

// procCPU reads utime + stime of a process from /proc/PID/stat, in
// seconds (the kernel reports them in USER_HZ, 100 per second).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU takes utime and stime (fields 14 and 15) from a
// /proc/PID/stat line; the command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseProcStatCPU(stat string) float64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return float64(ut+st) / 100
}

// measure runs fn and records the server's and agents' CPU time during it.
func (c *cluster) measure(r *Run, fn func()) {
	s0, a0 := c.cpu()
	fn()
	s1, a1 := c.cpu()
	r.ServerCPUSeconds, r.AgentCPUSeconds = max(s1-s0, 0), max(a1-a0, 0)
}

// logTail is the end of every process log, for an error message.
func (c *cluster) logTail() string {
	var parts []string
	for _, p := range c.logs {
		b, err := os.ReadFile(p)
		if err != nil || len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		parts = append(parts, filepath.Base(p)+": "+tail(string(b)))
	}
	if len(parts) == 0 {
		return "no log output"
	}
	return strings.Join(parts, "; ")
}
