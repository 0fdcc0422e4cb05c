package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-backup/kura/internal/units"
)

// WriteReport writes report.md: the tables in the seeds' layout, the
// machine, how it was measured, and what failed. It depends only on res.
func WriteReport(w io.Writer, res *Results) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format+"\n", a...) }
	sets := setNames(res)
	charts := ReportCharts(res)
	chart := func(name string) { writeChartRef(p, charts, name) }

	p("# Kura benchmark report")
	p("")
	runs := "1 run per figure"
	if res.Repeats > 1 {
		runs = fmt.Sprintf("%d runs per figure; each figure is from the run with the median wall-clock time", res.Repeats)
	}
	p("Suite **%s** (%s), data scale %s, seed %d. Started %s, finished %s (%s).",
		res.Suite, runs, strconv.FormatFloat(res.Data.Scale, 'g', -1, 64), res.Data.Seed,
		res.Started.UTC().Format("2006-01-02 15:04:05 UTC"), res.Finished.UTC().Format("2006-01-02 15:04:05 UTC"),
		duration(res.Finished.Sub(res.Started).Seconds()))
	p("")

	// Machine.
	m := res.Machine
	p("## Machine")
	p("")
	p("| | |")
	p("|---|---|")
	p("| CPU | %s, %d cores |", cell(m.CPU), m.Cores)
	p("| Memory | %s |", formatBytes(m.MemoryB))
	p("| OS, kernel | %s, %s |", cell(m.OS), cell(m.Kernel))
	p("| Data disk | %s |", disk(m.DataDisk))
	p("| Scratch disk (libraries, archives, restores) | %s |", disk(m.ScratchDir))
	p("| Kura | %s, %s, `--compress %s` |", cell(m.Kura), cell(m.Go), cell(res.Compress))
	var peers []string
	for _, pe := range res.Peers {
		if pe.Missing {
			peers = append(peers, pe.Name+": **missing**")
		} else {
			peers = append(peers, cell(pe.Version))
		}
	}
	if len(peers) == 0 {
		peers = []string{"none asked for (`--peers tar,restic`)"}
	}
	p("| Peers | %s |", strings.Join(peers, "; "))
	p("")

	// How.
	p("## How it was measured")
	p("")
	if res.DropCaches {
		p("- The page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before every timed run: backups read the data from the disk, restores and verifies read the media from the disk.")
	} else {
		p("- **The page cache was not dropped**: %s.", res.DropCachesNote)
	}
	p("- Every run is a separate process (Kura runs as `kura --json` subprocesses, like the peers); times are wall-clock from start to exit unless marked *job*, which is Kura's own Job Monitor time.")
	p("- Durability: a Kura backup fsyncs its tape files, index and catalog before it reports success (*fsync*). GNU tar never fsyncs (*no fsync*). Neither `kura restore` nor `tar -xf` fsyncs the files it restores. After every run that does not fsync, a `sync` is timed separately (*sync after*) and not included in its time.")
	if slices.ContainsFunc(res.Peers, func(pe Peer) bool { return pe.Name == ToolRestic && !pe.Missing }) {
		p("- The restic peer backs up into a fresh repository on the scratch disk (`restic init` first, not timed) and fsyncs the repository files it writes (*fsync*); `restic restore` does not fsync the files it restores. The restic output is the repository's size.")
	}
	if hasTest(res, TestTable55) || hasTest(res, TestDrives) || hasTest(res, TestLink) || hasTest(res, TestPGLink) || hasTest(res, TestNetwork) || hasTest(res, TestEncrypt) {
		p("- Remote runs: a server and agents are started for the run as separate processes of the same binary (`kura server --listen 127.0.0.1:0`, `kura agent enroll` with a one-time token, `kura agent run`), on this machine: the agent reads and compresses the files and sends them over HTTPS (TLS 1.3, mutual certificates) on loopback; the server writes them to its libraries. The admin commands reach it through `KURA_SERVER` and `KURA_TOKEN`. Server, agents and CLI share the machine's cores and disk.")
	}
	p("- Deleting restore targets is timed separately and is never part of a rate (on a disk mounted with `discard` deletes cost about 1 ms per file).")
	mb := ""
	if hasTest(res, TestNetwork) {
		mb = " (the network test's MB/s are 10^6 bytes per second)"
	}
	if hasTest(res, TestObject) {
		mb += " (the object-store test's MB/s are 10^6 bytes per second)"
	}
	p("- Units: KB/s as in the Job Monitor (1 KB = 1024 bytes); MiB/s = 2^20 bytes per second of the data set's bytes%s; files/s of its regular files.", mb)
	p("")

	// Data sets.
	p("## Data sets")
	p("")
	p("| set | content | folders | files | size | average file | zstd ratio of a %s sample (default / fastest) |", sampleSize(res))
	p("|---|---|---:|---:|---:|---:|---:|")
	for _, s := range res.Data.Sets {
		avg := int64(0)
		if s.Files > 0 {
			avg = s.Bytes / int64(s.Files)
		}
		p("| %s | %s | %s | %s | %s | %s | %.2f:1 / %.2f:1 |", s.Name, cell(s.Content), units.Thousands(int64(s.Folders)), units.Thousands(int64(s.Files)),
			formatBytes(s.Bytes), formatBytes(avg), s.RatioDefault, s.RatioFastest)
	}
	p("")

	// Table 5-1.
	if hasTest(res, TestTable51) {
		writeTable51(p, res, sets)
		if !hasTest(res, TestTable55) {
			chart(chartTable55)
		}
	}
	if hasTest(res, TestTable55) {
		writeTable55(p, res, sets)
		chart(chartTable55)
	}
	if hasTest(res, TestDrives) {
		writeDrives(p, res, sets)
		chart(chartDrives)
	}
	if hasTest(res, TestPhases) {
		writePhases(p, res, sets)
		chart(chartPhases)
	}
	if hasTest(res, TestLink) {
		writeLink(p, res)
		for i := range Links {
			chart(fmt.Sprintf("%s%d", chartLink, i+1))
		}
	}
	if hasTest(res, TestPGLink) {
		writePGLink(p, res)
	}
	if hasTest(res, TestFiles) {
		writeFiles(p, res)
		chart(chartFiles)
		chart(chartFilesDelete)
	}
	if hasTest(res, TestNetwork) {
		writeNetwork(p, res)
	}
	if hasTest(res, TestObject) {
		writeObject(p, res)
	}
	if hasTest(res, TestEncrypt) {
		writeEncrypt(p, res)
	}

	// Peers (the network test compares with tar in its own section).
	if len(res.Peers) > 0 && (hasTest(res, TestPeers) || hasTest(res, TestTable51)) {
		writePeers(p, res, sets)
		chart(chartPeersBackup)
		chart(chartPeersRest)
	}

	// Failures and notes.
	writeFailures(p, res)
	p("Every run, with its exact command line, configuration and rusage, is in `results.json` (%d runs).", len(res.Runs))
	return bw.Flush()
}

