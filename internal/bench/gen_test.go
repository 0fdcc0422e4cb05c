package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// tinyScale keeps generated sets to a few MiB each: test1 20 files, test2
// 200 files, test3 one 2 MiB file, db a 1.7 MB dump.
const tinyScale = 0.0002

// digest hashes every file under dir (paths and bytes), with file modes
// and times.
func digest(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() == ManifestName {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gen(t *testing.T, dir string, seed uint64, log *bytes.Buffer) *Manifest {
	t.Helper()
	o := GenOptions{Out: dir, Scale: tinyScale, Seed: seed, SampleBytes: 64 << 10}
	if log != nil {
		o.Log = log
	}
	m, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGenerateDeterministic(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	ma := gen(t, a, 1, nil)
	gen(t, b, 1, nil)
	gen(t, c, 2, nil)
	da, db, dc := digest(t, a), digest(t, b), digest(t, c)
	if len(da) == 0 || len(da) != len(db) {
		t.Fatalf("file counts differ: %d vs %d", len(da), len(db))
	}
	for p, h := range da {
		if db[p] != h {
			t.Errorf("%s differs between two runs with the same seed", p)
		}
		if dc[p] == h {
			t.Errorf("%s is the same with seeds 1 and 2", p)
		}
	}
	var files int
	for _, s := range ma.Sets {
		files += s.Files
	}
	if files != len(da) {
		t.Errorf("manifest counts %d files, disk has %d", files, len(da))
	}

	// The files on disk (written in 1 MiB chunks by two workers) hold the
	// same bytes as the in-memory sample (generated in one piece).
	for _, name := range []string{"test1", "test2", "test3"} {
		spec, _ := SetByName(name)
		sample, _ := Sample(nil, spec, 1, tinyScale, 1<<20+12345)
		var disk []byte
		for _, f := range spec.Plan(1, tinyScale) {
			if len(disk) >= len(sample) {
				break
			}
			bs, err := os.ReadFile(filepath.Join(a, f.Rel))
			if err != nil {
				t.Fatal(err)
			}
			disk = append(disk, bs...)
		}
		if !bytes.Equal(disk[:len(sample)], sample) {
			t.Errorf("%s: the files on disk differ from Sample", name)
		}
	}

	// A second run with the same seed and scale keeps the sets.
	var log bytes.Buffer
	gen(t, a, 1, &log)
	if got := strings.Count(log.String(), "kept"); got != len(Sets) {
		t.Errorf("regenerating with the same seed kept %d sets, want %d:\n%s", got, len(Sets), log.String())
	}
}

func TestPlanShapes(t *testing.T) {
	const scale = 0.02
	for _, s := range Sets {
		plan := s.Plan(1, scale)
		perDir := map[string]int{}
		var total int64
		for _, f := range plan {
			perDir[filepath.Dir(f.Rel)]++
			total += f.Size
			if !strings.HasPrefix(f.Rel, s.Name+string(filepath.Separator)) || !strings.HasSuffix(f.Rel, s.Ext) {
				t.Errorf("%s: file %s", s.Name, f.Rel)
			}
		}
		want := int(float64(s.Files)*scale + 0.5)
		if s.Name == "db" {
			want = 1
		}
		if len(plan) != want {
			t.Errorf("%s: %d files at scale %g, want %d", s.Name, len(plan), scale, want)
		}
		full := 0
		for _, n := range perDir {
			if n > s.PerFolder {
				t.Errorf("%s: %d files in a folder, want at most %d", s.Name, n, s.PerFolder)
			}
			if n == s.PerFolder {
				full++
			}
		}
		if full < len(perDir)-1 {
			t.Errorf("%s: %d of %d folders hold %d files; all but the last should", s.Name, full, len(perDir), s.PerFolder)
		}
		avg := float64(total) / float64(len(plan))
		wantAvg := float64(s.AvgSize)
		if s.Name == "db" {
			wantAvg *= scale
		}
		if avg < 0.95*wantAvg || avg > 1.05*wantAvg {
			t.Errorf("%s: average file %.0f bytes, want %.0f ± 5%%", s.Name, avg, wantAvg)
		}
	}
	// Scale 1 gives the seeds' layouts.
	for name, want := range map[string][2]int{"test1": {98000, 200}, "test3": {50, 10}} {
		s, _ := SetByName(name)
		plan := s.Plan(1, 1)
		dirs := map[string]bool{}
		for _, f := range plan {
			dirs[filepath.Dir(f.Rel)] = true
		}
		if len(plan) != want[0] || len(dirs) != want[1] {
			t.Errorf("%s at scale 1: %d files in %d folders, want %d in %d", name, len(plan), len(dirs), want[0], want[1])
		}
	}
}

// Below one file's worth, test3 keeps one file whose size is scaled.
func TestPlanScalesSizeBelowOneFile(t *testing.T) {
	s, _ := SetByName("test3")
	plan := s.Plan(1, 0.005) // 50 × 0.005 = 0.25 files
	if len(plan) != 1 || plan[0].Size != 50<<20 {
		t.Fatalf("test3 at 0.005: %+v, want one file of 50 MiB", plan)
	}
	plan = s.Plan(1, 0.1)
	if len(plan) != 5 || plan[0].Size != 200<<20 {
		t.Fatalf("test3 at 0.1: %d files of %d bytes, want 5 of 200 MiB", len(plan), plan[0].Size)
	}
	s, _ = SetByName("test1")
	if plan := s.Plan(1, 1e-6); len(plan) != 1 || plan[0].Size < 1024 {
		t.Fatalf("test1 at 1e-6: %+v, want one small file", plan)
	}
}

func TestRatios(t *testing.T) {
	ranges := map[string][2]float64{
		"test1": {1.05, 1.2},  // seed: WAV 1.11:1
		"test2": {5.0, 6.0},   // seed: text 5.3-6.3:1
		"test3": {0.98, 1.01}, // incompressible
		"db":    {6.0, 10.0},  // seed 003: 6-10:1
	}
	tb := newTables(1)
	for _, s := range Sets {
		sample, err := Sample(tb, s, 1, 0.01, 2<<20)
		if err != nil {
			t.Fatal(err)
		}
		got := ZstdRatio(sample, zstd.SpeedDefault)
		r := ranges[s.Name]
		if got < r[0] || got > r[1] {
			t.Errorf("%s: zstd ratio %.2f:1, want %.2f to %.2f", s.Name, got, r[0], r[1])
		}
		t.Logf("%s: %.2f:1", s.Name, got)
	}
}

func TestSQLIsSQL(t *testing.T) {
	s, _ := SetByName("db")
	b, _ := Sample(nil, s, 1, 0.001, 1<<20)
	text := string(b)
	for _, want := range []string{"CREATE TABLE public.customer", "CREATE TABLE public.trade", "INSERT INTO public.trade VALUES (", "CREATE TABLE public.holding_history"} {
		if !strings.Contains(text, want) {
			t.Errorf("the dump has no %q", want)
		}
	}
	if got := appendTime(nil, 86400*60+3661); string(got) != "2024-03-01 01:01:01" {
		t.Errorf("appendTime = %s", got)
	}
}

func TestParseSets(t *testing.T) {
	if got, err := ParseSets("test1, db,test1"); err != nil || strings.Join(got, ",") != "test1,db" {
		t.Errorf("ParseSets = %v, %v", got, err)
	}
	if _, err := ParseSets("test9"); err == nil {
		t.Error("ParseSets accepted test9")
	}
}
