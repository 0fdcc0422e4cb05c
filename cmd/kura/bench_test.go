package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/bench"
)

// Every part of `kura bench run` on tiny data, as a user runs it: local
// backups and peers, a server and two agents started by the run for Table
// 5-5 and the drives test, the link test over emulated links, and the
// files test. Judged by what it wrote — every run succeeded, each test has
// its runs with their configuration, the report has its sections, the
// charts are valid SVG and PNG — never by how fast anything was.
func TestBenchRunEveryPartOnTinyData(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and agents")
	}
	k := newKura(t)
	out, r, res := benchRunTiny(k, "test2", "--suite", "quick", "--peers", "tar",
		"--db-size", "256KiB", "--files-scale", "0.0001", "--no-drop-caches")
	if !strings.Contains(r.stderr, "starting a server and 2 agent(s) on loopback") || !strings.Contains(r.stderr, "link test: dump") {
		t.Errorf("no progress lines for the remote parts:\n%s", r.stderr)
	}

	count := map[string]int{}
	for _, run := range res.Runs {
		if !run.OK() {
			t.Errorf("run failed: %+v", run)
		}
		count[run.Test]++
		if len(run.Command) == 0 {
			t.Errorf("run without its command: %+v", run)
		}
		switch run.Test {
		case bench.TestTable55, bench.TestDrives, bench.TestLink:
			if len(run.Env) != 2 || !strings.HasPrefix(run.Env[0], "KURA_SERVER=https://127.0.0.1:") || strings.Contains(strings.Join(run.Env, " "), "kura1-") {
				t.Errorf("%s run: env %q, want KURA_SERVER and the token's file, not the token", run.Test, run.Env)
			}
		}
	}
	// test2 (200 files in one folder): 3 combinations, 3 drives
	// variants; 3 links × 5 levels; 3 shapes × 6 runs.
	for test, want := range map[string]int{bench.TestTable51: 3, bench.TestTable55: 3, bench.TestDrives: 3, bench.TestLink: 15, bench.TestFiles: 18} {
		if count[test] != want {
			t.Errorf("%d runs of test %s, want %d", count[test], test, want)
		}
	}
	for _, run := range res.Runs {
		switch {
		case run.Test == bench.TestDrives && run.Variant == bench.VariantAgents:
			if len(run.Jobs) != 2 || run.Jobs[0].Client == run.Jobs[1].Client || len(run.Commands) != 4 {
				t.Errorf("two agents: jobs %+v, commands %q", run.Jobs, run.Commands)
			}
			var src int64
			for _, j := range run.Jobs {
				src += j.SourceBytes
			}
			if src != run.Bytes {
				t.Errorf("two agents backed up %d bytes, the set has %d", src, run.Bytes)
			}
		case run.Test == bench.TestDrives && run.Variant == bench.VariantStreams:
			if len(run.Jobs) != 2 || run.Streams != 2 || !strings.Contains(strings.Join(run.Command, " "), "--streams 2") {
				t.Errorf("two streams: %+v", run)
			}
		case run.Test == bench.TestLink:
			if (run.BWLimit != 0) != strings.Contains(strings.Join(run.Command, " "), "--bwlimit") {
				t.Errorf("link %s: bwlimit %d, command %q", run.Link, run.BWLimit, run.Command)
			}
			if run.Level != "none" && run.OutBytes >= run.Bytes {
				t.Errorf("link %s, level %s: %d bytes sent for a %d-byte SQL dump", run.Link, run.Level, run.OutBytes, run.Bytes)
			}
		}
	}
	if res.DB == nil || !res.DB.Generated || res.DB.Bytes != 256<<10 || len(res.FileSets) != 3 {
		t.Errorf("configuration: db %+v, file sets %+v", res.DB, res.FileSets)
	}

	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Table 5-1", "## Table 5-5", "Remote ÷ local", "## Tables 5-6 … 5-9", "two agents at once, two drives — D2",
		"## Seed 003", "**The links are emulated**", "`auto` against the best fixed level", "## Seed 002", "## Peers"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	charts, _ := filepath.Glob(filepath.Join(out, "chart-*.svg"))
	if len(charts) < 8 {
		t.Errorf("%d charts: %v", len(charts), charts)
	}
	for _, svg := range charts {
		if !bytes.Contains(md, []byte("("+filepath.Base(svg)+")")) {
			t.Errorf("report.md does not show %s", filepath.Base(svg))
		}
		f, err := os.Open(svg)
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(f)
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("%s: %v", svg, err)
				break
			}
		}
		f.Close()
		p, err := os.Open(strings.TrimSuffix(svg, ".svg") + ".png")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(p); err != nil {
			t.Errorf("%s: %v", p.Name(), err)
		}
		p.Close()
	}
	// bench report draws the same report and charts from results.json.
	before, _ := os.ReadFile(filepath.Join(out, "chart-drives.png"))
	for _, f := range append(charts, filepath.Join(out, "report.md"), filepath.Join(out, "chart-drives.png")) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	k.ok("bench", "report", out)
	again, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !bytes.Equal(again, md) {
		t.Errorf("bench report wrote a different report.md (%v)", err)
	}
	if after, err := os.ReadFile(filepath.Join(out, "chart-drives.png")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("bench report drew a different chart-drives.png (%v)", err)
	}
	k.expect(exitFailure, "bench", "report", k.dir)

	// Servers, agents, libraries and restores were all cleaned up.
	checkScratchGone(t, out)
}

