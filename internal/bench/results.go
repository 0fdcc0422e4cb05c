package bench

import (
	"bufio"
	"debug/buildinfo"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Results is everything one `kura bench run` measured: results.json.
type Results struct {
	Version  int       `json:"version"`
	Suite    string    `json:"suite"`
	Repeats  int       `json:"repeats"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Data     Data      `json:"data"`
	Machine  Machine   `json:"machine"`
	// DropCaches says whether the page cache was dropped before every
	// timed run; DropCachesNote says why not when it was not.
	DropCaches     bool   `json:"drop_caches"`
	DropCachesNote string `json:"drop_caches_note,omitempty"`
	Compress       string `json:"compress"` // kura --compress level
	// Parts are the parts of the suite that ran (PartLocal …).
	Parts []string `json:"parts"`
	// DB is the dump the link test (seed 003) sent; FileSets are the
	// seed 002 shapes. Both only when their part ran.
	DB *DBDump `json:"db_dump,omitempty"`
	// PG is the pglink test's pgbench databases.
	PG       *PGBench  `json:"pgbench,omitempty"`
	FileSets []FileSet `json:"file_sets,omitempty"`
	Peers    []Peer    `json:"peers"`
	Notes    []string  `json:"notes"`
	Runs     []Run     `json:"runs"`
}

// DBDump is the database dump of the link test.
type DBDump struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	// Generated says the dump was written for the run (the db set's
	// generator and seed at this size) rather than taken from the data
	// folder's db set.
	Generated bool   `json:"generated"`
	Seed      uint64 `json:"seed"`
}

// FileSet is one shape of seed 002: Files files of FileBytes each.
type FileSet struct {
	Name      string `json:"name"`  // small, medium, huge
	Label     string `json:"label"` // 20 KiB × 1,000
	Files     int    `json:"files"`
	FileBytes int64  `json:"file_bytes"`
	Bytes     int64  `json:"bytes"`
}

// Data describes the data folder a run measured.
type Data struct {
	Dir   string    `json:"dir"`
	Seed  uint64    `json:"seed"`
	Scale float64   `json:"scale"`
	Sets  []SetInfo `json:"sets"`
}

// Peer is a peer tool and whether it was found.
type Peer struct {
	Name    string `json:"name"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	Missing bool   `json:"missing,omitempty"`
}

// Machine is what the runs ran on.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	MemoryB    int64  `json:"memory_bytes"`
	Kernel     string `json:"kernel"`
	OS         string `json:"os"`
	DataDisk   Disk   `json:"data_disk"`
	ScratchDir Disk   `json:"scratch_disk"`
	Go         string `json:"go"`
	Kura       string `json:"kura"` // module version or VCS revision
	Root       bool   `json:"root"`
}

// Disk is a folder's file system.
type Disk struct {
	Path    string `json:"path"`
	Source  string `json:"source"`
	FSType  string `json:"fstype"`
	Options string `json:"options"`
	SizeB   int64  `json:"size_bytes"`
	AvailB  int64  `json:"avail_bytes"`
}

// Tests of a run (the letters).
const (
	TestTable51 = "5-1"    // (a) block × buffer
	TestTable55 = "5-5"    // (b) block × buffer through an agent on loopback
	TestDrives  = "drives" // (c) Tables 5-6…5-9: one drive vs two
	TestLink    = "link"   // (d) seed 003: link speed × compression level
	TestPhases  = "phases" // (e) backup, verify, restore
	TestFiles   = "files"  // (f) seed 002: small, medium, huge files
	TestPeers   = "peers"  // (g) tar, tar | zstd, restic
	// TestNetwork is issue 12's comparison: interleaved pairs of a local
	// backup and one through an agent, per case (Run.Case), with their
	// CPU time; and, with --peers tar, restores and tar on the same sets.
	TestNetwork = "network"
	// TestEncrypt is issue 17's comparison: interleaved pairs of a backup
	// through an agent, clear and encrypted (Run.Variant is the side).
	TestEncrypt = "encrypt"
	// TestObject is issue 13's comparison: backup and restore to a library
	// in an S3 bucket next to a folder library, in interleaved pairs
	// (Run.Library is the side: folder or s3).
	TestObject = "object"
)

// Parts of a suite, as --parts names them.
const (
	PartLocal  = "local"  // Table 5-1, phases, peers
	PartRemote = "remote" // Table 5-5
	PartDrives = "drives" // Tables 5-6…5-9
	PartLink   = "link"   // seed 003
	PartFiles  = "files"  // seed 002
	// PartNetwork is issue 12's through-an-agent ÷ local pairs (and small
	// files and restores against tar): not in the default parts, as it
	// repeats the local and remote backups of its sets twice over.
	PartNetwork = "network"
	// PartObject is issue 13's object store ÷ folder library pairs: not in
	// the default parts, as it needs a bucket (RunOptions.S3).
	PartObject = "s3"
	// PartEncrypt is issue 17's clear ÷ encrypted pairs through an agent:
	// not in the default parts.
	PartEncrypt = "encrypt"
)

