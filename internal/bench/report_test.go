package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/units"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeResults are a run of two sets with three repeats of one Table 5-1
// cell, the phases, tar and restic peers, a failed run and a note.
func fakeResults() *Results {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res := &Results{
		Version: 1, Suite: "seed", Repeats: 3, Started: start, Finished: start.Add(754 * time.Second), Compress: "auto",
		Data: Data{Dir: "/data/bench", Seed: 1, Scale: 0.005, Sets: []SetInfo{
			{Name: "test1", Content: "WAV", Folders: 1, Files: 490, Bytes: 100 << 20, SampleBytes: 4 << 20, RatioDefault: 1.11, RatioFastest: 1.06},
			{Name: "test2", Content: "text | prose", Folders: 1, Files: 5000, Bytes: 50 << 20, SampleBytes: 4 << 20, RatioDefault: 5.65, RatioFastest: 4.84},
		}},
		Machine: Machine{CPU: "AMD EPYC", Cores: 2, MemoryB: 24 << 30, Kernel: "Linux 6.1.0", OS: "Debian GNU/Linux 12 (bookworm)",
			DataDisk:   Disk{Path: "/data/bench", Source: "/dev/vda", FSType: "ext4", Options: "rw,relatime,discard", SizeB: 252 << 30, AvailB: 80 << 30},
			ScratchDir: Disk{Path: "/data/report/scratch"}, Go: "go1.26.8", Kura: "devel", Root: true},
		DropCaches: true,
		Peers: []Peer{{Name: "tar", Path: "/usr/bin/tar", Version: "tar (GNU tar) 1.34"}, {Name: "zstd", Path: "/usr/bin/zstd", Version: "Zstandard CLI v1.5.4"},
			{Name: "restic", Path: "/usr/bin/restic", Version: "restic 0.14.0 compiled with go1.19.8 on linux/amd64"}},
		Notes: []string{"peer \"borg\" is not supported yet: not measured"},
	}
	add := func(r Run) {
		r.setRates()
		res.Runs = append(res.Runs, r)
	}
	for si, s := range res.Data.Sets {
		for ci, c := range Combos {
			reps := 1
			if si == 0 && ci == 0 {
				reps = 3
			}
			for rep := 1; rep <= reps; rep++ {
				secs := 2.0 + float64(ci) + float64(si)*3 + float64(rep%3)*0.5 // 2.5, 3.0, 2.0 s: the median is rep 1
				add(Run{Test: TestTable51, Set: s.Name, Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Block: c.Block, Buffer: c.Buffer, Level: "auto",
					Command: []string{"kura", "backup"}, Files: int64(s.Files), Bytes: s.Bytes, OutBytes: s.Bytes / int64(1+4*si),
					Seconds: secs, JobSeconds: secs - 0.1, AvgKBps: float64(s.Bytes>>10) / (secs - 0.1), PeakKBps: float64(s.Bytes>>10) / (secs - 0.1) * 1.3,
					Ratio: []string{"1.01:1", "5.02:1"}[si], MaxRSSKiB: int64(40000 + 10000*ci), Durable: true, ColdCache: true, UserSeconds: 2, SysSeconds: 0.5})
			}
		}
		k := Run{Set: s.Name, Tool: ToolKura, Rep: 1, Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Files: int64(s.Files), Bytes: s.Bytes}
		v := k
		v.Test, v.Phase, v.Seconds, v.MaxRSSKiB, v.Level = TestPhases, PhaseVerify, 1.5, 30000, "data"
		add(v)
		r := k
		r.Test, r.Phase, r.Seconds, r.MaxRSSKiB, r.SyncSeconds = TestPhases, PhaseRestore, 4.25+float64(si)*40, 28000, 0.3
		add(r)
		d := Run{Test: TestPhases, Set: s.Name, Tool: ToolKura, Phase: PhaseDelete, Rep: 1, Files: int64(s.Files), Seconds: float64(s.Files) / 1000}
		d.FilesPerSec = float64(d.Files) / d.Seconds
		res.Runs = append(res.Runs, d)

		p := Run{Test: TestPeers, Set: s.Name, Rep: 1, Files: int64(s.Files), Bytes: s.Bytes}
		tc := p
		tc.Tool, tc.Phase, tc.Seconds, tc.OutBytes, tc.SyncSeconds, tc.MaxRSSKiB = ToolTar, PhaseBackup, 1.25, s.Bytes+s.Bytes/50, 0.8, 12000
		add(tc)
		tx := p
		tx.Tool, tx.Phase, tx.Seconds, tx.SyncSeconds, tx.MaxRSSKiB = ToolTar, PhaseRestore, 3.5+float64(si)*70, 0.9, 12000
		add(tx)
		td := Run{Test: TestPeers, Set: s.Name, Tool: ToolTar, Phase: PhaseDelete, Rep: 1, Files: int64(s.Files), Seconds: 95}
		res.Runs = append(res.Runs, td)
		tz := p
		tz.Tool, tz.Phase, tz.Seconds, tz.OutBytes, tz.SyncSeconds, tz.MaxRSSKiB = ToolTarZstd, PhaseBackup, 1.9, s.Bytes/int64(1+5*si), 0.2, 60000
		add(tz)
		rb := p
		rb.Tool, rb.Phase, rb.Level, rb.Durable, rb.Seconds, rb.OutBytes, rb.MaxRSSKiB = ToolRestic, PhaseBackup, "auto", true, 3.1, s.Bytes/int64(1+3*si), 150000
		add(rb)
		rr := p
		rr.Tool, rr.Phase, rr.Seconds, rr.SyncSeconds, rr.MaxRSSKiB = ToolRestic, PhaseRestore, 2.75+float64(si)*20, 0.7, 90000
		add(rr)
		res.Runs = append(res.Runs, Run{Test: TestPeers, Set: s.Name, Tool: ToolRestic, Phase: PhaseDelete, Rep: 1, Files: int64(s.Files), Seconds: 90})
	}
	res.Runs = append(res.Runs, Run{Test: TestTable51, Set: "test2", Tool: ToolKura, Phase: PhaseBackup, Rep: 2, Block: 32 << 10, Buffer: 257 << 10,
		ExitCode: 1, Error: "kura: writing tape KUR001: no space left on device"})
	addRemote(res, add)
	return res
}

