package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kura-backup/kura/internal/units"
)

// The report's sections for the remote parts (Tables 5-5 to 5-9), the
// link test (seed 003) and the files test (seed 002).

// hasTest reports whether res has any run of a test.
func hasTest(res *Results, test string) bool {
	return slices.ContainsFunc(res.Runs, func(r Run) bool { return r.Test == test })
}

// writeChartRef embeds a chart's SVG and links its PNG, when the chart
// exists.
func writeChartRef(p func(string, ...any), charts []Chart, name string) {
	i := slices.IndexFunc(charts, func(c Chart) bool { return c.Name == name })
	if i < 0 {
		return
	}
	p("![%s](%s.svg)", charts[i].Title, name)
	p("")
	p("(PNG: [%s.png](%s.png))", name, name)
	p("")
}

// comboTable writes one row per combination and one column per set of the
// median backup of test.
func comboTable(p func(string, ...any), res *Results, sets []string, test string, f func(Run) string) {
	head, rule := "| block – buffer |", "|---|"
	for _, s := range sets {
		head += " " + s + " |"
		rule += "---:|"
	}
	p("%s", head)
	p("%s", rule)
	for _, c := range Combos {
		line := "| " + c.String() + " |"
		for _, s := range sets {
			if r, ok := comboMedian(res, test, s, c); ok {
				line += " " + f(r) + " |"
			} else {
				line += " — |"
			}
		}
		p("%s", line)
	}
	p("")
}

func comboMedian(res *Results, test, set string, c Combo) (Run, bool) {
	r, _, ok := res.Median(func(r Run) bool {
		return r.Test == test && r.Tool == ToolKura && r.Phase == PhaseBackup && r.Set == set && r.Block == c.Block && r.Buffer == c.Buffer
	})
	return r, ok
}

func kbps(r Run) string {
	return units.Thousands(int64(math.Round(r.AvgKBps))) + " / " + units.Thousands(int64(math.Round(r.PeakKBps)))
}

func writeTable55(p func(string, ...any), res *Results, sets []string) {
	p("## Table 5-5 — the same backups through an agent on loopback")
	p("")
	p("Agent `%s` reads and compresses the set and sends it to the server, which writes it into a fresh library per combination: `kura backup --client %s --vtl LIBRARY --compress %s --json PATH`. Average / Peak KB/s from the server's Job Monitor, *fsync*.",
		clientA, clientA, res.Compress)
	p("")
	comboTable(p, res, sets, TestTable55, kbps)
	p("Time (*job* time, wall-clock of `kura backup` in brackets) and compression ratio:")
	p("")
	comboTable(p, res, sets, TestTable55, func(r Run) string {
		return fmt.Sprintf("%s (%s) · %s", duration(r.JobSeconds), duration(r.Seconds), r.Ratio)
	})
	if slices.ContainsFunc(res.Runs, func(r Run) bool { return r.Test == TestTable55 && r.AgentCPUSeconds+r.ServerCPUSeconds > 0 }) {
		p("CPU time (user + system) during each backup, of the agent, the server and the `kura backup` CLI that follows the job; then the local `kura backup` of Table 5-1 (one process doing both halves):")
		p("")
		comboTable(p, res, sets, TestTable55, func(r Run) string {
			s := fmt.Sprintf("agent %.1f s + server %.1f s + CLI %.1f s", r.AgentCPUSeconds, r.ServerCPUSeconds, r.UserSeconds+r.SysSeconds)
			if l, ok := comboMedian(res, TestTable51, r.Set, Combo{r.Block, r.Buffer}); ok {
				s += fmt.Sprintf("; local %.1f s", l.UserSeconds+l.SysSeconds)
			}
			return s
		})
	}
	if !hasTest(res, TestTable51) {
		return
	}
	p("Remote ÷ local: Average KB/s through the agent divided by Table 5-1's (below 1: the agent path is slower), then the same for the wall-clock rate:")
	p("")
	comboTable(p, res, sets, TestTable55, func(r Run) string {
		l, ok := comboMedian(res, TestTable51, r.Set, Combo{r.Block, r.Buffer})
		if !ok {
			return "—"
		}
		return ratio(r.AvgKBps, l.AvgKBps) + " / " + ratio(r.MiBps, l.MiBps)
	})
}

// variantLabel names a drives variant as the report does.
func variantLabel(v string) string {
	switch v {
	case VariantOne:
		return "one job, one drive"
	case VariantStreams:
		return "one source, two drives (`--streams 2`)"
	case VariantAgents:
		return "two agents at once, two drives"
	}
	return v
}

func drivesMedian(res *Results, set, variant string) (Run, bool) {
	r, _, ok := res.Median(func(r Run) bool { return r.Test == TestDrives && r.Set == set && r.Variant == variant })
	return r, ok
}

