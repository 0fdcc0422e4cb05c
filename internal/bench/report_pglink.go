package bench

import (
	"fmt"
	"strings"

	"github.com/kura-backup/kura/internal/units"
)

// writePGLink is seed 003's table on a real database: bytes sent, time and
// rate of each level at each link, and auto against the best fixed level.
func writePGLink(p func(string, ...any), res *Results) {
	p("## Seed 003 on a real database — a pgbench database over limited links, by compression level")
	p("")
	if b := res.PG; b != nil {
		p("PostgreSQL: %s, started for the run in a temporary folder (fsync off: the database is the source, not what is measured). Databases made with %s (%.0f s).",
			orDash(b.Server), "`"+strings.Join(b.Init, "`, `")+"`", b.Seconds)
		if b.SlowScale != b.Scale {
			p("**At 10 Mbit/s the database is scale %d, not %d** — an uncompressed dump of the larger one would take about %s per run there; the other links back up scale %d.",
				b.SlowScale, b.Scale, duration(float64(b.Scale)*10e6/(10e6/8)), b.Scale)
		}
		p("")
	}
	p("Backed up by agent `%s` (started with `--allow-plugin postgresql` and the database's PGHOST/PGPORT/PGUSER) into one library (block %d KiB, buffer %d KiB): "+
		"`kura backup --client %s --compress LEVEL [--bwlimit RATE] --json --plugin postgresql --db DB` — pg_dump --format=custom with its own compression off, "+
		"compressed by the agent before the link, as seed 003's plug-in. **The links are emulated** with the agent's `--bwlimit` on loopback (no latency, no loss). "+
		"Bytes sent are the media bytes; time is the Job Monitor's (pg_dump included); rate is the dump's bytes over that time (MB = 10^6 bytes, as the seed); agent CPU is the agent's own user + system time (compressing; pg_dump and PostgreSQL are not in it). Each saveset is erased after its run.",
		clientA, DefaultCombo.Block>>10, DefaultCombo.Buffer>>10, clientA)
	p("")
	p("| link | database | dump | level | bytes sent | time (job) | rate MB/s | ratio | agent CPU |")
	p("|---|---|---:|---|---:|---:|---:|---:|---:|")
	for _, l := range Links {
		for _, lv := range LinkLevels {
			r, ok := testLinkMedian(res, TestPGLink, l.Name, lv)
			if !ok {
				continue
			}
			rate := 0.0
			if t := linkTime(r); t > 0 {
				rate = float64(r.Bytes) / 1e6 / t
			}
			cpu := "—"
			if r.AgentCPUSeconds > 0 {
				cpu = fmt.Sprintf("%.1f s", r.AgentCPUSeconds)
			}
			p("| %s | %s | %s | %s | %s (%s) | %s | %.1f | %s | %s |", l.Name, r.Case, formatBytes(r.Bytes), lv, formatBytes(r.OutBytes),
				units.Thousands(r.OutBytes), duration(linkTime(r)), rate, r.Ratio, cpu)
		}
	}
	p("")
	writeAutoVerdicts(p, PGLinkVerdicts(res))
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
