package bench

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// netResults are a network test of two cases: test3 --compress none in
// three pairs, and test2 --compress auto in two pairs whose second local
// backup failed, with tar on test2.
func netResults() *Results {
	res := &Results{Version: 1, Suite: "seed", Repeats: 3, Compress: "auto", Parts: []string{PartNetwork}, DropCaches: true,
		Peers: []Peer{{Name: "tar", Version: "tar (GNU tar) 1.34"}, {Name: "zstd", Version: "Zstandard CLI v1.5.4"}}}
	add := func(r Run) {
		r.setRates()
		res.Runs = append(res.Runs, r)
	}
	backup := func(nc NetCase, pair int, agent bool, bytes int64, secs, cpu, server float64) Run {
		r := Run{Test: TestNetwork, Case: nc.Name(), Set: nc.Set, Tool: ToolKura, Phase: PhaseBackup, Rep: pair, Level: nc.Level,
			Bytes: bytes, Files: 10, Seconds: secs, AvgKBps: float64(bytes>>10) / secs, Durable: true}
		if agent {
			r.Client, r.Library, r.AgentCPUSeconds, r.ServerCPUSeconds, r.UserSeconds = clientA, netLibrary, cpu, server, 0.25
		} else {
			r.UserSeconds, r.SysSeconds = cpu*3/4, cpu/4
		}
		return r
	}
	// test3, none, 2 GiB: local ÷ agent per pair 10/12.5, 10/10, 8/8.8 s;
	// CPU local 4 s (2 s/GiB), agent 3 s (1.5), server 2, 2, 3 s.
	none, auto := NetCases[0], NetCases[2]
	const gib = int64(1 << 30)
	add(backup(none, 1, false, 2*gib, 10, 4, 0))
	add(backup(none, 1, true, 2*gib, 12.5, 3, 2))
	add(backup(none, 2, true, 2*gib, 10, 3, 2))
	add(backup(none, 2, false, 2*gib, 10, 4, 0))
	add(backup(none, 3, false, 2*gib, 8, 4, 0))
	add(backup(none, 3, true, 2*gib, 8.8, 3, 3))
	// test2, auto, 1 GiB: pair 1 local 4 s, agent 5 s; pair 2 agent 6 s,
	// local failed. CPU local 2 s; agent 2, 2.4 s; server 0.4, 0.6 s.
	add(backup(auto, 1, false, gib, 4, 2, 0))
	add(backup(auto, 1, true, gib, 5, 2, 0.4))
	add(backup(auto, 2, true, gib, 6, 2.4, 0.6))
	f := backup(auto, 2, false, gib, 1, 1, 0)
	f.ExitCode, f.Error = 1, "disk full"
	add(f)
	// Restores of the local savesets, and tar on test2 (with the sync
	// after each, in seconds).
	restore := Run{Test: TestNetwork, Case: auto.Name(), Set: auto.Set, Tool: ToolKura, Phase: PhaseRestore, Rep: 1, Level: auto.Level,
		Bytes: gib, Files: 10, Seconds: 2, SyncSeconds: 1}
	add(restore)
	peer := func(tool, phase string, secs, sync float64) Run {
		return Run{Test: TestNetwork, Set: auto.Set, Tool: tool, Phase: phase, Rep: 1, Bytes: gib, Files: 10, Seconds: secs, SyncSeconds: sync}
	}
	add(peer(ToolTar, PhaseBackup, 3, 1))
	add(peer(ToolTar, PhaseRestore, 2.5, 0.5))
	add(peer(ToolTarZstd, PhaseBackup, 4.5, 0.5))
	return res
}