func writeDrives(p func(string, ...any), res *Results, sets []string) {
	p("## Tables 5-6 … 5-9 — one drive or two")
	p("")
	p("The entries of each set (its first folder level with more than one entry) backed up through agents on loopback, block %d KiB, buffer %d KiB, `--compress %s`, into a fresh library with two drives for each variant: **one job on one drive**; **the same entries split over two drives** by the agent (`--streams 2`, the seed's local parallel backup, Table 5-7); **two agents** (`%s` and `%s`, separate processes) backing up one half each at the same time — both submitted with `--detach`, then both followed with `kura jobs watch` (the seed's parallel backups from several clients). Time is wall-clock from the submission to the end of the last job; MiB/s is the set's bytes over that time.",
		DefaultCombo.Block>>10, DefaultCombo.Buffer>>10, res.Compress, clientA, clientB)
	p("")
	p("| set | %s | %s | %s | two drives ÷ one | two agents ÷ one |", variantLabel(VariantOne), variantLabel(VariantStreams), variantLabel(VariantAgents))
	p("|---|---:|---:|---:|---:|---:|")
	for _, s := range sets {
		var cells []string
		var rates []float64
		measured := false
		for _, v := range drivesVariants {
			if r, ok := drivesMedian(res, s, v); ok {
				cells = append(cells, fmt.Sprintf("%s · %.1f MiB/s", duration(r.Seconds), r.MiBps))
				rates = append(rates, r.MiBps)
				measured = true
			} else {
				cells = append(cells, "—")
				rates = append(rates, 0)
			}
		}
		if !measured {
			continue
		}
		p("| %s | %s | %s | %s |", s, strings.Join(cells, " | "), ratio(rates[1], rates[0]), ratio(rates[2], rates[0]))
	}
	p("")
	p("Every job (the seed's Tables 5-7 and 5-9: D1, D2), from the server's Job Monitor:")
	p("")
	p("| set | variant | job | client | source | Average KB/s | Peak KB/s | Time (job) | Compression Ratio |")
	p("|---|---|---:|---|---:|---:|---:|---:|---:|")
	for _, s := range sets {
		for _, v := range drivesVariants {
			r, ok := drivesMedian(res, s, v)
			if !ok {
				continue
			}
			for i, j := range r.Jobs {
				label := variantLabel(v)
				if len(r.Jobs) > 1 {
					label += fmt.Sprintf(" — D%d", i+1)
				}
				p("| %s | %s | %d | %s | %s | %s | %s | %s | %s |", s, label, j.JobID, j.Client, formatBytes(j.SourceBytes),
					units.Thousands(int64(math.Round(j.AvgKBps))), units.Thousands(int64(math.Round(j.PeakKBps))), duration(j.Seconds), j.Ratio)
			}
		}
	}
	p("")
}

func writeLink(p func(string, ...any), res *Results) {
	p("## Seed 003 — the db dump over limited links, by compression level")
	p("")
	if d := res.DB; d != nil {
		how := "the data folder's db set"
		if d.Generated {
			how = fmt.Sprintf("a dump written for the run by the db set's generator (seed %d) at this size", d.Seed)
		}
		p("Dump: `%s`, %s (%s bytes), %s.", d.Path, formatBytes(d.Bytes), units.Thousands(d.Bytes), how)
		p("")
	}
	p("Backed up by agent `%s` into one library (block %d KiB, buffer %d KiB): `kura backup --client %s --compress LEVEL [--bwlimit RATE] --json DIR`. "+
		"**The links are emulated**: `--bwlimit` is a token bucket in the agent that holds back the bytes it sends (compressed frames), on loopback — no latency, no packet loss, no real network. "+
		"100 Mbit/s = 12,500,000 bytes/s, 10 Mbit/s = 1,250,000 bytes/s. Compression runs in the agent before the link (as seed 003's plug-in), on the same cores as the server. "+
		"Bytes sent are the media bytes (frames as stored); time is the Job Monitor's; rate is the dump's bytes over that time; agent CPU is the agent's user + system time during the run (reading and compressing).",
		clientA, DefaultCombo.Block>>10, DefaultCombo.Buffer>>10, clientA)
	p("")
	p("| link | level | bytes sent | time (job) | wall-clock | rate MiB/s | ratio | agent CPU |")
	p("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, l := range Links {
		for _, lv := range LinkLevels {
			r, ok := linkMedian(res, l.Name, lv)
			if !ok {
				continue
			}
			rate := 0.0
			if t := linkTime(r); t > 0 {
				rate = float64(r.Bytes) / (1 << 20) / t
			}
			cpu := "—"
			if r.AgentCPUSeconds > 0 {
				cpu = fmt.Sprintf("%.2f s", r.AgentCPUSeconds)
			}
			p("| %s | %s | %s | %s | %s | %.1f | %s | %s |", l.Name, lv, formatBytes(r.OutBytes), duration(linkTime(r)), duration(r.Seconds), rate, r.Ratio, cpu)
		}
	}
	p("")
	writeAutoVerdicts(p, LinkVerdicts(res))
}