func writeTable51(p func(string, ...any), res *Results, sets []string) {
	p("## Table 5-1 — local backup by block size and transfer buffer")
	p("")
	p("Average / Peak KB/s from Kura's Job Monitor (the seed's layout). One fresh library per combination, `kura backup --compress %s`, *fsync*.", res.Compress)
	p("")
	head := "| block – buffer |"
	rule := "|---|"
	for _, s := range sets {
		head += " " + s + " |"
		rule += "---:|"
	}
	table51 := func(f func(Run) string) {
		p("%s", head)
		p("%s", rule)
		for _, c := range Combos {
			line := "| " + c.String() + " |"
			for _, s := range sets {
				r, _, ok := res.Median(func(r Run) bool {
					return r.Test == TestTable51 && r.Tool == ToolKura && r.Phase == PhaseBackup && r.Set == s && r.Block == c.Block && r.Buffer == c.Buffer
				})
				if ok {
					line += " " + f(r) + " |"
				} else {
					line += " — |"
				}
			}
			p("%s", line)
		}
		p("")
	}
	table51(func(r Run) string {
		return units.Thousands(int64(math.Round(r.AvgKBps))) + " / " + units.Thousands(int64(math.Round(r.PeakKBps)))
	})
	p("Time (*job* time, wall-clock in brackets) and compression ratio:")
	p("")
	table51(func(r Run) string {
		return fmt.Sprintf("%s (%s) · %s", duration(r.JobSeconds), duration(r.Seconds), r.Ratio)
	})
	p("Peak memory (max RSS) of each `kura backup` process:")
	p("")
	table51(func(r Run) string { return rss(r.MaxRSSKiB) })
}

