package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The remote parts: Table 5-5 (the Table 5-1 backups through an agent) and
// the drives test (Tables 5-6…5-9). Each repeat of a set gets its own
// cluster — a server and two agents on loopback, with one library per
// combination and one per drives variant — so that, as in Table 5-1, every
// backup writes to a fresh library, and the disk holds at most one
// repeat's savesets.

// Client names of the bench agents.
const (
	clientA = "bench1"
	clientB = "bench2"
)

// remoteLibrary is the library of a Table 5-5 combination.
func remoteLibrary(c Combo) string { return fmt.Sprintf("t55-%dk", c.Block>>10) }

// drivesLibrary is the library of a drives variant (two drives each).
func drivesLibrary(variant string) string { return "drives-" + variant }

// drivesVariants are the drives test's variants in the order they run.
var drivesVariants = []string{VariantOne, VariantStreams, VariantAgents}

// splitSource lists what a source is made of for the drives test — the
// entries of its first folder level that has more than one — and splits
// them into two halves of about equal bytes (largest first, each to the
// lighter half; the agent's --streams split does the same). A source that
// is one file cannot be split.
func splitSource(src string) (entries []string, halves [2][]string, err error) {
	dir := src
	for {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, halves, err
		}
		if len(ents) == 1 && ents[0].IsDir() {
			dir = filepath.Join(dir, ents[0].Name())
			continue
		}
		if len(ents) < 2 {
			return nil, halves, fmt.Errorf("%s holds one file: it cannot be split over two drives", src)
		}
		for _, e := range ents {
			entries = append(entries, filepath.Join(dir, e.Name()))
		}
		break
	}
	type item struct {
		path string
		size int64
	}
	items := make([]item, len(entries))
	for i, p := range entries {
		items[i] = item{p, dirSize(p)}
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			items[i].size = fi.Size()
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].size != items[j].size {
			return items[i].size > items[j].size
		}
		return items[i].path < items[j].path
	})
	var sizes [2]int64
	for _, it := range items {
		k := 0
		if sizes[1] < sizes[0] || sizes[1] == sizes[0] && len(halves[1]) < len(halves[0]) {
			k = 1
		}
		halves[k] = append(halves[k], it.path)
		sizes[k] += it.size
	}
	for i := range halves {
		sort.Strings(halves[i])
	}
	return entries, halves, nil
}

// remotePlan is what measureRemote does for a set.
type remotePlan struct {
	table55 bool
	drives  bool
	entries []string
	halves  [2][]string
}

func (p remotePlan) runsPerRepeat() int {
	n := 0
	if p.table55 {
		n += len(Combos)
	}
	if p.drives {
		n += len(drivesVariants)
	}
	return n
}

// planRemote decides the remote runs of a set, noting why the drives test
// skips it.
func (rn *runner) planRemote(si SetInfo) remotePlan {
	p := remotePlan{table55: rn.part(PartRemote)}
	if rn.part(PartDrives) {
		entries, halves, err := splitSource(filepath.Join(rn.o.Data, si.Name))
		if err != nil {
			rn.res.Notes = append(rn.res.Notes, fmt.Sprintf("drives test: set %s skipped: %v", si.Name, err))
		} else {
			p.drives, p.entries, p.halves = true, entries, halves
		}
	}
	return p
}

func (rn *runner) measureRemote(ctx context.Context, si SetInfo, plan remotePlan) {
	if plan.runsPerRepeat() == 0 {
		return
	}
	src := filepath.Join(rn.o.Data, si.Name)
	var libs []libSpec
	if plan.table55 {
		for _, c := range Combos {
			libs = append(libs, libSpec{remoteLibrary(c), c})
		}
	}
	clients := []string{clientA}
	if plan.drives {
		for _, v := range drivesVariants {
			libs = append(libs, libSpec{drivesLibrary(v), DefaultCombo})
		}
		clients = append(clients, clientB)
	}
	for rep := 1; rep <= rn.o.Repeats; rep++ {
		if ctx.Err() != nil {
			return
		}
		rn.logf("%s run %d: starting a server and %d agent(s) on loopback …", si.Name, rep, len(clients))
		dir := filepath.Join(rn.o.Scratch, fmt.Sprintf("cluster-%s-r%d", si.Name, rep))
		c, err := rn.startCluster(ctx, dir, libs, clients)
		if err != nil {
			rn.failRemote(si, plan, rep, fmt.Errorf("starting the server and agents: %w", err))
			continue
		}
		if plan.table55 {
			for _, combo := range Combos {
				if ctx.Err() != nil {
					break
				}
				rn.remoteBackup(ctx, c, si, src, combo, rep)
			}
		}
		if plan.drives {
			for _, v := range drivesVariants {
				if ctx.Err() != nil {
					break
				}
				rn.drivesRun(ctx, c, si, plan, v, rep)
			}
		}
		c.stop()
	}
}