// addRemote adds Table 5-5, drives, link and files runs to fakeResults.
func addRemote(res *Results, add func(Run)) {
	res.Parts = Parts
	env := []string{"KURA_SERVER=https://127.0.0.1:40000", "KURA_TOKEN=$(cat /scratch/cluster/server/admin.token)"}
	for si, s := range res.Data.Sets {
		for ci, c := range Combos {
			secs := 2.5 + float64(ci) + float64(si)*3
			add(Run{Test: TestTable55, Set: s.Name, Tool: ToolKura, Phase: PhaseBackup, Rep: 1, Block: c.Block, Buffer: c.Buffer, Level: "auto",
				Client: clientA, Library: remoteLibrary(c), Streams: 1, Env: env, AgentCPUSeconds: 1.5 + float64(ci), ServerCPUSeconds: 1.25, UserSeconds: 0.05, SysSeconds: 0.02,
				Files: int64(s.Files), Bytes: s.Bytes, OutBytes: s.Bytes / int64(1+4*si), Seconds: secs, JobSeconds: secs - 0.2,
				AvgKBps: float64(s.Bytes>>10) / (secs - 0.2), PeakKBps: float64(s.Bytes>>10) / (secs - 0.2) * 1.2, Ratio: []string{"1.01:1", "5.02:1"}[si], Durable: true})
		}
		half := s.Bytes / 2
		job := func(id int64, client string, src int64, secs float64) JobFigures {
			return JobFigures{JobID: id, SavesetID: id, Client: client, Files: int64(s.Files / 2), SourceBytes: src, MediaBytes: src / int64(1+4*si),
				Seconds: secs, AvgKBps: float64(src>>10) / secs, PeakKBps: float64(src>>10) / secs * 1.5, Ratio: []string{"1.01:1", "5.02:1"}[si], Status: "completed"}
		}
		for vi, v := range drivesVariants {
			r := Run{Test: TestDrives, Set: s.Name, Tool: ToolKura, Phase: PhaseBackup, Rep: 1, Variant: v, Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer,
				Level: "auto", Library: drivesLibrary(v), Env: env, Files: int64(s.Files), Bytes: s.Bytes, Durable: true, Seconds: 3 + float64(vi)*0.5}
			switch v {
			case VariantOne:
				r.Client, r.Streams = clientA, 1
				r.setJobs([]JobFigures{job(10, clientA, s.Bytes, 2.9)})
			case VariantStreams:
				r.Client, r.Streams = clientA, 2
				r.setJobs([]JobFigures{job(11, clientA, half, 3.3), job(12, clientA, s.Bytes-half, 3.2)})
			case VariantAgents:
				r.Client, r.Streams = clientA+","+clientB, 2
				r.Commands = [][]string{{"kura", "backup", "--detach"}, {"kura", "backup", "--detach"}, {"kura", "jobs", "watch", "13"}, {"kura", "jobs", "watch", "14"}}
				r.setJobs([]JobFigures{job(13, clientA, half, 3.8), job(14, clientB, s.Bytes-half, 3.7)})
			}
			add(r)
		}
	}
	res.Notes = append(res.Notes, "drives test: set db skipped: /data/bench/db holds one file: it cannot be split over two drives")

	res.DB = &DBDump{Path: "/data/report/scratch/db-link/dump.sql", Bytes: 32 << 20, Generated: true, Seed: 1}
	// Seconds by link and level: at 10 Mbit/s auto misses the best (high).
	times := map[string][]float64{
		"unlimited":  {0.9, 1.1, 1.6, 4.0, 1.0},
		"100 Mbit/s": {2.9, 1.2, 1.7, 4.1, 1.25},
		"10 Mbit/s":  {27.5, 6.1, 5.2, 4.6, 6.0},
	}
	ratios := []float64{1, 4.2, 5.1, 6.3, 4.5}
	for _, l := range Links {
		for i, lv := range LinkLevels {
			secs := times[l.Name][i]
			out := int64(float64(res.DB.Bytes) / ratios[i])
			add(Run{Test: TestLink, Set: linkSet, Tool: ToolKura, Phase: PhaseBackup, Rep: 1, Level: lv, Link: l.Name, BWLimit: l.BPS,
				Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Files: 1, Bytes: res.DB.Bytes, OutBytes: out, Client: clientA, Library: linkLibrary,
				Streams: 1, Env: env, Seconds: secs + 0.15, JobSeconds: secs, AgentCPUSeconds: 0.1 * float64(i+1), Ratio: fmt.Sprintf("%.2f:1", ratios[i]), Durable: true})
		}
	}

	res.FileSets = FileSets(0.005)
	for fi, fs := range res.FileSets {
		base := Run{Test: TestFiles, Set: fs.Name, Rep: 1, Files: int64(fs.Files), Bytes: fs.Bytes}
		kb := base
		kb.Tool, kb.Phase, kb.Level, kb.Durable, kb.Seconds, kb.OutBytes = ToolKura, PhaseBackup, "none", true, 0.4+float64(fi), fs.Bytes+4096
		add(kb)
		kr := base
		kr.Tool, kr.Phase, kr.Seconds, kr.SyncSeconds = ToolKura, PhaseRestore, 0.3+float64(fi), 0.2
		add(kr)
		kd := base
		kd.Tool, kd.Phase, kd.Seconds = ToolKura, PhaseDelete, 0.05
		kd.FilesPerSec = float64(kd.Files) / kd.Seconds
		res.Runs = append(res.Runs, kd)
		cp := base
		cp.Tool, cp.Phase, cp.Seconds, cp.SyncSeconds, cp.OutBytes = ToolCp, PhaseCopy, 0.5+float64(fi), 0.25, fs.Bytes
		add(cp)
		cd := base
		cd.Tool, cd.Phase, cd.Seconds = ToolCp, PhaseDelete, 0.04
		cd.FilesPerSec = float64(cd.Files) / cd.Seconds
		res.Runs = append(res.Runs, cd)
	}
}