func writePhases(p func(string, ...any), res *Results, sets []string) {
	p("## Seed 001 — backup, verify and restore phases")
	p("")
	p("Block %d KiB, buffer %d KiB (Kura's default). Each phase is its own process; wall-clock time and rate. Verify level *data* (decode the stream, re-hash every file).", DefaultCombo.Block>>10, DefaultCombo.Buffer>>10)
	p("")
	p("| set | backup | verify | restore | delete restored files (not in any rate) | max RSS backup / verify / restore |")
	p("|---|---:|---:|---:|---:|---:|")
	for _, s := range sets {
		get := func(test, phase string) (Run, bool) {
			r, _, ok := res.Median(func(r Run) bool {
				return r.Test == test && r.Tool == ToolKura && r.Phase == phase && r.Set == s &&
					(phase == PhaseDelete || r.Block == DefaultCombo.Block && r.Buffer == DefaultCombo.Buffer)
			})
			return r, ok
		}
		var cells, mem []string
		for _, ph := range []struct{ test, phase string }{{TestTable51, PhaseBackup}, {TestPhases, PhaseVerify}, {TestPhases, PhaseRestore}} {
			if r, ok := get(ph.test, ph.phase); ok {
				cells = append(cells, fmt.Sprintf("%s · %.1f MiB/s", duration(r.Seconds), r.MiBps))
				mem = append(mem, rss(r.MaxRSSKiB))
			} else {
				cells = append(cells, "—")
				mem = append(mem, "—")
			}
		}
		del := "—"
		if r, ok := get(TestPhases, PhaseDelete); ok {
			del = fmt.Sprintf("%s · %s files/s", duration(r.Seconds), units.Thousands(int64(math.Round(r.FilesPerSec))))
		}
		p("| %s | %s | %s | %s |", s, strings.Join(cells, " | "), del, strings.Join(mem, " / "))
	}
	p("")
}

