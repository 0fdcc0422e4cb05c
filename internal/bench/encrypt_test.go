package bench

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// The encryption table pairs each clear run with the encrypted run of the
// same pair, takes the median of the ratios, and flags a case below the
// target; a failed run counts in no figure.
func TestEncRowsPairsAndTarget(t *testing.T) {
	const gib = 1 << 30
	run := func(side string, pair int, seconds, agentCPU float64) Run {
		return Run{Test: TestEncrypt, Case: "test3, --compress auto", Set: "test3", Phase: PhaseBackup, Variant: side, Rep: pair,
			Bytes: gib, Seconds: seconds, AgentCPUSeconds: agentCPU, ServerCPUSeconds: 1}
	}
	res := &Results{Runs: []Run{
		run(sideClear, 1, 10, 2), run(sideEncrypted, 1, 11, 2.5), // 0.909
		run(sideEncrypted, 2, 12, 2.6), run(sideClear, 2, 10, 2.1), // 0.833
		run(sideClear, 3, 10, 2), run(sideEncrypted, 3, 10.5, 2.4), // 0.952
	}}
	bad := run(sideEncrypted, 4, 1, 0)
	bad.Error = "failed"
	res.Runs = append(res.Runs, bad)
	rows := EncRows(res)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if math.Abs(r.Ratio-10.0/11) > 1e-9 {
		t.Errorf("ratio %v, want the median pair's 10/11", r.Ratio)
	}
	if math.Abs(r.EncAgentCPU-2.5) > 1e-9 || math.Abs(r.ClearAgentCPU-2) > 1e-9 {
		t.Errorf("agent CPU clear %v, encrypted %v", r.ClearAgentCPU, r.EncAgentCPU)
	}
	var b bytes.Buffer
	writeEncrypt(func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }, res)
	if !strings.Contains(b.String(), "| 0.91 |") || strings.Contains(b.String(), "below target") {
		t.Errorf("report:\n%s", b.String())
	}
	res.Runs[1].Seconds = 20 // pair 1 now 0.5: the median pair is 0.833
	b.Reset()
	writeEncrypt(func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }, res)
	if !strings.Contains(b.String(), "below target") {
		t.Errorf("a case below the target is not flagged:\n%s", b.String())
	}
}
