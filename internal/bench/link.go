package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// The link test (seed 003): the db dump backed up through an agent over
// links of three speeds at every compression level. The agent compresses
// before the network, so the bytes that cross the link are the media
// bytes; a link is emulated by the agent's --bwlimit token bucket on
// loopback (no latency, no loss), which caps the bytes the agent sends.

// A Link is one link speed of seed 003.
type Link struct {
	Name string // as the report writes it
	Flag string // the --bwlimit value; "" = no limit
	BPS  int64  // bytes per second (decimal bits ÷ 8); 0 = no limit
}

// Links are seed 003's link speeds.
var Links = []Link{
	{Name: "unlimited"},
	{Name: "100 Mbit/s", Flag: "100Mbit", BPS: 100e6 / 8},
	{Name: "10 Mbit/s", Flag: "10Mbit", BPS: 10e6 / 8},
}

// LinkLevels are the compression levels of the link test; auto is judged
// against the best of the others.
var LinkLevels = []string{"none", "low", "medium", "high", "auto"}

// AutoTolerance is how much slower than the best fixed level auto may be
// at a link speed (the 10 %).
const AutoTolerance = 0.10

// dbBytes is the size of the link test's dump by suite: at 10 Mbit/s an
// uncompressed 32 MiB takes 27 s, 64 MiB 54 s.
var dbBytes = map[string]int64{"quick": 32 << 20, "seed": 64 << 20}

const (
	linkLibrary = "link"
	linkSet     = "db"
)

// linkDump finds or makes the dump: the data folder's db set when it is
// no larger than o.DBBytes, else a dump of o.DBBytes written by the db
// set's generator with the data's seed into the scratch folder (removed
// afterwards).
func (rn *runner) linkDump(ctx context.Context) (string, *DBDump, error) {
	for _, si := range rn.manifest.Sets {
		if si.Name != linkSet || si.Bytes > rn.o.DBBytes {
			continue
		}
		dir := filepath.Join(rn.o.Data, linkSet)
		if _, err := os.Stat(dir); err == nil {
			return dir, &DBDump{Path: filepath.Join(dir, "dump.sql"), Bytes: si.Bytes, Seed: si.Seed}, nil
		}
	}
	spec, _ := SetByName(linkSet)
	dir := filepath.Join(rn.o.Scratch, "db-link")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	seed := rn.res.Data.Seed
	f := FilePlan{Rel: filepath.Join(linkSet, "dump.sql"), Size: rn.o.DBBytes}
	path := filepath.Join(dir, "dump.sql")
	var carry []byte
	if _, err := writeFile(path, spec.source(newTables(seed), seed, f), f.Size, nil, &carry); err != nil {
		return "", nil, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	return dir, &DBDump{Path: path, Bytes: f.Size, Generated: true, Seed: seed}, nil
}

func (rn *runner) linkRuns() int { return len(Links) * len(LinkLevels) * rn.o.Repeats }

func (rn *runner) measureLink(ctx context.Context) {
	fail := func(err error) {
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			for _, l := range Links {
				for _, lv := range LinkLevels {
					rn.add(Run{Test: TestLink, Set: linkSet, Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Level: lv, Link: l.Name,
						BWLimit: l.BPS, Error: err.Error(), ExitCode: -1})
				}
			}
		}
	}
	dir, dump, err := rn.linkDump(ctx)
	if err != nil {
		fail(fmt.Errorf("making the dump: %w", err))
		return
	}
	if dump.Generated {
		defer os.RemoveAll(dir)
	}
	rn.res.DB = dump
	how := "the data folder's db set"
	if dump.Generated {
		how = fmt.Sprintf("written for the run by the db generator, seed %d", dump.Seed)
	}
	rn.logf("link test: dump %s (%s, %s); links %d, levels %d, %d run(s) each", dump.Path, formatBytes(dump.Bytes), how,
		len(Links), len(LinkLevels), rn.o.Repeats)
	clusterDir := filepath.Join(rn.o.Scratch, "cluster-link")
	c, err := rn.startCluster(ctx, clusterDir, []libSpec{{linkLibrary, DefaultCombo}}, []string{clientA})
	if err != nil {
		fail(fmt.Errorf("starting the server and agent: %w", err))
		return
	}
	defer c.stop()
	for rep := 1; rep <= rn.o.Repeats; rep++ {
		for _, l := range Links {
			for _, lv := range LinkLevels {
				if ctx.Err() != nil {
					return
				}
				r := Run{Test: TestLink, Set: linkSet, Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Level: lv, Link: l.Name, BWLimit: l.BPS,
					Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Files: 1, Bytes: dump.Bytes, Durable: true,
					Client: clientA, Library: linkLibrary, Streams: 1, Env: c.displayEnv()}
				r.Command = []string{rn.o.Kura, "backup", "--client", clientA, "--vtl", linkLibrary, "--compress", lv}
				if l.Flag != "" {
					r.Command = append(r.Command, "--bwlimit", l.Flag)
				}
				r.Command = append(r.Command, "--json", dir)
				c.measure(&r, func() { r = rn.kura(ctx, r, c.adminEnv()) })
				rn.add(r)
			}
		}
	}
}

// A LinkVerdict compares auto with the best fixed level at one link speed
// (median runs, Job Monitor time).
type LinkVerdict struct {
	Link        string
	Best        string // the fastest fixed level
	BestSeconds float64
	AutoSeconds float64
	Ratio       float64 // auto ÷ best
	Within      bool    // auto took at most AutoTolerance longer
}

// linkTime is the time of a link run: the Job Monitor's (as seed 003's
// table), or wall-clock when the job's is missing.
func linkTime(r Run) float64 {
	if r.JobSeconds > 0 {
		return r.JobSeconds
	}
	return r.Seconds
}

// LinkVerdicts judges auto at every link speed that has an auto run and at
// least one fixed level.
func LinkVerdicts(res *Results) []LinkVerdict { return linkVerdictsOf(res, TestLink) }

func linkVerdictsOf(res *Results, test string) []LinkVerdict {
	var out []LinkVerdict
	for _, l := range Links {
		auto, ok := testLinkMedian(res, test, l.Name, "auto")
		if !ok {
			continue
		}
		v := LinkVerdict{Link: l.Name, AutoSeconds: linkTime(auto)}
		for _, lv := range LinkLevels {
			if lv == "auto" {
				continue
			}
			if r, ok := testLinkMedian(res, test, l.Name, lv); ok && (v.Best == "" || linkTime(r) < v.BestSeconds) {
				v.Best, v.BestSeconds = lv, linkTime(r)
			}
		}
		if v.Best == "" || v.BestSeconds <= 0 {
			continue
		}
		v.Ratio = v.AutoSeconds / v.BestSeconds
		v.Within = v.Ratio <= 1+AutoTolerance
		out = append(out, v)
	}
	return out
}

func linkMedian(res *Results, link, level string) (Run, bool) {
	return testLinkMedian(res, TestLink, link, level)
}

func testLinkMedian(res *Results, test, link, level string) (Run, bool) {
	r, _, ok := res.Median(func(r Run) bool {
		return r.Test == test && r.Link == link && r.Level == level
	})
	return r, ok
}