func writeFailures(p func(string, ...any), res *Results) {
	var failed []Run
	for _, r := range res.Runs {
		if !r.OK() {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		p("## Failed runs")
		p("")
		p("| test | set | tool | phase | run | exit | error |")
		p("|---|---|---|---|---:|---:|---|")
		for _, r := range failed {
			p("| %s | %s | %s | %s | %d | %d | %s |", r.Test, r.Set, r.Tool, r.Phase, r.Rep, r.ExitCode, cell(r.Error))
		}
		p("")
	}
	if len(res.Notes) > 0 {
		p("## Notes")
		p("")
		for _, n := range res.Notes {
			p("- %s", n)
		}
		p("")
	}
}

func writePeers(p func(string, ...any), res *Results, sets []string) {
	p("## Peers — same data, same disk")
	p("")
	p("Kura ÷ peer: Kura's rate divided by the peer's (above 1: Kura is faster); for size, Kura's media bytes divided by the peer's output (below 1: Kura's is smaller). Kura rows use block %d KiB, buffer %d KiB.", DefaultCombo.Block>>10, DefaultCombo.Buffer>>10)
	p("")
	median := func(set, tool, phase string) (Run, bool) {
		r, _, ok := res.Median(func(r Run) bool {
			if r.Set != set || r.Tool != tool || r.Phase != phase {
				return false
			}
			if tool == ToolKura && phase == PhaseDelete {
				return r.Test == TestPhases
			}
			if tool == ToolKura {
				return (r.Test == TestTable51 || r.Test == TestPhases) && r.Block == DefaultCombo.Block && r.Buffer == DefaultCombo.Buffer
			}
			return r.Test == TestPeers
		})
		return r, ok
	}
	durability := func(r Run) string {
		if r.Durable {
			return "fsync"
		}
		return "no fsync"
	}
	syncAfter := func(r Run) string {
		if r.Durable {
			return "—"
		}
		return duration(r.SyncSeconds)
	}
	p("### Backup")
	p("")
	p("| set | tool | time | MiB/s | files/s | output | ratio | Kura ÷ peer rate | Kura ÷ peer size | sync after | max RSS | durability |")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range sets {
		k, kok := median(s, ToolKura, PhaseBackup)
		for _, t := range []struct{ tool, label string }{
			{ToolKura, fmt.Sprintf("`kura backup --compress %s`", res.Compress)},
			{ToolTar, "`tar -cf`"},
			{ToolTarZstd, "`tar -cf - \\| zstd -T0`"},
			{ToolRestic, "`restic backup`"},
		} {
			r, ok := median(s, t.tool, PhaseBackup)
			if !ok {
				continue
			}
			if t.tool == ToolRestic && r.Level == "auto" {
				t.label = "`restic backup --compression auto`"
			}
			rate, size := "—", "—"
			if t.tool != ToolKura && kok {
				rate = ratio(k.MiBps, r.MiBps)
				size = ratio(float64(k.OutBytes), float64(r.OutBytes))
			}
			comp := r.Ratio
			if comp == "" && r.OutBytes > 0 {
				comp = fmt.Sprintf("%.2f:1", float64(r.Bytes)/float64(r.OutBytes))
			}
			p("| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |", s, t.label, duration(r.Seconds), r.MiBps,
				units.Thousands(int64(math.Round(r.FilesPerSec))), formatBytes(r.OutBytes), comp, rate, size, syncAfter(r), rss(r.MaxRSSKiB), durability(r))
		}
	}
	p("")
	p("### Restore")
	p("")
	p("| set | tool | time | MiB/s | files/s | Kura ÷ peer rate | sync after | max RSS | durability | delete afterwards (not in any rate) |")
	p("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, s := range sets {
		k, kok := median(s, ToolKura, PhaseRestore)
		for _, t := range []struct{ tool, label string }{{ToolKura, "`kura restore`"}, {ToolTar, "`tar -xf`"}, {ToolRestic, "`restic restore`"}} {
			r, ok := median(s, t.tool, PhaseRestore)
			if !ok {
				continue
			}
			rate := "—"
			if t.tool != ToolKura && kok {
				rate = ratio(k.MiBps, r.MiBps)
			}
			del := "—"
			if d, ok := median(s, t.tool, PhaseDelete); ok {
				del = duration(d.Seconds)
			}
			p("| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |", s, t.label, duration(r.Seconds), r.MiBps,
				units.Thousands(int64(math.Round(r.FilesPerSec))), rate, syncAfter(r), rss(r.MaxRSSKiB), durability(r), del)
		}
	}
	p("")
}

func sampleSize(res *Results) string {
	for _, s := range res.Data.Sets {
		if s.SampleBytes > 0 {
			return formatBytes(s.SampleBytes)
		}
	}
	return "4 MiB"
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func rss(kib int64) string {
	if kib <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(kib)/1024)
}

func disk(d Disk) string {
	if d.Source == "" {
		return cell(d.Path)
	}
	return fmt.Sprintf("%s on %s (%s, %s), %s, %s free", cell(d.Path), cell(d.Source), cell(d.FSType), cell(d.Options),
		formatBytes(d.SizeB), formatBytes(d.AvailB))
}

// duration writes seconds as 0.42 s, 12.3 s, 4 m 05 s or 2 h 03 m.
func duration(s float64) string {
	switch {
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	case s < 60:
		return fmt.Sprintf("%.1f s", s)
	case s < 3600:
		t := int64(math.Round(s))
		return fmt.Sprintf("%d m %02d s", t/60, t%60)
	}
	t := int64(math.Round(s / 60))
	return fmt.Sprintf("%d h %02d m", t/60, t%60)
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "\\|")
}
