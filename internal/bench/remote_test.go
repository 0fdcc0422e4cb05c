package bench

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseServerURL(t *testing.T) {
	for line, want := range map[string]string{
		"Kura server listening on https://127.0.0.1:40123":     "https://127.0.0.1:40123",
		"Kura server listening on https://[::1]:8420 \n":       "https://[::1]:8420",
		"  home            /var/lib/kura":                      "",
		"Kura server listening on http://127.0.0.1:1":          "",
		"Enroll an agent: make a one-time token here or after": "",
	} {
		got, ok := parseServerURL(line)
		if got != want || ok != (want != "") {
			t.Errorf("parseServerURL(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

func TestParseFigures(t *testing.T) {
	one := `{"job_id": 7, "saveset_id": 5, "files": 10, "source_bytes": 1000, "media_bytes": 250, "avg_kbps": 12.5, "peak_kbps": 20,
		"elapsed_seconds": 1.5, "compression_ratio": "4.00:1", "status": "completed", "phases": [], "warning_list": []}`
	jobs, err := parseFigures([]byte(one))
	if err != nil || len(jobs) != 1 || jobs[0].JobID != 7 || jobs[0].MediaBytes != 250 || jobs[0].Seconds != 1.5 {
		t.Errorf("one job: %+v, %v", jobs, err)
	}
	// kura --json names the ratio's text ratio_text (and its number ratio).
	cur := `{"job_id": 7, "saveset_id": 5, "source_bytes": 1000, "media_bytes": 250, "ratio": 4, "ratio_text": "4.00:1"}`
	if jobs, err := parseFigures([]byte(cur)); err != nil || len(jobs) != 1 || jobs[0].Ratio != "4.00:1" {
		t.Errorf("kura --json with ratio_text: %+v, %v", jobs, err)
	}
	two := `{"streams": [{"job_id": 8, "source_bytes": 600, "media_bytes": 600, "avg_kbps": 10, "peak_kbps": 11, "elapsed_seconds": 2},
		{"job_id": 9, "source_bytes": 400, "media_bytes": 200, "avg_kbps": 5, "peak_kbps": 6, "elapsed_seconds": 2.5}],
		"total": {"source_bytes": 1000, "media_bytes": 800}}`
	jobs, err = parseFigures([]byte(two))
	if err != nil || len(jobs) != 2 || jobs[1].JobID != 9 {
		t.Fatalf("two streams: %+v, %v", jobs, err)
	}
	var r Run
	r.setJobs(jobs)
	if r.OutBytes != 800 || r.Ratio != "1.25:1" || r.AvgKBps != 15 || r.PeakKBps != 17 || r.JobSeconds != 2.5 || r.JobID != 0 {
		t.Errorf("totals of two jobs: %+v", r)
	}
	for _, bad := range []string{`{"jobs": [3]}`, `not json`, `{}`} {
		if _, err := parseFigures([]byte(bad)); err == nil {
			t.Errorf("parseFigures(%s): no error", bad)
		}
	}
}

func TestSplitSource(t *testing.T) {
	write := func(p string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One folder level holding one folder: the split goes a level down.
	dir := t.TempDir()
	write(filepath.Join(dir, "set", "d1", "a"), 500)
	write(filepath.Join(dir, "set", "d1", "b"), 300)
	write(filepath.Join(dir, "set", "d1", "c"), 250)
	write(filepath.Join(dir, "set", "d1", "d"), 100)
	entries, halves, err := splitSource(filepath.Join(dir, "set"))
	if err != nil {
		t.Fatal(err)
	}
	d1 := filepath.Join(dir, "set", "d1")
	if len(entries) != 4 || filepath.Dir(entries[0]) != d1 {
		t.Errorf("entries %v, want the four files of d1", entries)
	}
	// Largest first to the lighter half: a | b, c | d → 500+100, 300+250.
	want := [2][]string{{filepath.Join(d1, "a"), filepath.Join(d1, "d")}, {filepath.Join(d1, "b"), filepath.Join(d1, "c")}}
	if !slices.Equal(halves[0], want[0]) || !slices.Equal(halves[1], want[1]) {
		t.Errorf("halves %v, want %v", halves, want)
	}
	// Folders are weighed by their bytes.
	dir = t.TempDir()
	write(filepath.Join(dir, "set", "d1", "x"), 1000)
	write(filepath.Join(dir, "set", "d2", "x"), 10)
	write(filepath.Join(dir, "set", "d3", "x"), 10)
	_, halves, err = splitSource(filepath.Join(dir, "set"))
	if err != nil || len(halves[0]) != 1 || !strings.HasSuffix(halves[0][0], "d1") || len(halves[1]) != 2 {
		t.Errorf("folders: halves %v, %v", halves, err)
	}
	// One file cannot be split.
	dir = t.TempDir()
	write(filepath.Join(dir, "db", "dump.sql"), 10)
	if _, _, err := splitSource(filepath.Join(dir, "db")); err == nil || !strings.Contains(err.Error(), "one file") {
		t.Errorf("one file: %v", err)
	}
}

func TestLinkVerdicts(t *testing.T) {
	vs := LinkVerdicts(fakeResults())
	if len(vs) != len(Links) {
		t.Fatalf("%d verdicts, want %d", len(vs), len(Links))
	}
	want := []struct {
		best   string
		within bool
	}{{"none", false}, {"low", true}, {"high", false}}
	for i, v := range vs {
		if v.Link != Links[i].Name || v.Best != want[i].best || v.Within != want[i].within {
			t.Errorf("%s: best %s, within %v; want %s, %v", v.Link, v.Best, v.Within, want[i].best, want[i].within)
		}
		if math.Abs(v.Ratio-v.AutoSeconds/v.BestSeconds) > 1e-12 {
			t.Errorf("%s: ratio %v", v.Link, v.Ratio)
		}
	}
	// Exactly 10 % slower is still within.
	res := &Results{Runs: []Run{
		{Test: TestLink, Link: "unlimited", Level: "low", JobSeconds: 10, Seconds: 10},
		{Test: TestLink, Link: "unlimited", Level: "auto", JobSeconds: 11, Seconds: 11},
	}}
	if vs := LinkVerdicts(res); len(vs) != 1 || !vs[0].Within {
		t.Errorf("10 %% slower: %+v", vs)
	}
	// Failed runs do not count; no auto, no verdict.
	res.Runs[1].ExitCode, res.Runs[1].Error = 1, "failed"
	if vs := LinkVerdicts(res); len(vs) != 0 {
		t.Errorf("no auto run: %+v", vs)
	}
}

func TestFileSetsScale(t *testing.T) {
	scaled := func(s float64) int64 { return int64(float64(4<<30) * s) }
	for _, tc := range []struct {
		scale float64
		want  [3][2]int64 // files, file bytes
	}{
		{1, [3][2]int64{{10000, 20 << 10}, {100, 100 << 20}, {1, 4 << 30}}},
		{0.1, [3][2]int64{{1000, 20 << 10}, {10, 100 << 20}, {1, scaled(0.1)}}},
		{0.005, [3][2]int64{{100, 20 << 10}, {2, 25 << 20}, {1, scaled(0.005)}}},
		{0.0001, [3][2]int64{{100, 20 << 10}, {2, 1 << 20}, {1, 1 << 20}}},
	} {
		fs := FileSets(tc.scale)
		for i, f := range fs {
			if int64(f.Files) != tc.want[i][0] || f.FileBytes != tc.want[i][1] || f.Bytes != int64(f.Files)*f.FileBytes {
				t.Errorf("scale %v %s: %d × %d, want %d × %d", tc.scale, f.Name, f.Files, f.FileBytes, tc.want[i][0], tc.want[i][1])
			}
		}
	}
	if l := FileSets(0.1)[0].Label; l != "20 KiB × 1,000" {
		t.Errorf("label %q", l)
	}
}

func TestParseParts(t *testing.T) {
	got, err := ParseParts(" remote,link, remote ")
	if err != nil || !slices.Equal(got, []string{PartRemote, PartLink}) {
		t.Errorf("ParseParts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "local,wan", ","} {
		if _, err := ParseParts(bad); err == nil {
			t.Errorf("ParseParts(%q): no error", bad)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis; utime 250, stime 75 ticks.
	stat := "4242 (kura (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 1000000 500"
	if got := parseProcStatCPU(stat); got != 3.25 {
		t.Errorf("parseProcStatCPU = %v, want 3.25", got)
	}
	for _, bad := range []string{"", "4242 (kura) S 1", "4242 (kura) S 1 2 3 4 5 6 7 8 9 x 75"} {
		if got := parseProcStatCPU(bad); got != 0 {
			t.Errorf("parseProcStatCPU(%q) = %v, want 0", bad, got)
		}
	}
	// This process has used some CPU by now.
	if procCPU(os.Getpid()) <= 0 {
		t.Error("procCPU of this process is 0")
	}
}
