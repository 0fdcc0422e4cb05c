package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kura-backup/kura/internal/units"
)

// The report's section for the network test (issue 12): through an agent
// ÷ local in interleaved pairs with the CPU per GiB of each side, and
// Kura's local backups and restores against tar on the same sets.

// NetRow is one case's figures in the network table. Rates are MB/s
// (10^6 bytes per second of wall-clock time); CPU figures are user +
// system seconds per GiB of the set. Every figure is a median over the
// case's runs (the mean of the middle two for an even count), NaN when
// there is none.
type NetRow struct {
	Case      string
	LocalMBps float64
	AgentMBps float64
	// PairRatios are agent ÷ local of each pair in pair order (NaN where
	// a side of the pair failed); Ratio is their median.
	PairRatios []float64
	Ratio      float64
	LocalCPU   float64 // the local kura backup process
	AgentCPU   float64
	ServerCPU  float64
	// NetworkCPU is the median of agent + server per run; CPURatio is
	// NetworkCPU ÷ LocalCPU.
	NetworkCPU float64
	CPURatio   float64
}

// MeetsRatio reports whether through an agent ÷ local reaches
// NetTargetRatio.
func (r NetRow) MeetsRatio() bool { return r.Ratio >= NetTargetRatio }

// MeetsCPU reports whether the network path's CPU is at most NetTargetCPU
// times the local path's.
func (r NetRow) MeetsCPU() bool { return r.CPURatio <= NetTargetCPU }

// NetRows are the network test's rows, one per case in the order the
// cases ran.
func NetRows(res *Results) []NetRow {
	var rows []NetRow
	for _, cas := range netCaseNames(res) {
		local := netRunsOf(res, cas, false, PhaseBackup)
		agent := netRunsOf(res, cas, true, PhaseBackup)
		row := NetRow{Case: cas,
			LocalMBps:  medianOf(mapRuns(local, decimalMBps)),
			AgentMBps:  medianOf(mapRuns(agent, decimalMBps)),
			LocalCPU:   medianOf(mapRuns(local, func(r Run) float64 { return perGiB(r.UserSeconds+r.SysSeconds, r) })),
			AgentCPU:   medianOf(mapRuns(agent, func(r Run) float64 { return perGiB(r.AgentCPUSeconds, r) })),
			ServerCPU:  medianOf(mapRuns(agent, func(r Run) float64 { return perGiB(r.ServerCPUSeconds, r) })),
			NetworkCPU: medianOf(mapRuns(agent, func(r Run) float64 { return perGiB(r.AgentCPUSeconds+r.ServerCPUSeconds, r) })),
		}
		row.CPURatio = row.NetworkCPU / row.LocalCPU
		for _, pair := range pairsOf(local, agent) {
			ratio := math.NaN()
			l, lok := runOfPair(local, pair)
			a, aok := runOfPair(agent, pair)
			if lok && aok {
				ratio = decimalMBps(a) / decimalMBps(l)
			}
			row.PairRatios = append(row.PairRatios, ratio)
		}
		row.Ratio = medianOf(row.PairRatios)
		rows = append(rows, row)
	}
	return rows
}

// netCaseNames are the cases of res's network runs in the order they ran.
func netCaseNames(res *Results) []string {
	var out []string
	for _, r := range res.Runs {
		if r.Test == TestNetwork && r.Case != "" && !slices.Contains(out, r.Case) {
			out = append(out, r.Case)
		}
	}
	return out
}