func TestNetRows(t *testing.T) {
	rows := NetRows(netResults())
	if len(rows) != 2 || rows[0].Case != "test3, --compress none" || rows[1].Case != "test2, --compress auto" {
		t.Fatalf("rows %+v", rows)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	mb2 := float64(2<<30) / 1e6
	none := rows[0]
	near("test3 local MB/s", none.LocalMBps, mb2/10)
	near("test3 agent MB/s", none.AgentMBps, mb2/10)
	if len(none.PairRatios) != 3 {
		t.Fatalf("test3 pair ratios %v", none.PairRatios)
	}
	for i, want := range []float64{10 / 12.5, 1, 8 / 8.8} { // pair order, not run order
		near("test3 pair ratio", none.PairRatios[i], want)
	}
	near("test3 ratio", none.Ratio, 8/8.8)
	near("test3 local CPU", none.LocalCPU, 2)
	near("test3 agent CPU", none.AgentCPU, 1.5)
	near("test3 server CPU", none.ServerCPU, 1)
	near("test3 network CPU", none.NetworkCPU, 2.5)
	near("test3 CPU ratio", none.CPURatio, 1.25)
	if !none.MeetsRatio() || !none.MeetsCPU() {
		t.Errorf("test3 meets %v / %v, want both", none.MeetsRatio(), none.MeetsCPU())
	}

	auto := rows[1]
	mb1 := float64(1<<30) / 1e6
	near("test2 local MB/s", auto.LocalMBps, mb1/4)
	near("test2 agent MB/s", auto.AgentMBps, (mb1/5+mb1/6)/2) // even count: mean of the middle two
	if len(auto.PairRatios) != 2 || !math.IsNaN(auto.PairRatios[1]) {
		t.Fatalf("test2 pair ratios %v, want the second missing", auto.PairRatios)
	}
	near("test2 ratio", auto.Ratio, 0.8)
	near("test2 network CPU", auto.NetworkCPU, 2.7)
	near("test2 CPU ratio", auto.CPURatio, 1.35)
	if auto.MeetsRatio() || auto.MeetsCPU() {
		t.Errorf("test2 meets %v / %v, want neither", auto.MeetsRatio(), auto.MeetsCPU())
	}
}

func TestWriteReportNetwork(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, netResults()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## Through an agent ÷ local (issue 12)",
		"| case | local MB/s (median) | through agent MB/s (median) | agent ÷ local per pair | median ratio | CPU s/GiB local | CPU s/GiB agent | CPU s/GiB server | network ÷ local CPU |",
		"| test3, --compress none | 214.7 | 214.7 | 0.80 / 1.00 / 0.91 | 0.91 | 2.00 | 1.50 | 1.00 | 1.25 |",
		"| test2, --compress auto | 268.4 | 196.9 | 0.80 / — | 0.80 | 2.00 | 2.20 | 0.50 | 1.35 |",
		"Targets (issue 12): through an agent ÷ local ≥ 0.9, and the network path's CPU (agent + server) ≤ 1.3× the local path's. " +
			"test3, --compress none: speed meets (0.91), CPU meets (1.25×); test2, --compress auto: speed short (0.80), CPU short (1.35×).",
		"| test3, --compress none | 2 | through agent bench1 | 10.0 s | 214.7 | 209,715 | agent 3.00 s + server 2.00 s (CLI 0.25 s) |",
		"### Small files and restore against tar",
		// Kura 4 s with fsync against tar 3 s + sync 1 s, tar | zstd
		// 4.5 + 0.5 s; restore 2 s (+ 1 s sync) against tar -xf 2.5 s
		// (+ 0.5 s).
		"| test2, --compress auto | 268.4 | 1.00 | 1.25 | 536.9 | 1.25 | 1.00 |",
		"| test3, --compress none | 214.7 | — | — | — | — | — |",
		"the network test's MB/s are 10^6 bytes per second",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Every backup in the order it ran: pair 2 ran through the agent first.
	agent2 := strings.Index(md, "| test3, --compress none | 2 | through agent bench1 |")
	local2 := strings.Index(md, "| test3, --compress none | 2 | local |")
	if agent2 < 0 || local2 < 0 || agent2 > local2 {
		t.Errorf("pair 2's rows: agent at %d, local at %d; want the agent first", agent2, local2)
	}
	// tar is compared in the network section, not in an empty peers one.
	if strings.Contains(md, "## Peers") {
		t.Error("a peers section without peer runs")
	}
}

func TestPairSides(t *testing.T) {
	for pair, want := range map[int][2]string{
		1: {sideLocal, sideAgent}, 2: {sideAgent, sideLocal}, 3: {sideLocal, sideAgent}, 4: {sideAgent, sideLocal},
	} {
		if got := pairSides(pair); got != want {
			t.Errorf("pair %d runs %v, want %v", pair, got, want)
		}
	}
}

func TestNetCasesSkipAbsentSets(t *testing.T) {
	var log bytes.Buffer
	rn := &runner{o: RunOptions{Data: "/data", Repeats: 2, Log: &log}, res: &Results{},
		sets: map[string]SetInfo{"test2": {Name: "test2"}}}
	cases := rn.netCases()
	if len(cases) != 1 || cases[0] != NetCases[2] {
		t.Fatalf("cases %v, want test2's only", cases)
	}
	if len(rn.res.Notes) != 2 || !strings.Contains(log.String(), "case test3, --compress none skipped") {
		t.Errorf("notes %q, log %q", rn.res.Notes, log.String())
	}
	// Without tar: 2 pairs × (2 backups + the agent's expiry).
	if n := rn.netRuns(cases); n != 6 {
		t.Errorf("netRuns = %d, want 6", n)
	}
	// With tar and zstd: + 2 × (restore, delete) + 2 × (tar -cf, -xf, delete, | zstd).
	rn.res.Peers = []Peer{{Name: "tar"}, {Name: "zstd"}}
	if n := rn.netRuns(cases); n != 6+4+8 {
		t.Errorf("netRuns with tar = %d, want 18", n)
	}
}

func TestSavesetBarcodes(t *testing.T) {
	ss := api.Saveset{ID: 4, Parts: []api.Part{{Barcode: "KURA01"}, {Barcode: "KURA02"}}, IndexPart: api.Part{Barcode: "KURA02"}}
	if got, err := savesetBarcodes(ss); err != nil || !slices.Equal(got, []string{"KURA01", "KURA02"}) {
		t.Errorf("savesetBarcodes = %v, %v", got, err)
	}
	if _, err := savesetBarcodes(api.Saveset{ID: 5}); err == nil {
		t.Error("a saveset without tapes: no error")
	}
}

func TestDefaultPartsLeaveOutNetwork(t *testing.T) {
	if slices.Contains(DefaultParts, PartNetwork) || !slices.Contains(Parts, PartNetwork) {
		t.Errorf("DefaultParts %v, Parts %v", DefaultParts, Parts)
	}
	if got, err := ParseParts("network,local"); err != nil || !slices.Equal(got, []string{PartNetwork, PartLocal}) {
		t.Errorf("ParseParts = %v, %v", got, err)
	}
}