func TestWriteReportGolden(t *testing.T) {
	var got bytes.Buffer
	if err := WriteReport(&got, fakeResults()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("report differs from %s (go test -update rewrites it); got:\n%s", golden, got.String())
	}
}

func TestMedianPicksTheMiddleRun(t *testing.T) {
	res := &Results{Runs: []Run{{Set: "a", Seconds: 3, Rep: 1}, {Set: "a", Seconds: 1, Rep: 2}, {Set: "a", Seconds: 2, Rep: 3},
		{Set: "a", Seconds: 0.1, Rep: 4, ExitCode: 1, Error: "failed"}}}
	r, n, ok := res.Median(func(r Run) bool { return r.Set == "a" })
	if !ok || n != 3 || r.Rep != 3 {
		t.Errorf("Median = rep %d of %d (%v), want rep 3 of 3", r.Rep, n, ok)
	}
	if _, _, ok := res.Median(func(r Run) bool { return r.Set == "b" }); ok {
		t.Error("Median found a run for an empty group")
	}
}

func TestResultsJSONRoundTrip(t *testing.T) {
	res := fakeResults()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"command"`, `"block_size"`, `"buffer_size"`, `"max_rss_kib"`, `"mib_per_s"`, `"files_per_s"`, `"machine"`, `"drop_caches"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("results.json has no %s", key)
		}
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != len(res.Runs) || back.Machine.CPU != res.Machine.CPU {
		t.Errorf("round trip lost data")
	}
}

func TestFormatting(t *testing.T) {
	for in, want := range map[float64]string{0.421: "0.42 s", 12.34: "12.3 s", 245: "4 m 05 s", 7380: "2 h 03 m"} {
		if got := duration(in); got != want {
			t.Errorf("duration(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{0: "0", 999: "999", 22806: "22,806", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := units.Thousands(in); got != want {
			t.Errorf("thousands(%d) = %q, want %q", in, got, want)
		}
	}
}