// netRunsOf are the successful network runs of a case's side (through the
// agent or local) and phase, in the order they ran.
func netRunsOf(res *Results, cas string, agent bool, phase string) []Run {
	var out []Run
	for _, r := range res.Runs {
		if r.Test == TestNetwork && r.Case == cas && r.Phase == phase && (r.Client != "") == agent && r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// netPeerRuns are the successful network-test runs of a tool on a set.
func netPeerRuns(res *Results, set, tool, phase string) []Run {
	var out []Run
	for _, r := range res.Runs {
		if r.Test == TestNetwork && r.Set == set && r.Tool == tool && r.Phase == phase && r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// pairsOf are the pair numbers of either side, ascending.
func pairsOf(sides ...[]Run) []int {
	var out []int
	for _, rs := range sides {
		for _, r := range rs {
			if !slices.Contains(out, r.Rep) {
				out = append(out, r.Rep)
			}
		}
	}
	slices.Sort(out)
	return out
}

func runOfPair(rs []Run, pair int) (Run, bool) {
	i := slices.IndexFunc(rs, func(r Run) bool { return r.Rep == pair })
	if i < 0 {
		return Run{}, false
	}
	return rs[i], true
}

func mapRuns(rs []Run, f func(Run) float64) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		out = append(out, f(r))
	}
	return out
}

// medianOf is the median of the numbers of xs (NaN are left out): the
// middle one, or the mean of the middle two; NaN when there is none.
func medianOf(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// decimalMBps is a run's set bytes over its wall-clock time in MB/s
// (10^6 bytes per second); NaN without a time.
func decimalMBps(r Run) float64 {
	if r.Seconds <= 0 {
		return math.NaN()
	}
	return float64(r.Bytes) / 1e6 / r.Seconds
}

// perGiB is seconds per GiB (2^30 bytes) of the run's set; NaN for an
// empty set.
func perGiB(seconds float64, r Run) float64 {
	if r.Bytes <= 0 {
		return math.NaN()
	}
	return seconds / (float64(r.Bytes) / (1 << 30))
}

// fixed writes x with format, or — for NaN and infinities.
func fixed(format string, x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf(format, x)
}

// meets is the report's word for a figure x against its target: meets,
// short, or not measured.
func meets(x float64, ok bool) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "not measured"
	case ok:
		return "meets"
	}
	return "short"
}

func writeNetwork(p func(string, ...any), res *Results) {
	p("## Through an agent ÷ local (issue 12)")
	p("")
	p("Each case runs in interleaved pairs: a local `kura backup --vtl %s --compress LEVEL --json SET` into a fresh home and library, and `kura backup --client %s --vtl %s --compress LEVEL --json SET` through a server and an agent on loopback started once for the test (the agent's saveset is expired and its tape erased after each run). Both sides use block %d KiB, buffer %d KiB and fsync. "+
		"The order alternates: local first in odd pairs, through the agent first in even ones, so that drift favours neither side. "+
		"MB/s = 10^6 bytes of the set per second of wall-clock time (start to exit of `kura backup`). Figures are medians over the runs (the mean of the middle two for an even count). "+
		"CPU s/GiB is user + system CPU seconds per GiB (2^30 bytes) of the set: *local* is the `kura backup` process; *agent* and *server* are theirs during the run, from /proc; *network ÷ local CPU* is (agent + server) ÷ local. The `kura backup` CLI that follows a remote job is not counted in them (it is in the table of every run below).",
		benchLibrary, clientA, netLibrary, DefaultCombo.Block>>10, DefaultCombo.Buffer>>10)
	p("")
	rows := NetRows(res)
	p("| case | local MB/s (median) | through agent MB/s (median) | agent ÷ local per pair | median ratio | CPU s/GiB local | CPU s/GiB agent | CPU s/GiB server | network ÷ local CPU |")
	p("|---|---:|---:|---|---:|---:|---:|---:|---:|")
	var verdicts []string
	for _, r := range rows {
		pairs := make([]string, len(r.PairRatios))
		for i, x := range r.PairRatios {
			pairs[i] = fixed("%.2f", x)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", r.Case, fixed("%.1f", r.LocalMBps), fixed("%.1f", r.AgentMBps), strings.Join(pairs, " / "),
			fixed("%.2f", r.Ratio), fixed("%.2f", r.LocalCPU), fixed("%.2f", r.AgentCPU), fixed("%.2f", r.ServerCPU), fixed("%.2f", r.CPURatio))
		verdicts = append(verdicts, fmt.Sprintf("%s: speed %s (%s), CPU %s (%s×)", r.Case, meets(r.Ratio, r.MeetsRatio()), fixed("%.2f", r.Ratio),
			meets(r.CPURatio, r.MeetsCPU()), fixed("%.2f", r.CPURatio)))
	}
	p("")
	p("Targets (issue 12): through an agent ÷ local ≥ %.1f, and the network path's CPU (agent + server) ≤ %.1f× the local path's. %s.",
		NetTargetRatio, NetTargetCPU, strings.Join(verdicts, "; "))
	p("")
	writeNetworkRuns(p, res)
	if hasNetworkTar(res) {
		writeNetworkTar(p, res)
	}
}

// writeNetworkRuns lists every backup of the network test in the order it
// ran.
func writeNetworkRuns(p func(string, ...any), res *Results) {
	p("Every backup in the order it ran (Job Monitor Average KB/s from the job's own figures; CPU seconds, not per GiB):")
	p("")
	p("| case | pair | side | time | MB/s | Job Monitor Average KB/s | CPU |")
	p("|---|---:|---|---:|---:|---:|---|")
	for _, r := range res.Runs {
		if r.Test != TestNetwork || r.Phase != PhaseBackup || r.Tool != ToolKura || !r.OK() {
			continue
		}
		side := "local"
		cpu := fmt.Sprintf("%.2f s", r.UserSeconds+r.SysSeconds)
		if r.Client != "" {
			side = "through agent " + r.Client
			cpu = fmt.Sprintf("agent %.2f s + server %.2f s (CLI %.2f s)", r.AgentCPUSeconds, r.ServerCPUSeconds, r.UserSeconds+r.SysSeconds)
		}
		p("| %s | %d | %s | %s | %s | %s | %s |", r.Case, r.Rep, side, duration(r.Seconds), fixed("%.1f", decimalMBps(r)),
			units.Thousands(int64(math.Round(r.AvgKBps))), cpu)
	}
	p("")
}

func hasNetworkTar(res *Results) bool {
	return slices.ContainsFunc(res.Runs, func(r Run) bool {
		return r.Test == TestNetwork && (r.Tool != ToolKura || r.Phase == PhaseRestore)
	})
}

// writeNetworkTar compares each case's local backups and restores with
// tar on the same set.
func writeNetworkTar(p func(string, ...any), res *Results) {
	p("### Small files and restore against tar")
	p("")
	p("Kura's rate ÷ tar's (above 1: Kura is faster), medians. **Backup**: the local backups of the pairs above (fsync included) against `tar -cf` of the same set to the scratch disk, and `tar -cf - | zstd -T0` (level 3, its default) on %s. "+
		"Tar does not fsync: the `sync` run right after it is timed separately and **added to tar's time** here, so that both sides have their data on disk. "+
		"**Restore**: `kura restore` of each pair's local saveset into an empty folder against `tar -xf` of the set's archive, page cache dropped before each; neither fsyncs, and the last column adds the `sync` after each to both.",
		netSmallFiles)
	p("")
	p("| case | Kura backup MB/s | ÷ `tar -cf` + sync | ÷ `tar -cf - \\| zstd -T0` + sync | Kura restore MB/s | ÷ `tar -xf` | ÷ `tar -xf`, both + sync |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	med := func(rs []Run, f func(Run) float64) float64 { return medianOf(mapRuns(rs, f)) }
	mib := func(r Run) float64 { return r.MiBps }
	for _, cas := range netCaseNames(res) {
		kb := netRunsOf(res, cas, false, PhaseBackup)
		kr := netRunsOf(res, cas, false, PhaseRestore)
		if len(kb) == 0 {
			continue
		}
		set := kb[0].Set
		tc := netPeerRuns(res, set, ToolTar, PhaseBackup)
		tz := netPeerRuns(res, set, ToolTarZstd, PhaseBackup)
		tx := netPeerRuns(res, set, ToolTar, PhaseRestore)
		p("| %s | %s | %s | %s | %s | %s | %s |", cas, fixed("%.1f", med(kb, decimalMBps)),
			fixed("%.2f", med(kb, synced)/med(tc, synced)), fixed("%.2f", med(kb, synced)/med(tz, synced)),
			fixed("%.1f", med(kr, decimalMBps)), fixed("%.2f", med(kr, mib)/med(tx, mib)), fixed("%.2f", med(kr, synced)/med(tx, synced)))
	}
	p("")
}