// Parts lists every part in the order a suite runs them.
var Parts = []string{PartLocal, PartRemote, PartDrives, PartLink, PartFiles, PartNetwork, PartObject, PartEncrypt, PartPGLink}

// DefaultParts are the parts a run without --parts measures: every part
// but network.
var DefaultParts = []string{PartLocal, PartRemote, PartDrives, PartLink, PartFiles}

// Variants of the drives test.
const (
	VariantOne     = "one"     // one job on one drive
	VariantStreams = "streams" // one source split over two drives (--streams 2)
	VariantAgents  = "agents"  // two agents at once, one job each, two drives
)

// Tools.
const (
	ToolKura    = "kura"
	ToolTar     = "tar"
	ToolTarZstd = "tar+zstd"
	ToolRestic  = "restic"
	ToolCp      = "cp" // cp -a and rm -rf: seed 002's plain copy and delete
)

// Phases.
const (
	PhaseBackup  = "backup"
	PhaseVerify  = "verify"
	PhaseRestore = "restore"
	PhaseDelete  = "delete" // removing a restore target; never in a rate
	PhaseExpire  = "expire" // expiring a saveset and erasing its tape through Kura
	PhaseCopy    = "copy"   // cp -a of the source to the same disk
)

// Run is one measured command with its exact configuration.
type Run struct {
	Test    string   `json:"test"`
	Set     string   `json:"set"`
	Tool    string   `json:"tool"`
	Phase   string   `json:"phase"`
	Rep     int      `json:"rep"`
	Command []string `json:"command"`
	Block   int      `json:"block_size,omitempty"`
	Buffer  int      `json:"buffer_size,omitempty"`
	Level   string   `json:"level,omitempty"` // compression level asked for
	// Env is what the command's environment set beyond the runner's own
	// (KURA_SERVER, and KURA_TOKEN redacted to where it was read from).
	Env []string `json:"env,omitempty"`
	// Commands are all the commands of a run made of several (the drives
	// test's two agents: two submissions, then two watches side by side);
	// Command is then the first.
	Commands [][]string `json:"commands,omitempty"`
	// Remote runs: the client (agent) that read the files, the library,
	// the streams asked for, the drives-test variant, and the emulated link
	// (Link names it; BWLimit is --bwlimit in bytes/s, 0 = unlimited).
	Client  string `json:"client,omitempty"`
	Library string `json:"library,omitempty"`
	Streams int    `json:"streams,omitempty"`
	Variant string `json:"variant,omitempty"`
	Link    string `json:"link,omitempty"`
	BWLimit int64  `json:"bwlimit_bytes_per_s,omitempty"`
	// Case is the network test's case (NetCase.Name): the set and the
	// compression level its pairs back up.
	Case string `json:"case,omitempty"`
	// Jobs are the server's figures for each job of a run of several.
	Jobs []JobFigures `json:"jobs,omitempty"`
	// ServerCPUSeconds and AgentCPUSeconds are the CPU time (user + system)
	// the server and the agents (all of them) spent during a remote run,
	// from /proc; UserSeconds and SysSeconds are the CLI's own.
	ServerCPUSeconds float64 `json:"server_cpu_seconds,omitempty"`
	AgentCPUSeconds  float64 `json:"agent_cpu_seconds,omitempty"`
	// Files and Bytes are the data set's regular files and bytes (what was
	// backed up or restored); OutBytes what landed on the target (tape
	// media, .tar, .tar.zst, restic repository), 0 when not measured.
	Files    int64 `json:"files"`
	Bytes    int64 `json:"bytes"`
	OutBytes int64 `json:"out_bytes,omitempty"`
	// Seconds is wall-clock time from starting the process to its exit.
	Seconds     float64 `json:"seconds"`
	MiBps       float64 `json:"mib_per_s"`
	FilesPerSec float64 `json:"files_per_s"`
	// SyncSeconds is the time of a `sync` right after a run that does not
	// fsync (tar), measured separately and not in Seconds.
	SyncSeconds float64 `json:"sync_seconds,omitempty"`
	// Job figures reported by kura --json.
	JobSeconds float64 `json:"job_seconds,omitempty"`
	AvgKBps    float64 `json:"avg_kbps,omitempty"`
	PeakKBps   float64 `json:"peak_kbps,omitempty"`
	Ratio      string  `json:"compression_ratio,omitempty"`
	JobID      int64   `json:"job_id,omitempty"`
	SavesetID  int64   `json:"saveset_id,omitempty"`
	// MaxRSSKiB is the peak resident memory of the process (of the larger
	// process of a pipeline), from its rusage.
	MaxRSSKiB   int64   `json:"max_rss_kib"`
	UserSeconds float64 `json:"user_seconds"`
	SysSeconds  float64 `json:"sys_seconds"`
	ColdCache   bool    `json:"cold_cache"` // page cache dropped just before
	Durable     bool    `json:"durable"`    // the tool fsyncs what it wrote
	ExitCode    int     `json:"exit_code"`
	Error       string  `json:"error,omitempty"`
}

