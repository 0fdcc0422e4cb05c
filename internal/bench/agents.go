package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/pki"
)

// AgentsOptions configure `kura bench agents`: one real server (a `kura
// server` process) and many agents in this process, each enrolled with a
// one-time token of its own and holding its own mutual-TLS connection;
// first idle, then Busy of them backing up a few small files at once.
type AgentsOptions struct {
	Kura   string // the kura binary that runs the server (os.Executable())
	Dir    string // scratch folder: server home, agent homes, sources (removed after)
	Agents int    // connected agents (1000)
	Busy   int    // of them, backing up at once (0: idle only; the CLI's default is 100)
	Files  int    // files in each busy agent's selection (4)
	// FileSize is the size of each file (16 KiB).
	FileSize int
	// Idle is how long the idle agents are watched (60 s): the server's
	// CPU over it is the heartbeat cost.
	Idle time.Duration
	// Drives of the benchmark's library (default Busy, at most
	// library.MaxDrives): with a drive free for every job, the start
	// latency is the queue's and the agents', not a wait for a drive.
	Drives int
	// Lone is how many backups run one at a time after the burst (10): the
	// start latency of a job that meets an idle queue and a free drive.
	Lone int
	// Enrollers is how many agents enroll at once (8).
	Enrollers int
	Log       io.Writer // progress lines
}

