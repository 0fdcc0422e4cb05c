package bench

import (
	"fmt"
	"strings"
	"testing"
)

// The pglink report: the runs of each link at each level with the
// database each link backed up, and auto judged against the best fixed
// level of its own test only (the link test's runs do not count).
func TestPGLinkReport(t *testing.T) {
	res := &Results{PG: &PGBench{Server: "postgres (PostgreSQL) 15", Scale: 100, SlowScale: 10,
		Databases: map[string]int{"pgbench_s100": 100, "pgbench_s10": 10}, Init: []string{"pgbench -i -s 100 pgbench_s100"}}}
	for i, lv := range LinkLevels {
		res.Runs = append(res.Runs,
			Run{Test: TestPGLink, Link: "unlimited", Level: lv, Case: "pgbench_s100", Bytes: 1_000_000_000, OutBytes: 10_000_000, JobSeconds: 20 + float64(i), Seconds: 21 + float64(i), Ratio: "100.00:1"},
			Run{Test: TestPGLink, Link: "10 Mbit/s", Level: lv, Case: "pgbench_s10", Bytes: 100_000_000, OutBytes: 1_000_000, JobSeconds: 5, Seconds: 5, Ratio: "100.00:1"},
			Run{Test: TestLink, Link: "unlimited", Level: lv, JobSeconds: 1, Seconds: 1}) // another test's: ignored
	}
	vs := PGLinkVerdicts(res)
	if len(vs) != 2 || vs[0].Best != "none" || vs[0].BestSeconds != 20 || vs[0].AutoSeconds != 24 || vs[0].Within || !vs[1].Within {
		t.Fatalf("verdicts: %+v", vs)
	}
	if db, scale := res.PG.db(Links[2]); db != "pgbench_s10" || scale != 10 {
		t.Errorf("the 10 Mbit/s link's database: %s %d", db, scale)
	}
	if db, _ := res.PG.db(Links[1]); db != "pgbench_s100" {
		t.Errorf("the 100 Mbit/s link's database: %s", db)
	}
	var b strings.Builder
	writePGLink(func(f string, a ...any) { b.WriteString(fmt.Sprintf(f, a...) + "\n") }, res)
	out := b.String()
	for _, want := range []string{"At 10 Mbit/s the database is scale 10, not 100", "| unlimited | pgbench_s100 | 953.7 MiB | none | 9.5 MiB (10,000,000) | 20.0 s | 50.0 |",
		"| 10 Mbit/s | pgbench_s10 |", "**auto is more than 10 % slower than the best fixed level at**: unlimited"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