// The network part on tiny data, as a user runs it: pairs of a local
// backup and one through an agent, alternating which runs first, the
// agent's savesets expired on the server, restores and tar with --peers
// tar; judged by results.json's runs and their order, and the report's
// section — never by how fast anything was.
func TestBenchRunNetworkPartOnTinyData(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and an agent")
	}
	k := newKura(t)
	out, r, res := benchRunTiny(k, "test2,test3", "--parts", "network", "--peers", "tar", "--runs", "2", "--no-drop-caches")
	if !strings.Contains(r.stderr, "network test: starting a server and an agent on loopback for 3 case(s), 2 pair(s) each") {
		t.Errorf("no progress line for the network part:\n%s", r.stderr)
	}
	count := map[string]int{}
	sides := map[string][]string{} // case → sides of its backups in run order
	for i, run := range res.Runs {
		if !run.OK() {
			t.Errorf("run failed: %+v", run)
		}
		if run.Test != bench.TestNetwork {
			t.Errorf("a %s run in the network part", run.Test)
		}
		count[run.Tool+" "+run.Phase]++
		if run.Tool != bench.ToolKura || run.Phase != bench.PhaseBackup {
			continue
		}
		side := "local"
		if run.Client != "" {
			side = "agent"
			if len(run.Env) != 2 || !strings.HasPrefix(run.Env[0], "KURA_SERVER=https://127.0.0.1:") || slices.Contains(run.Command, "--home") {
				t.Errorf("agent backup: env %q, command %q", run.Env, run.Command)
			}
			// The agent's saveset is expired on the server right after.
			if i+1 >= len(res.Runs) || res.Runs[i+1].Phase != bench.PhaseExpire || !strings.Contains(strings.Join(res.Runs[i+1].Command, " "), "tape erase --force") {
				t.Errorf("agent backup %d of %s not followed by its expiry", run.Rep, run.Case)
			}
		} else if !slices.Contains(run.Command, "--home") {
			t.Errorf("local backup without its own home: %q", run.Command)
		}
		if !slices.Contains(run.Command, run.Level) || run.SavesetID == 0 {
			t.Errorf("backup of %s: command %q, saveset %d", run.Case, run.Command, run.SavesetID)
		}
		sides[run.Case] = append(sides[run.Case], fmt.Sprintf("%d %s", run.Rep, side))
	}
	want := []string{"1 local", "1 agent", "2 agent", "2 local"}
	for _, c := range []string{"test3, --compress none", "test3, --compress auto", "test2, --compress auto"} {
		if !slices.Equal(sides[c], want) {
			t.Errorf("%s ran %v, want %v", c, sides[c], want)
		}
	}
	// 3 cases × 2 pairs: 2 backups, the agent's expiry, the local restore
	// and its delete; 2 sets × 2 runs of tar -cf, -xf, delete; test2's
	// tar | zstd.
	for what, n := range map[string]int{"kura backup": 12, "kura expire": 6, "kura restore": 6, "kura delete": 6,
		"tar backup": 4, "tar restore": 4, "tar delete": 4, "tar+zstd backup": 2} {
		if count[what] != n {
			t.Errorf("%d runs of %s, want %d (all: %v)", count[what], what, n, count)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Through an agent ÷ local (issue 12)", "| test3, --compress none |", "| test2, --compress auto |",
		"Targets (issue 12)", "### Small files and restore against tar"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// bench report draws the same section from results.json.
	if err := os.Remove(filepath.Join(out, "report.md")); err != nil {
		t.Fatal(err)
	}
	k.ok("bench", "report", out)
	if again, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !bytes.Equal(again, md) {
		t.Errorf("bench report wrote a different report.md (%v)", err)
	}
	checkScratchGone(t, out)
}

// benchRunTiny makes data of sets at scale 0.0002 and runs `kura bench
// run` on it with args; it returns the report folder, the run's output
// and its results.json.
func benchRunTiny(k *kura, sets string, args ...string) (string, result, bench.Results) {
	k.t.Helper()
	data := filepath.Join(k.dir, "data")
	out := filepath.Join(k.dir, "report")
	k.ok("bench", "gen", "--out", data, "--scale", "0.0002", "--sets", sets)
	r := k.ok(append([]string{"bench", "run", "--data", data, "--out", out}, args...)...)
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		k.t.Fatal(err)
	}
	var res bench.Results
	if err := json.Unmarshal(b, &res); err != nil {
		k.t.Fatal(err)
	}
	return out, r, res
}