// writeAutoVerdicts writes the table of auto against the best fixed level
// at each link (the link and pglink parts), and which links miss.
func writeAutoVerdicts(p func(string, ...any), vs []LinkVerdict) {
	if len(vs) == 0 {
		return
	}
	p("`auto` against the best fixed level at each link (within %.0f %% is the goal):", AutoTolerance*100)
	p("")
	p("| link | best fixed level | its time | auto | auto ÷ best | within %.0f %% |", AutoTolerance*100)
	p("|---|---|---:|---:|---:|---|")
	var misses []string
	for _, v := range vs {
		mark := "yes"
		if !v.Within {
			mark = "**no**"
			misses = append(misses, fmt.Sprintf("%s (auto %s, %s %s: %.2f×)", v.Link, duration(v.AutoSeconds), v.Best, duration(v.BestSeconds), v.Ratio))
		}
		p("| %s | %s | %s | %s | %.2f | %s |", v.Link, v.Best, duration(v.BestSeconds), duration(v.AutoSeconds), v.Ratio, mark)
	}
	p("")
	if len(misses) > 0 {
		p("**auto is more than %.0f %% slower than the best fixed level at**: %s.", AutoTolerance*100, strings.Join(misses, "; "))
	} else {
		p("auto is within %.0f %% of the best fixed level at every link speed measured.", AutoTolerance*100)
	}
	p("")
}

// synced is a run's MiB/s with the sync after it counted in its time.
func synced(r Run) float64 {
	t := r.Seconds
	if !r.Durable {
		t += r.SyncSeconds
	}
	if t <= 0 {
		return 0
	}
	return float64(r.Bytes) / (1 << 20) / t
}

func filesMedian(res *Results, set, tool, phase string) (Run, bool) {
	r, _, ok := res.Median(func(r Run) bool { return r.Test == TestFiles && r.Set == set && r.Tool == tool && r.Phase == phase })
	return r, ok
}

func writeFiles(p func(string, ...any), res *Results) {
	p("## Seed 002 — small, medium and huge files: Kura against a plain copy")
	p("")
	p("Incompressible files written for the run on the scratch disk. **Read**: `kura backup --compress none` into a fresh library (Kura reads the files; *fsync*). " +
		"**Write**: `kura restore` of that saveset into an empty folder (no fsync). **Delete**: `rm -rf` of the restored files; **expire**: `kura tape erase --force` of the saveset's tape (the saveset expires and its tape is erased, as a prune does when retention lets go of a tape). " +
		"Against a plain `cp -a` of the same files on the same disk (reads and writes them; no fsync) and `rm -rf` of the copy. A `sync` after every run that does not fsync is timed separately (*sync*) and not in its time.")
	p("")
	p("Shapes: seed 002's 20 KB × 100, 100 MB × 100 and 4 GB × 1, scaled; the small files' count is at least 100 and 10,000 × the scale, as the seed's 2 MB are too little to time a process on.")
	p("")
	p("Ratios are Kura's rate ÷ the plain one's (above 1: Kura is faster); *+ sync* counts the `sync` after a run that does not fsync in its time, so that both sides have their data on disk.")
	p("")
	p("| shape | size | Kura read (backup) | Kura write (restore) | Kura delete | Kura expire | `cp -a` | `rm -rf` copy | read ÷ cp | read ÷ (cp + sync) | write ÷ cp | write ÷ cp, both + sync | delete ÷ rm | expire ÷ rm |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	rate := func(r Run) string {
		s := fmt.Sprintf("%s · %.1f MiB/s", duration(r.Seconds), r.MiBps)
		if r.Files >= 100 {
			s += fmt.Sprintf(" · %s files/s", units.Thousands(int64(math.Round(r.FilesPerSec))))
		}
		if !r.Durable && r.SyncSeconds > 0 {
			s += fmt.Sprintf(" (sync %s)", duration(r.SyncSeconds))
		}
		return s
	}
	del := func(r Run) string {
		return fmt.Sprintf("%s · %s files/s", duration(r.Seconds), units.Thousands(int64(math.Round(r.FilesPerSec))))
	}
	for _, fs := range res.FileSets {
		var cells []string
		get := func(tool, phase string, f func(Run) string) Run {
			r, ok := filesMedian(res, fs.Name, tool, phase)
			if ok {
				cells = append(cells, f(r))
			} else {
				cells = append(cells, "—")
			}
			return r
		}
		kb := get(ToolKura, PhaseBackup, rate)
		kr := get(ToolKura, PhaseRestore, rate)
		kd := get(ToolKura, PhaseDelete, del)
		ke := get(ToolKura, PhaseExpire, del)
		cp := get(ToolCp, PhaseCopy, rate)
		cd := get(ToolCp, PhaseDelete, del)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", fs.Label, formatBytes(fs.Bytes), strings.Join(cells, " | "),
			ratio(kb.MiBps, cp.MiBps), ratio(synced(kb), synced(cp)), ratio(kr.MiBps, cp.MiBps), ratio(synced(kr), synced(cp)),
			ratio(kd.FilesPerSec, cd.FilesPerSec), ratio(ke.FilesPerSec, cd.FilesPerSec))
	}
	p("")
}