// JobFigures are one job's Job Monitor figures (kura --json).
type JobFigures struct {
	JobID       int64   `json:"job_id"`
	SavesetID   int64   `json:"saveset_id,omitempty"`
	Client      string  `json:"client,omitempty"`
	Files       int64   `json:"files"`
	SourceBytes int64   `json:"source_bytes"`
	MediaBytes  int64   `json:"media_bytes"`
	Seconds     float64 `json:"elapsed_seconds"`
	AvgKBps     float64 `json:"avg_kbps"`
	PeakKBps    float64 `json:"peak_kbps"`
	Ratio       string  `json:"compression_ratio"`
	Status      string  `json:"status,omitempty"`
}

// UnmarshalJSON reads a job's figures from kura --json, which names the
// ratio's text ratio_text, and from the reports, which name it
// compression_ratio.
func (f *JobFigures) UnmarshalJSON(b []byte) error {
	type plain JobFigures // no methods: no recursion
	var x struct {
		plain
		RatioText string `json:"ratio_text"`
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*f = JobFigures(x.plain)
	if x.RatioText != "" {
		f.Ratio = x.RatioText
	}
	return nil
}

// OK reports whether the run succeeded (exit 0, or 3: completed with
// warnings).
func (r Run) OK() bool { return r.Error == "" && (r.ExitCode == 0 || r.ExitCode == 3) }

// setRates fills MiBps and FilesPerSec from Bytes, Files and Seconds.
func (r *Run) setRates() {
	if r.Seconds > 0 {
		r.MiBps = float64(r.Bytes) / (1 << 20) / r.Seconds
		r.FilesPerSec = float64(r.Files) / r.Seconds
	}
}

// Median returns the run with the median wall-clock time among the
// successful runs matching keep (the lower middle one for an even count),
// and how many there were.
func (res *Results) Median(keep func(Run) bool) (Run, int, bool) {
	var rs []Run
	for _, r := range res.Runs {
		if keep(r) && r.OK() {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return Run{}, 0, false
	}
	slices.SortStableFunc(rs, func(a, b Run) int {
		switch {
		case a.Seconds < b.Seconds:
			return -1
		case a.Seconds > b.Seconds:
			return 1
		}
		return 0
	})
	return rs[(len(rs)-1)/2], len(rs), true
}

// Spread returns the lowest and highest value among the successful runs
// matching keep (NaN, NaN when there are none): the error bar of a median.
func (res *Results) Spread(keep func(Run) bool, value func(Run) float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for _, r := range res.Runs {
		if !keep(r) || !r.OK() {
			continue
		}
		v := value(r)
		if math.IsNaN(lo) || v < lo {
			lo = v
		}
		if math.IsNaN(hi) || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// DescribeMachine gathers the machine's description from /proc, findmnt
// and df, and the version of the kura binary measured (the running one
// when kura cannot be read).
func DescribeMachine(dataDir, scratchDir, kura string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Root: os.Geteuid() == 0}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				m.MemoryB = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	m.DataDisk = describeDisk(dataDir)
	m.ScratchDir = describeDisk(scratchDir)
	m.Kura = "devel"
	if bi, err := buildinfo.ReadFile(kura); err == nil {
		m.Kura = kuraVersion(bi)
	} else if bi, ok := debug.ReadBuildInfo(); ok {
		m.Kura = kuraVersion(bi)
	}
	return m
}

// kuraVersion is the version and commit of a kura build.
func kuraVersion(bi *debug.BuildInfo) string {
	v := "devel"
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+modified"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
}

func describeDisk(dir string) Disk {
	d := Disk{Path: dir}
	if out, err := exec.Command("findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "--target", dir).Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) >= 3 {
			d.Source, d.FSType, d.Options = f[0], f[1], f[2]
		}
	}
	if out, err := exec.Command("df", "-B1", "--output=size,avail", dir).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if f := strings.Fields(lines[len(lines)-1]); len(f) == 2 {
			d.SizeB, _ = strconv.ParseInt(f[0], 10, 64)
			d.AvailB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return d
}
