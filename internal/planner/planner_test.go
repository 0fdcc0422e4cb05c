package planner

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	mib = 1 << 20
	gib = 1 << 30
	tib = 1 << 40
)

func golden(t *testing.T, name string, r Result) {
	t.Helper()
	got := strings.Join(r.Reasons, "\n") + "\n"
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("reasons differ from %s:\n got: %s\nwant: %s", p, got, want)
	}
}

// Seed 004: RAID-5, 3 TB, 25 MB/s, 8 hours, 30 % reserve → 6 generations.
func TestSeedRAID5(t *testing.T) {
	r, err := Plan(Input{Throughput: 25 * mib, Window: 8 * time.Hour, Capacity: 3 * tib, Reserve: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Generations != 6 {
		t.Errorf("generations = %d, want 6 (seed 004)", r.Generations)
	}
	golden(t, "seed-raid5", r)
}

// Seed 004: RAID-10, 2 TB, 65 MB/s, 8 hours, 30 % reserve → 1 generation.
func TestSeedRAID10(t *testing.T) {
	r, err := Plan(Input{Throughput: 65 * mib, Window: 8 * time.Hour, Capacity: 2 * tib, Reserve: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Generations != 1 {
		t.Errorf("generations = %d, want 1 (seed 004)", r.Generations)
	}
	golden(t, "seed-raid10", r)
}

func TestIncrementalsAndDifferentials(t *testing.T) {
	base := Input{Throughput: 100 * mib, Window: 8 * time.Hour, Capacity: 10 * tib, Reserve: 0.3, Daily: 1 * tib, ChangeRate: 0.05, FullEvery: 7}
	incr, err := Plan(base)
	if err != nil {
		t.Fatal(err)
	}
	base.Diff = true
	diff, err := Plan(base)
	if err != nil {
		t.Fatal(err)
	}
	// Six incrementals of 5 % = 30 % more; differentials 5+10+…+30 % = 105 % more.
	if want := int64(13 * tib / 10); abs(incr.CycleBytes-want) > 1<<20 {
		t.Errorf("incremental cycle %d, want %d", incr.CycleBytes, want)
	}
	if want := int64(205 * tib / 100); abs(diff.CycleBytes-want) > 1<<20 {
		t.Errorf("differential cycle %d, want %d", diff.CycleBytes, want)
	}
	if incr.Generations != 7 || diff.Generations != 4 {
		t.Errorf("generations incr %d diff %d, want 7 and 4", incr.Generations, diff.Generations)
	}
	if !incr.Fits {
		t.Error("1 TiB at 100 MiB/s (2.9 h) in 5.6 usable hours should fit")
	}
	golden(t, "weekly-incr", incr)
	golden(t, "weekly-diff", diff)
}

func TestTooBigScalesOut(t *testing.T) {
	r, err := Plan(Input{Throughput: 25 * mib, Window: 8 * time.Hour, Capacity: 3 * tib, Reserve: 0.3, Daily: 1200 * gib, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fits || r.ServersNeeded != 3 || r.VerifyFits {
		t.Errorf("fits %v, servers %d, verify fits %v: want no, 3, no", r.Fits, r.ServersNeeded, r.VerifyFits)
	}
	golden(t, "too-big", r)
}

func TestBadInput(t *testing.T) {
	for _, in := range []Input{
		{Window: time.Hour, Capacity: 1},
		{Throughput: 1, Capacity: 1},
		{Throughput: 1, Window: time.Hour},
		{Throughput: 1, Window: time.Hour, Capacity: 1, Reserve: 1},
		{Throughput: 1, Window: time.Hour, Capacity: 1, ChangeRate: 2},
	} {
		if _, err := Plan(in); err == nil {
			t.Errorf("Plan(%+v) accepted", in)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