// checkScratchGone checks that a run cleaned up its servers, agents,
// libraries and restores.
func checkScratchGone(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(out, "scratch")); !os.IsNotExist(err) {
		left, _ := filepath.Glob(filepath.Join(out, "scratch", "*"))
		t.Errorf("scratch folder left behind: %v", left)
	}
}

func TestBenchRunUsageErrors(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	for _, args := range [][]string{
		{"bench", "run", "--data", k.dir, "--out", k.dir, "--parts", "local,wan"},
		{"bench", "run", "--data", k.dir, "--out", k.dir, "--db-size", "lots"},
		{"bench", "run", "--data", k.dir, "--out", k.dir, "--files-scale", "-1"},
		{"bench", "run", "--data", k.dir, "--out", k.dir, "--kura", filepath.Join(k.dir, "no-such-kura")},
		{"bench", "run", "--data", k.dir, "--out", k.dir, "--kura", k.dir},
	} {
		k.expect(exitUsage, args...)
	}
}

// kura bench agents on a small scale, as a user runs it: a server process
// and 12 agents, each enrolled with its own token and certificate, idle and
// then 4 backing up at once. Judged by what it wrote — every agent
// connected, every backup succeeded, the server's figures were read —
// never by how fast anything was.
func TestBenchAgentsSmall(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	out := filepath.Join(k.dir, "agents")
	scratch := filepath.Join(k.dir, "scratch")
	r := k.ok("bench", "agents", "--agents", "12", "--busy", "4", "--lone", "2", "--idle", "1s", "--scratch", scratch, "--out", out)
	for _, want := range []string{"| server RSS (peak) |", "| goroutines |", "| job start (submitted → running) p50 / p99 / max |", "4 of 4"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report has no %q:\n%s", want, r.stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res bench.AgentsResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Agents != 12 || res.Busy != 4 || res.Succeeded != 4 || len(res.Failed) != 0 {
		t.Errorf("agents %d, busy %d, succeeded %d, failed %v", res.Agents, res.Busy, res.Succeeded, res.Failed)
	}
	// Every agent holds a connection of its own to the server, and the
	// server's figures come from its process and its API.
	if s := res.IdleEnd; s.OpenFiles < 12 || s.Goroutines < 12 || s.RSSBytes <= 0 || s.PeakRSS < s.RSSBytes || s.CPUSeconds <= 0 {
		t.Errorf("idle server figures: %+v", s)
	}
	if res.QueuedP99 < res.QueuedP50 || res.QueuedP99 > res.StartP99 || res.SubmitP99 < res.SubmitP50 {
		t.Errorf("queued → running %g/%g, submit %g/%g, start p99 %g", res.QueuedP50, res.QueuedP99, res.SubmitP50, res.SubmitP99, res.StartP99)
	}
	if res.LoneJobs != 2 || res.LoneStartP50 <= 0 || res.LoneStartP99 < res.LoneStartP50 {
		t.Errorf("lone jobs %d, start %g/%g", res.LoneJobs, res.LoneStartP50, res.LoneStartP99)
	}
	if res.StartP50 <= 0 || res.StartP99 < res.StartP50 || res.StartMax < res.StartP99 || res.EndP99 < res.StartP99 {
		t.Errorf("latencies: start %g/%g/%g, end p99 %g", res.StartP50, res.StartP99, res.StartMax, res.EndP99)
	}
	if _, err := os.Stat(filepath.Join(scratch, "agents")); !os.IsNotExist(err) {
		t.Errorf("the run left its server and agents behind in %s", scratch)
	}
}

// --json prints what agents.json holds, one JSON value.
func TestBenchAgentsJSON(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	var res bench.AgentsResult
	k.json(0, &res, "bench", "agents", "--agents", "3", "--busy", "1", "--lone", "1", "--idle", "1s", "--json")
	if res.Agents != 3 || res.Succeeded != 1 || res.LoneJobs != 1 || res.IdleEnd.Goroutines == 0 {
		t.Errorf("--json: %+v", res)
	}
}

func TestBenchAgentsUsageErrors(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	for _, args := range [][]string{
		{"bench", "agents", "--agents", "0"},
		{"bench", "agents", "--agents", "3", "--busy", "4"},
		{"bench", "agents", "--idle", "0s"},
		{"bench", "agents", "--lone", "-1"},
	} {
		k.expect(2, args...)
	}
}
