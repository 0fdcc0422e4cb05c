package bench

import (
	"fmt"
	"math"
	"slices"
)

// The report's section for the encryption test (issue 17): clear ÷
// encrypted through an agent in interleaved pairs, with the CPU per GiB of
// the agent and the server.

// EncRow is one case's figures in the encryption table: medians over the
// case's runs (NaN when there is none). Rates are MB/s; CPU figures are
// user + system seconds per GiB of the set.
type EncRow struct {
	Case                string
	ClearMBps, EncMBps  float64
	Ratio               float64 // median of the pairs' encrypted ÷ clear
	ClearAgentCPU       float64
	EncAgentCPU         float64
	ClearSrv, EncSrvCPU float64
}

// EncRows are the encryption test's rows, one per case.
func EncRows(res *Results) []EncRow {
	var rows []EncRow
	var cases []string
	for _, r := range res.Runs {
		if r.Test == TestEncrypt && !slices.Contains(cases, r.Case) {
			cases = append(cases, r.Case)
		}
	}
	for _, cas := range cases {
		of := func(side string) []Run {
			var out []Run
			for _, r := range res.Runs {
				if r.Test == TestEncrypt && r.Case == cas && r.Variant == side && r.Phase == PhaseBackup && r.OK() {
					out = append(out, r)
				}
			}
			return out
		}
		clear, enc := of(sideClear), of(sideEncrypted)
		row := EncRow{Case: cas,
			ClearMBps:     medianOf(mapRuns(clear, decimalMBps)),
			EncMBps:       medianOf(mapRuns(enc, decimalMBps)),
			ClearAgentCPU: medianOf(mapRuns(clear, func(r Run) float64 { return perGiB(r.AgentCPUSeconds, r) })),
			EncAgentCPU:   medianOf(mapRuns(enc, func(r Run) float64 { return perGiB(r.AgentCPUSeconds, r) })),
			ClearSrv:      medianOf(mapRuns(clear, func(r Run) float64 { return perGiB(r.ServerCPUSeconds, r) })),
			EncSrvCPU:     medianOf(mapRuns(enc, func(r Run) float64 { return perGiB(r.ServerCPUSeconds, r) })),
		}
		var ratios []float64
		for _, c := range clear {
			for _, e := range enc {
				if c.Rep == e.Rep {
					ratios = append(ratios, decimalMBps(e)/decimalMBps(c))
				}
			}
		}
		row.Ratio = medianOf(ratios)
		rows = append(rows, row)
	}
	return rows
}

func writeEncrypt(p func(string, ...any), res *Results) {
	p("## Issue 17 — encryption at rest, through an agent")
	p("")
	p("Interleaved pairs through one server on loopback: agent `%s` backs up clear, agent `%s` encrypts (`kura client set %s --encrypt`: age, X25519, ChaCha20-Poly1305 after compression), the same set into the same library (block %d KiB, buffer %d KiB); the order alternates per pair. MB/s are 10^6 bytes of the set per second of wall-clock time; CPU is user + system seconds per GiB of the set. Target: encrypted ÷ clear ≥ %.2f.",
		clientA, clientB, clientB, DefaultCombo.Block>>10, DefaultCombo.Buffer>>10, EncTargetRatio)
	p("")
	p("| case | clear MB/s | encrypted MB/s | encrypted ÷ clear | agent CPU s/GiB clear → encrypted | server CPU s/GiB clear → encrypted |")
	p("|---|---:|---:|---:|---:|---:|")
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "—"
		}
		return fmt.Sprintf("%.1f", x)
	}
	g := func(x float64) string {
		if math.IsNaN(x) {
			return "—"
		}
		return fmt.Sprintf("%.2f", x)
	}
	for _, r := range EncRows(res) {
		mark := ""
		if !math.IsNaN(r.Ratio) && r.Ratio < EncTargetRatio {
			mark = " (below target)"
		}
		p("| %s | %s | %s | %s%s | %s → %s | %s → %s |", r.Case, f(r.ClearMBps), f(r.EncMBps), g(r.Ratio), mark,
			g(r.ClearAgentCPU), g(r.EncAgentCPU), g(r.ClearSrv), g(r.EncSrvCPU))
	}
	p("")
}