// failRemote records every run of a repeat as failed (the cluster did not
// start).
func (rn *runner) failRemote(si SetInfo, plan remotePlan, rep int, err error) {
	base := Run{Set: si.Name, Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Files: int64(si.Files), Bytes: si.Bytes,
		Error: err.Error(), ExitCode: -1}
	if plan.table55 {
		for _, c := range Combos {
			r := base
			r.Test, r.Block, r.Buffer, r.Library = TestTable55, c.Block, c.Buffer, remoteLibrary(c)
			rn.add(r)
		}
	}
	if plan.drives {
		for _, v := range drivesVariants {
			r := base
			r.Test, r.Variant, r.Block, r.Buffer, r.Library = TestDrives, v, DefaultCombo.Block, DefaultCombo.Buffer, drivesLibrary(v)
			rn.add(r)
		}
	}
}

// remoteBackup is one Table 5-5 backup: the set read by agent bench1 and
// written into the combination's library on the server.
func (rn *runner) remoteBackup(ctx context.Context, c *cluster, si SetInfo, src string, combo Combo, rep int) {
	r := Run{Test: TestTable55, Set: si.Name, Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Block: combo.Block, Buffer: combo.Buffer,
		Level: rn.o.Compress, Files: int64(si.Files), Bytes: si.Bytes, Durable: true,
		Client: clientA, Library: remoteLibrary(combo), Streams: 1}
	rn.add(rn.agentBackup(ctx, c, r, src))
}

// agentBackup is r as `kura backup --client r.Client --vtl r.Library
// --compress r.Level --json src` through the cluster, with the server's
// and the agents' CPU time during it.
func (rn *runner) agentBackup(ctx context.Context, c *cluster, r Run, src string) Run {
	r.Env = c.displayEnv()
	r.Command = []string{rn.o.Kura, "backup", "--client", r.Client, "--vtl", r.Library, "--compress", r.Level, "--json", src}
	c.measure(&r, func() { r = rn.kura(ctx, r, c.adminEnv()) })
	return r
}

// drivesRun is one variant of the drives test on the same entries: one job
// on one drive; the same entries split over two drives by the agent
// (--streams 2); or two agents backing up one half each at the same time
// (both submitted with --detach, then both watched; the time runs from the
// first submission to the end of the second job).
func (rn *runner) drivesRun(ctx context.Context, c *cluster, si SetInfo, plan remotePlan, variant string, rep int) {
	r := Run{Test: TestDrives, Set: si.Name, Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Variant: variant,
		Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Level: rn.o.Compress, Files: int64(si.Files), Bytes: si.Bytes,
		Durable: true, Library: drivesLibrary(variant), Env: c.displayEnv()}
	backup := func(client string, extra []string, paths []string) []string {
		argv := []string{rn.o.Kura, "backup", "--client", client, "--vtl", r.Library, "--compress", rn.o.Compress, "--json"}
		argv = append(argv, extra...)
		return append(argv, paths...)
	}
	switch variant {
	case VariantOne, VariantStreams:
		r.Client, r.Streams = clientA, 1
		var extra []string
		if variant == VariantStreams {
			r.Streams, extra = 2, []string{"--streams", "2"}
		}
		r.Command = backup(clientA, extra, plan.entries)
		r.ColdCache = rn.cold()
		var out bytes.Buffer
		var p proc
		c.measure(&r, func() { p = rn.execute(ctx, r.Command, c.adminEnv(), &out, nil) })
		p.apply(&r)
		if r.ExitCode == 0 || r.ExitCode == 3 {
			jobs, err := parseFigures(out.Bytes())
			if err != nil {
				r.Error = fmt.Sprintf("reading kura --json: %v", err)
			}
			for i := range jobs {
				jobs[i].Client = clientA
			}
			r.setJobs(jobs)
		}
	case VariantAgents:
		r.Client, r.Streams = clientA+","+clientB, 2
		c.measure(&r, func() {
			rn.twoAgents(ctx, c, &r, [2][]string{backup(clientA, []string{"--detach"}, plan.halves[0]), backup(clientB, []string{"--detach"}, plan.halves[1])})
		})
	}
	r.setRates()
	rn.add(r)
}