func (o *AgentsOptions) applyDefaults() error {
	if o.Agents == 0 {
		o.Agents = 1000
	}
	if o.Files == 0 {
		o.Files = 4
	}
	if o.FileSize == 0 {
		o.FileSize = 16 << 10
	}
	if o.Idle == 0 {
		o.Idle = time.Minute
	}
	if o.Drives == 0 {
		o.Drives = min(max(o.Busy, 1), library.MaxDrives)
	}
	if o.Lone == 0 {
		o.Lone = 10
	}
	if o.Enrollers == 0 {
		o.Enrollers = 8
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch {
	case o.Agents < 1:
		return fmt.Errorf("agents %d: want at least 1", o.Agents)
	case o.Lone < 0:
		return fmt.Errorf("lone %d: want 0 or more", o.Lone)
	case o.Busy < 0 || o.Busy > o.Agents:
		return fmt.Errorf("busy %d: want 0 to the number of agents (%d)", o.Busy, o.Agents)
	case o.Drives < 1 || o.Drives > library.MaxDrives:
		return fmt.Errorf("drives %d: want 1 to %d", o.Drives, library.MaxDrives)
	case o.Files < 1 || o.FileSize < 0:
		return fmt.Errorf("files %d of %d bytes: want at least one file", o.Files, o.FileSize)
	case o.Idle < 0:
		return fmt.Errorf("idle %s: want a positive time", o.Idle)
	case o.Kura == "":
		return errors.New("no kura binary to run the server")
	case o.Dir == "":
		return errors.New("no scratch folder")
	}
	return nil
}

// String is the configuration as the report records it.
func (o AgentsOptions) String() string {
	return fmt.Sprintf("agents=%d busy=%d lone=%d files=%d×%dB idle=%s drives=%d", o.Agents, o.Busy, o.Lone, o.Files, o.FileSize, o.Idle, o.Drives)
}

// ServerSample is what /proc and GET /server tell of the server process at
// one moment.
type ServerSample struct {
	RSSBytes   int64   `json:"rss_bytes"`      // VmRSS
	PeakRSS    int64   `json:"peak_rss_bytes"` // VmHWM: the highest RSS so far
	CPUSeconds float64 `json:"cpu_seconds"`    // user + system since it started
	OpenFiles  int     `json:"open_files"`     // entries of /proc/PID/fd
	Threads    int     `json:"threads"`
	Goroutines int     `json:"goroutines"` // GET /api/v1/server
}

// AgentsResult is a run of the agents benchmark.
type AgentsResult struct {
	Config string `json:"config"`
	Agents int    `json:"agents"`
	Busy   int    `json:"busy"`
	// Enrollment and connection.
	EnrollSeconds  float64 `json:"enroll_seconds"`  // every agent enrolled (token flow)
	ConnectSeconds float64 `json:"connect_seconds"` // every agent started to connected
	// Idle: all agents connected, none working.
	IdleStart   ServerSample `json:"idle_start"`
	IdleEnd     ServerSample `json:"idle_end"`
	IdleSeconds float64      `json:"idle_seconds"`
	// HeartbeatCPU is the server's CPU per agent per minute while idle
	// (order polls, their TLS, the queue's own ticks), in milliseconds.
	HeartbeatCPUms float64 `json:"heartbeat_cpu_ms_per_agent_minute"`
	// Busy: Busy agents back up at once.
	BusyEnd     ServerSample `json:"busy_end"`
	BusySeconds float64      `json:"busy_seconds"` // first submit to last job's end
	BusyCPU     float64      `json:"busy_cpu_seconds"`
	Succeeded   int          `json:"succeeded"`
	Failed      []string     `json:"failed,omitempty"`
	// Submit latency: the request sent to its answer (the job queued: its
	// row committed), in seconds.
	SubmitP50 float64 `json:"submit_p50_seconds"`
	SubmitP99 float64 `json:"submit_p99_seconds"`
	// Queued to running: the submit's answer (its job row committed just
	// before) to the job's start time in the catalog, 0 when the job
	// started before the answer arrived; in seconds. The goal's figure.
	QueuedP50 float64 `json:"queued_start_p50_seconds"`
	QueuedP99 float64 `json:"queued_start_p99_seconds"`
	// Start latency: submitted (the request sent) to running (the job's
	// start time in the catalog), in seconds; and submitted to ended.
	StartP50 float64 `json:"start_p50_seconds"`
	StartP99 float64 `json:"start_p99_seconds"`
	StartMax float64 `json:"start_max_seconds"`
	EndP50   float64 `json:"end_p50_seconds"`
	EndP99   float64 `json:"end_p99_seconds"`
	// Lone jobs: one at a time, each submitted once the one before ended.
	LoneJobs     int     `json:"lone_jobs"`
	LoneStartP50 float64 `json:"lone_start_p50_seconds"`
	LoneStartP99 float64 `json:"lone_start_p99_seconds"`
	// The agents' side: this process's CPU over the idle window.
	AgentsIdleCPU float64 `json:"agents_idle_cpu_seconds"`
}

// Goals of issue 14 on the project's 2-core machine.
const (
	GoalRSS      = 300 << 20       // server RSS with 1,000 connected agents
	GoalStartP99 = 1 * time.Second // a queued job on a free drive starts within
)

// RunAgents runs the benchmark: a server process, o.Agents enrolled agents
// in this process, idle for o.Idle, then o.Busy backups at once.
func RunAgents(ctx context.Context, o AgentsOptions) (_ *AgentsResult, err error) {
	if err := o.applyDefaults(); err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(o.Log, "bench agents: "+format+"\n", a...) }
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	rn := &runner{o: RunOptions{Kura: o.Kura, Scratch: dir, Log: o.Log}}
	c := &cluster{rn: rn, dir: filepath.Join(dir, "agents"), home: filepath.Join(dir, "agents", "server")}
	if err := os.RemoveAll(c.dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (%s)", err, c.logTail())
		}
		c.stop()
	}()
	const libName = "agents"
	if err := createAgentsLibrary(c.home, libName, o.Drives, max(o.Busy, 1)); err != nil {
		return nil, err
	}
	if err := c.startServer(ctx); err != nil {
		return nil, err
	}
	pid := c.server.Process.Pid
	tok, err := pki.ParseTokenKind(c.token, pki.KindAdmin)
	if err != nil {
		return nil, fmt.Errorf("the admin token: %w", err)
	}
	adm, err := apiclient.New(c.url, pki.PinnedTLSConfig(tok.CAFingerprint, nil), c.token)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	res := &AgentsResult{Config: o.String(), Agents: o.Agents, Busy: o.Busy}
	sample := func() ServerSample {
		s := procSample(pid)
		if info, err := adm.Server(ctx); err == nil {
			s.Goroutines = info.Goroutines
		}
		return s
	}

	// Enroll: a one-time token each, the agent's own key and certificate.
	logf("enrolling %d agents (one token each) with %s", o.Agents, c.url)
	names := make([]string, o.Agents)
	for i := range names {
		names[i] = fmt.Sprintf("a%04d", i+1)
	}
	t0 := time.Now()
	if err := parallel(ctx, o.Enrollers, names, func(name string) error {
		t, err := adm.CreateToken(ctx, api.TokenRequest{Name: name, ExpiresSeconds: 3600})
		if err != nil {
			return err
		}
		_, err = agent.Enroll(ctx, filepath.Join(c.dir, "agent", name), c.url, t.Token, name)
		return err
	}); err != nil {
		return nil, fmt.Errorf("enrolling: %w", err)
	}
	res.EnrollSeconds = time.Since(t0).Seconds()

	// Connect: every agent runs its order loop in this process.
	logf("starting %d agents", o.Agents)
	alog, err := c.logFile("agents")
	if err != nil {
		return nil, err
	}
	defer alog.Close()
	actx, stopAgents := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopAgents(); wg.Wait() }()
	t0 = time.Now()
	for _, name := range names {
		a, err := agent.Open(agent.Options{Home: filepath.Join(c.dir, "agent", name), Log: alog})
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = a.Run(actx) }()
	}
	if err := waitAgentsConnected(ctx, adm, o.Agents); err != nil {
		return nil, err
	}
	res.ConnectSeconds = time.Since(t0).Seconds()
	logf("%d agents connected in %.1f s; idle for %s", o.Agents, res.ConnectSeconds, o.Idle)

	// Idle.
	res.IdleStart = sample()
	self0 := selfCPU()
	t0 = time.Now()
	select {
	case <-time.After(o.Idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res.IdleEnd = sample()
	res.IdleSeconds = time.Since(t0).Seconds()
	res.AgentsIdleCPU = selfCPU() - self0
	if res.IdleSeconds > 0 {
		res.HeartbeatCPUms = (res.IdleEnd.CPUSeconds - res.IdleStart.CPUSeconds) * 1000 / float64(o.Agents) / (res.IdleSeconds / 60)
	}
	// run submits a backup of agent i and waits for its end; it returns
	// the start and end latencies.
	run := func(i int, src string) (float64, float64, error) {
		sent := time.Now()
		ids, err := adm.Submit(ctx, api.JobRequest{Kind: api.KindBackup, Client: names[i], Paths: []string{src}, Library: libName})
		if err != nil {
			return 0, 0, err
		}
		for {
			j, err := adm.Job(ctx, ids[0])
			if err != nil {
				return 0, 0, err
			}
			switch j.State {
			case "queued", "waiting", "running":
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return 0, 0, ctx.Err()
				}
				continue
			case "succeeded", "warnings":
			default:
				return 0, 0, fmt.Errorf("job %d (%s): %s %s", j.ID, names[i], j.State, j.Error)
			}
			return j.Started.Sub(sent).Seconds(), j.Finished.Sub(sent).Seconds(), nil
		}
	}
	if o.Busy == 0 && o.Lone == 0 {
		res.BusyEnd = res.IdleEnd
		return res, nil
	}

	if o.Busy == 0 {
		res.BusyEnd = res.IdleEnd
		return res, runLone(ctx, o, res, c.dir, names, run, logf)
	}

	// Busy: o.Busy agents back up a few small files each, submitted at once.
	srcs := make([]string, o.Busy)
	for i := range srcs {
		srcs[i] = filepath.Join(c.dir, "src", names[i])
		if err := writeSmallFiles(srcs[i], o.Files, o.FileSize, uint64(i)); err != nil {
			return nil, err
		}
	}
	logf("%d agents back up %d files of %d bytes each, at once", o.Busy, o.Files, o.FileSize)
	type sub struct {
		id             int64
		sent, accepted time.Time
	}
	subs := make([]sub, o.Busy)
	cpu0 := procCPU(pid)
	t0 = time.Now()
	idx := make([]int, o.Busy)
	for i := range idx {
		idx[i] = i
	}
	if err := parallel(ctx, o.Enrollers, idx, func(i int) error {
		sent := time.Now()
		ids, err := adm.Submit(ctx, api.JobRequest{Kind: api.KindBackup, Client: names[i], Paths: []string{srcs[i]}, Library: libName})
		if err != nil {
			return err
		}
		subs[i] = sub{id: ids[0], sent: sent, accepted: time.Now()}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("submitting: %w", err)
	}
	var starts, queued, ends []float64
	pending := slices.Clone(idx)
	for len(pending) > 0 {
		var next []int
		for _, i := range pending {
			j, err := adm.Job(ctx, subs[i].id)
			if err != nil {
				return nil, err
			}
			switch j.State {
			case "queued", "waiting", "running":
				next = append(next, i)
				continue
			case "succeeded", "warnings":
				res.Succeeded++
			default:
				res.Failed = append(res.Failed, fmt.Sprintf("job %d (%s): %s %s", j.ID, names[i], j.State, j.Error))
			}
			starts = append(starts, j.Started.Sub(subs[i].sent).Seconds())
			queued = append(queued, max(j.Started.Sub(subs[i].accepted).Seconds(), 0))
			ends = append(ends, j.Finished.Sub(subs[i].sent).Seconds())
		}
		pending = next
		if len(pending) > 0 {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	res.BusySeconds = time.Since(t0).Seconds()
	res.BusyCPU = procCPU(pid) - cpu0
	res.BusyEnd = sample()
	var accepted []float64
	for _, sb := range subs {
		accepted = append(accepted, sb.accepted.Sub(sb.sent).Seconds())
	}
	res.SubmitP50, res.SubmitP99 = percentile(accepted, 50), percentile(accepted, 99)
	res.StartP50, res.StartP99, res.StartMax = percentile(starts, 50), percentile(starts, 99), percentile(starts, 100)
	res.QueuedP50, res.QueuedP99 = percentile(queued, 50), percentile(queued, 99)
	res.EndP50, res.EndP99 = percentile(ends, 50), percentile(ends, 99)
	logf("%d of %d backups succeeded; start p50 %.3f s, p99 %.3f s", res.Succeeded, o.Busy, res.StartP50, res.StartP99)
	return res, runLone(ctx, o, res, c.dir, names, run, logf)
}

// runLone runs o.Lone backups one at a time, each on an agent of its own,
// each submitted when the one before has ended.
func runLone(ctx context.Context, o AgentsOptions, res *AgentsResult, dir string, names []string,
	run func(i int, src string) (float64, float64, error), logf func(string, ...any)) error {
	if o.Lone == 0 {
		return nil
	}
	logf("%d backups one at a time", o.Lone)
	var starts []float64
	for k := range o.Lone {
		i := (o.Busy + k) % len(names)
		src := filepath.Join(dir, "lone", names[i])
		if err := writeSmallFiles(src, o.Files, o.FileSize, uint64(1000+k)); err != nil {
			return err
		}
		st, _, err := run(i, src)
		if err != nil {
			res.Failed = append(res.Failed, err.Error())
			continue
		}
		starts = append(starts, st)
	}
	res.LoneJobs = len(starts)
	res.LoneStartP50, res.LoneStartP99 = percentile(starts, 50), percentile(starts, 99)
	logf("lone backups: start p50 %.3f s, p99 %.3f s", res.LoneStartP50, res.LoneStartP99)
	return nil
}

// createAgentsLibrary makes the server home with a library of drives
// drives and tapes tapes (small ones: the backups are small).
func createAgentsLibrary(home, name string, drives, tapes int) error {
	env, err := engine.Open(home)
	if err != nil {
		return err
	}
	defer env.Close()
	_, err = env.CreateLibrary(library.Config{Name: name, Drives: drives, Slots: tapes, TapeSize: 64 << 20})
	if err != nil {
		return fmt.Errorf("library %s: %w", name, err)
	}
	return nil
}

// parallel runs fn on every item, n at a time; the first error stops it.
func parallel[T any](ctx context.Context, n int, items []T, fn func(T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ch := make(chan T)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if ctx.Err() != nil {
					continue
				}
				if err := fn(it); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// waitAgentsConnected polls the server's client list until n clients are
// connected.
func waitAgentsConnected(ctx context.Context, adm *apiclient.Client, n int) error {
	deadline := time.Now().Add(clusterStart + time.Duration(n)*20*time.Millisecond)
	up := 0
	for {
		cs, err := adm.Clients(ctx)
		if err == nil {
			up = 0
			for _, cl := range cs {
				if cl.Connected {
					up++
				}
			}
			if up >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d agents connected (last error: %v)", up, n, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// writeSmallFiles makes dir with n files of size bytes of pseudo-random
// (incompressible) data.
func writeSmallFiles(dir string, n, size int, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 14))
	b := make([]byte, size)
	for k := range n {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", k)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// percentile is the p-th percentile of xs (nearest rank); 0 when empty.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[max(0, min(k, len(s)-1))]
}

// procSample reads a process's RSS, peak RSS, CPU, threads and open files
// from /proc (zero where it cannot be read).
func procSample(pid int) ServerSample {
	s := ServerSample{CPUSeconds: procCPU(pid)}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		s.RSSBytes, s.PeakRSS, s.Threads = parseProcStatus(string(b))
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.OpenFiles = len(fds)
	}
	return s
}

// parseProcStatus takes VmRSS, VmHWM (in bytes) and Threads from
// /proc/PID/status.
func parseProcStatus(status string) (rss, hwm int64, threads int) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		case "Threads":
			threads = int(n)
		}
	}
	return rss, hwm, threads
}

// selfCPU is this process's CPU time so far (user + system), in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// WriteAgentsReport writes the result as a Markdown table, with the goals.
func WriteAgentsReport(w io.Writer, r *AgentsResult) error {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	goal := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Agents benchmark: %s\n\n", r.Config)
	fmt.Fprintf(&b, "| | idle, %d agents connected | %d backing up at once |\n|---|---:|---:|\n", r.Agents, r.Busy)
	fmt.Fprintf(&b, "| server RSS (peak) | %s (%s) | %s (%s) |\n", mib(r.IdleEnd.RSSBytes), mib(r.IdleEnd.PeakRSS), mib(r.BusyEnd.RSSBytes), mib(r.BusyEnd.PeakRSS))
	fmt.Fprintf(&b, "| server CPU | %.2f s in %.0f s | %.2f s in %.1f s |\n", r.IdleEnd.CPUSeconds-r.IdleStart.CPUSeconds, r.IdleSeconds, r.BusyCPU, r.BusySeconds)
	fmt.Fprintf(&b, "| open files | %d | %d |\n", r.IdleEnd.OpenFiles, r.BusyEnd.OpenFiles)
	fmt.Fprintf(&b, "| goroutines | %d | %d |\n", r.IdleEnd.Goroutines, r.BusyEnd.Goroutines)
	fmt.Fprintf(&b, "| threads | %d | %d |\n", r.IdleEnd.Threads, r.BusyEnd.Threads)
	fmt.Fprintf(&b, "| heartbeat cost | %.3f ms CPU per agent per minute | |\n", r.HeartbeatCPUms)
	fmt.Fprintf(&b, "| job submit (request → queued, answered) p50 / p99 | | %.3f / %.3f s |\n", r.SubmitP50, r.SubmitP99)
	fmt.Fprintf(&b, "| job start (queued → running) p50 / p99 | | %.3f / %.3f s |\n", r.QueuedP50, r.QueuedP99)
	fmt.Fprintf(&b, "| job start (submitted → running) p50 / p99 / max | | %.3f / %.3f / %.3f s |\n", r.StartP50, r.StartP99, r.StartMax)
	fmt.Fprintf(&b, "| job end (submitted → ended) p50 / p99 | | %.2f / %.2f s |\n", r.EndP50, r.EndP99)
	fmt.Fprintf(&b, "| backups succeeded | | %d of %d |\n", r.Succeeded, r.Busy)
	if r.LoneJobs > 0 {
		fmt.Fprintf(&b, "| job start, one at a time (%d jobs) p50 / p99 | %.3f / %.3f s | |\n", r.LoneJobs, r.LoneStartP50, r.LoneStartP99)
	}
	fmt.Fprintf(&b, "\nEnrolled (token flow) in %.1f s, connected in %.1f s; the agents (this process) used %.2f s CPU while idle.\n",
		r.EnrollSeconds, r.ConnectSeconds, r.AgentsIdleCPU)
	fmt.Fprintf(&b, "Goals: server RSS ≤ %d MiB with %d agents connected: %s", GoalRSS>>20, r.Agents, goal(max(r.IdleEnd.PeakRSS, r.IdleEnd.RSSBytes) <= GoalRSS))
	if r.Busy > 0 {
		fmt.Fprintf(&b, "; queued → running p99 ≤ %s with %d submitted at once: %s (submitted → running: %s)", GoalStartP99, r.Busy,
			goal(r.QueuedP99 <= GoalStartP99.Seconds()), goal(r.StartP99 <= GoalStartP99.Seconds()))
	}
	if r.LoneJobs > 0 {
		fmt.Fprintf(&b, "; job start p99 ≤ %s one at a time: %s", GoalStartP99, goal(r.LoneStartP99 <= GoalStartP99.Seconds()))
	}
	b.WriteString(".\n")
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "- failed: %s\n", f)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