// twoAgents submits both backups, then watches both jobs side by side.
func (rn *runner) twoAgents(ctx context.Context, c *cluster, r *Run, submit [2][]string) {
	r.Command = submit[0]
	r.ColdCache = rn.cold()
	start := time.Now()
	var (
		ids  [2]int64
		rss  int64
		user float64
		sys  float64
	)
	fail := func(p proc, err error) {
		r.Seconds = time.Since(start).Seconds()
		r.ExitCode = max(p.exit, 1)
		r.Error = err.Error()
		if p.stderr != "" {
			r.Error += ": " + p.stderr
		}
	}
	for i, argv := range submit {
		var out bytes.Buffer
		p := rn.execute(ctx, argv, c.adminEnv(), &out, nil)
		r.Commands = append(r.Commands, argv)
		user, sys, rss = user+p.user, sys+p.sys, max(rss, p.maxRSSKiB)
		if p.err != nil {
			fail(p, fmt.Errorf("submitting: %w", p.err))
			return
		}
		var sub struct {
			Jobs []int64 `json:"jobs"`
		}
		if err := json.Unmarshal(out.Bytes(), &sub); err != nil || len(sub.Jobs) != 1 {
			fail(p, fmt.Errorf("reading the job ID from kura --detach --json (%q): %v", out.String(), err))
			return
		}
		ids[i] = sub.Jobs[0]
	}
	var (
		wg    sync.WaitGroup
		procs [2]proc
		outs  [2]bytes.Buffer
	)
	for i, id := range ids {
		argv := []string{rn.o.Kura, "jobs", "watch", strconv.FormatInt(id, 10), "--json"}
		r.Commands = append(r.Commands, argv)
		wg.Go(func() { procs[i] = rn.execute(ctx, argv, c.adminEnv(), &outs[i], nil) })
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	var jobs []JobFigures
	var errs []error
	for i, p := range procs {
		user, sys, rss = user+p.user, sys+p.sys, max(rss, p.maxRSSKiB)
		if p.err != nil {
			r.ExitCode = max(r.ExitCode, p.exit)
			errs = append(errs, fmt.Errorf("job %d: %w: %s", ids[i], p.err, p.stderr))
			continue
		}
		if p.exit == 3 && r.ExitCode == 0 {
			r.ExitCode = 3
		}
		f, err := parseFigures(outs[i].Bytes())
		if err != nil {
			errs = append(errs, fmt.Errorf("job %d: reading kura --json: %w", ids[i], err))
			continue
		}
		for k := range f {
			f[k].Client = []string{clientA, clientB}[i]
		}
		jobs = append(jobs, f...)
	}
	r.UserSeconds, r.SysSeconds, r.MaxRSSKiB = user, sys, rss
	if err := errors.Join(errs...); err != nil {
		r.Error = err.Error()
		if r.ExitCode == 0 {
			r.ExitCode = 1
		}
	}
	r.setJobs(jobs)
}

// setJobs records the jobs of a run and their totals: media bytes, the
// ratio, and the sums of the jobs' peak and average rates (the seed's
// D1 + D2).
func (r *Run) setJobs(jobs []JobFigures) {
	r.Jobs = jobs
	var src, media int64
	for _, j := range jobs {
		src += j.SourceBytes
		media += j.MediaBytes
		r.AvgKBps += j.AvgKBps
		r.PeakKBps += j.PeakKBps
		r.JobSeconds = max(r.JobSeconds, j.Seconds)
	}
	if len(jobs) == 1 {
		r.JobID, r.SavesetID = jobs[0].JobID, jobs[0].SavesetID
	}
	r.OutBytes = media
	if media > 0 {
		r.Ratio = fmt.Sprintf("%.2f:1", float64(src)/float64(media))
	}
}

// parseFigures reads kura --json of a finished backup: one job's figures,
// or {"streams": [...], "total": {...}} for a backup split into streams.
func parseFigures(b []byte) ([]JobFigures, error) {
	var multi struct {
		Streams []JobFigures `json:"streams"`
	}
	if err := json.Unmarshal(b, &multi); err != nil {
		return nil, err
	}
	if len(multi.Streams) > 0 {
		return multi.Streams, nil
	}
	var one JobFigures
	if err := json.Unmarshal(b, &one); err != nil {
		return nil, err
	}
	if one.JobID == 0 {
		return nil, errors.New("no job in the output")
	}
	return []JobFigures{one}, nil
}

// part reports whether a part of the suite runs.
func (rn *runner) part(name string) bool { return slices.Contains(rn.o.Parts, name) }
