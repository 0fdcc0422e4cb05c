package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// Combo is a drive tuning of seed Table 5-1.
type Combo struct{ Block, Buffer int }

// Combos are seed 000's block size × transfer buffer settings.
var Combos = []Combo{{32 << 10, 257 << 10}, {256 << 10, 8193 << 10}, {1024 << 10, 32769 << 10}}

// DefaultCombo is Kura's default drive tuning (the seed's best); the phase
// and peer comparisons use it.
var DefaultCombo = Combos[1]

func (c Combo) String() string { return fmt.Sprintf("%d KiB – %d KiB", c.Block>>10, c.Buffer>>10) }

// Suites and their repeats.
var suiteRepeats = map[string]int{"quick": 1, "seed": 3}

// NoDataError: Run found no manifest in the data folder Dir (the CLI says
// how to make the data).
type NoDataError struct {
	Dir string
	Err error
}

func (e *NoDataError) Error() string { return "reading the data folder's manifest: " + e.Err.Error() }
func (e *NoDataError) Unwrap() error { return e.Err }

// RunOptions say what `kura bench run` measures.
type RunOptions struct {
	Data     string   // a folder made by gen
	Out      string   // report folder
	Scratch  string   // libraries, restore targets, archives (default Out/scratch)
	Suite    string   // quick or seed
	Repeats  int      // 0 = the suite's
	Sets     []string // nil = every set in the data folder
	Peers    []string // peer tools: tar, restic
	Compress string   // kura --compress (default auto)
	Kura     string   // the kura binary (os.Executable())
	// Parts of the suite to run (nil = all, see Parts).
	Parts []string
	// DBBytes is the size of the link test's dump (0 = the suite's: quick
	// 32 MiB, seed 64 MiB); the data folder's db set is used when it is
	// no larger, else a dump of this size is generated.
	DBBytes int64
	// PGBenchScale and PGBenchSlowScale are the pgbench scales of the
	// pglink test's databases: for the unlimited and 100 Mbit/s links, and
	// for 10 Mbit/s (0 = the suite's: quick 5 and 1, seed 100 and 10;
	// scale 100 dumps about 1 GB).
	PGBenchScale, PGBenchSlowScale int
	// FilesScale scales the files test's shapes (0 = the data's scale).
	FilesScale float64
	// NoDropCaches keeps the page cache (by default it is dropped before
	// every timed run when running as root).
	NoDropCaches bool
	Log          io.Writer // progress lines
	// S3 is where the s3 part puts its libraries' tapes:
	// http[s]://HOST[:PORT]/BUCKET[/PREFIX] (each library under a prefix
	// of its own; credentials from the environment).
	S3 string
}

// ParseParts reads a comma-separated list of parts (local, remote, drives,
// link, files, network).
func ParseParts(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(Parts, p) {
			return nil, fmt.Errorf("unknown part %q (want %s)", p, strings.Join(Parts, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no parts given (want %s)", strings.Join(Parts, ", "))
	}
	return out, nil
}

// ParseSuite checks a suite name.
func ParseSuite(s string) error {
	if _, ok := suiteRepeats[s]; !ok {
		return fmt.Errorf("unknown suite %q (want quick or seed)", s)
	}
	return nil
}

type runner struct {
	o        RunOptions
	res      *Results
	manifest *Manifest
	sets     map[string]SetInfo
	step     int
	steps    int
}

// RunSuite measures the suite on the data folder and writes results.json and
// report.md into o.Out. It returns the results even when some runs failed
// (their errors are in the results and the report); the error says that
// some did.
func RunSuite(ctx context.Context, o RunOptions) (*Results, error) {
	if o.Suite == "" {
		o.Suite = "quick"
	}
	if err := ParseSuite(o.Suite); err != nil {
		return nil, err
	}
	if o.Repeats <= 0 {
		o.Repeats = suiteRepeats[o.Suite]
	}
	if o.Compress == "" {
		o.Compress = "auto"
	}
	if o.Parts == nil {
		o.Parts = DefaultParts
	}
	for _, p := range o.Parts {
		if !slices.Contains(Parts, p) {
			return nil, fmt.Errorf("unknown part %q (want %s)", p, strings.Join(Parts, ", "))
		}
	}
	if o.DBBytes <= 0 {
		o.DBBytes = dbBytes[o.Suite]
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	var err error
	if o.Data, err = filepath.Abs(o.Data); err != nil {
		return nil, err
	}
	if o.Out, err = filepath.Abs(o.Out); err != nil {
		return nil, err
	}
	if o.Scratch == "" {
		o.Scratch = filepath.Join(o.Out, "scratch")
	}
	if o.Scratch, err = filepath.Abs(o.Scratch); err != nil {
		return nil, err
	}
	man, err := ReadManifest(o.Data)
	if err != nil {
		return nil, &NoDataError{Dir: o.Data, Err: err}
	}
	if err := os.MkdirAll(o.Scratch, 0o755); err != nil {
		return nil, err
	}
	rn := &runner{o: o, sets: map[string]SetInfo{}, manifest: man}
	res := &Results{
		Version: 1, Suite: o.Suite, Repeats: o.Repeats, Started: time.Now().UTC(), Compress: o.Compress, Parts: o.Parts,
		Data:    Data{Dir: o.Data, Seed: man.Seed, Scale: man.Scale},
		Machine: DescribeMachine(o.Data, o.Scratch, o.Kura),
		Notes:   []string{},
		Runs:    []Run{},
	}
	rn.res = res
	for _, si := range man.Sets {
		if o.Sets != nil && !slices.Contains(o.Sets, si.Name) {
			continue
		}
		if _, err := os.Stat(filepath.Join(o.Data, si.Name)); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("set %s is in the manifest but not in %s: skipped", si.Name, o.Data))
			continue
		}
		res.Data.Sets = append(res.Data.Sets, si)
		rn.sets[si.Name] = si
	}
	if rn.part(PartObject) && o.S3 == "" {
		return nil, fmt.Errorf("the s3 part needs a bucket: --s3 http[s]://HOST[:PORT]/BUCKET[/PREFIX]")
	}
	needSets := rn.part(PartLocal) || rn.part(PartRemote) || rn.part(PartDrives) || rn.part(PartNetwork) || rn.part(PartObject) || rn.part(PartEncrypt)
	if len(res.Data.Sets) == 0 && needSets {
		return nil, fmt.Errorf("no data sets to measure in %s", o.Data)
	}
	if rn.part(PartLocal) || rn.part(PartNetwork) {
		rn.findPeers(ctx)
	}
	rn.checkDropCaches()

	// Steps, for the progress lines.
	perSet := 0
	if rn.part(PartLocal) {
		perSet = len(Combos)*o.Repeats + 3*o.Repeats // backups; verify, restore, delete
		for _, p := range res.Peers {
			if p.Name == "tar" && !p.Missing {
				perSet += 4 * o.Repeats // tar -cf, tar -xf, delete, tar | zstd
			}
			if p.Name == ToolRestic && !p.Missing {
				perSet += 3 * o.Repeats // restic backup, restore, delete
			}
		}
	}
	plans := map[string]remotePlan{}
	for _, si := range res.Data.Sets {
		plans[si.Name] = rn.planRemote(si)
		rn.steps += perSet + plans[si.Name].runsPerRepeat()*o.Repeats
	}
	if rn.part(PartLink) {
		rn.steps += rn.linkRuns()
	}
	if rn.part(PartPGLink) {
		rn.steps += rn.pgLinkRuns()
	}
	if rn.part(PartFiles) {
		rn.steps += rn.filesRuns()
	}
	var netCases []NetCase
	if rn.part(PartNetwork) {
		netCases = rn.netCases()
		rn.steps += rn.netRuns(netCases)
	}
	if rn.part(PartObject) {
		rn.steps += rn.objectRuns()
	}
	var encCases []NetCase
	if rn.part(PartEncrypt) {
		encCases = rn.encCases()
		rn.steps += rn.encRuns(encCases)
	}
	rn.logf("suite %s, %d run(s) per figure, parts %s: %d runs", o.Suite, o.Repeats, strings.Join(o.Parts, ", "), rn.steps)

	if needSets {
		for _, si := range res.Data.Sets {
			if err := ctx.Err(); err != nil {
				break
			}
			if rn.part(PartLocal) {
				rn.measureSet(ctx, si)
			}
			rn.measureRemote(ctx, si, plans[si.Name])
			if err := rn.write(false); err != nil {
				return res, err
			}
		}
	}
	if rn.part(PartLink) && ctx.Err() == nil {
		rn.measureLink(ctx)
		if err := rn.write(false); err != nil {
			return res, err
		}
	}
	if rn.part(PartFiles) && ctx.Err() == nil {
		rn.measureFiles(ctx)
		if err := rn.write(false); err != nil {
			return res, err
		}
	}
	if rn.part(PartNetwork) && ctx.Err() == nil {
		rn.measureNetwork(ctx, netCases)
	}
	if rn.part(PartObject) && ctx.Err() == nil {
		rn.measureObject(ctx)
	}
	if rn.part(PartEncrypt) && ctx.Err() == nil {
		rn.measureEncrypt(ctx, encCases)
	}
	if rn.part(PartPGLink) && ctx.Err() == nil {
		rn.measurePGLink(ctx)
	}
	runErr := ctx.Err()
	res.Finished = time.Now().UTC()
	_ = os.Remove(o.Scratch) // only when empty: everything in it was cleaned up
	if err := rn.write(true); err != nil {
		return res, err
	}
	if runErr == nil {
		var failed int
		for _, r := range res.Runs {
			if !r.OK() {
				failed++
			}
		}
		if failed > 0 {
			runErr = fmt.Errorf("%d of %d runs failed (see the report)", failed, len(res.Runs))
		}
	}
	return res, runErr
}

// write saves results.json (after every set) and, at the end, report.md.
func (rn *runner) write(final bool) error {
	b, err := json.MarshalIndent(rn.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rn.o.Out, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if !final {
		return nil
	}
	if err := writeCharts(rn.o.Out, ReportCharts(rn.res)); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := WriteReport(&md, rn.res); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(rn.o.Out, "report.md"), md.Bytes(), 0o644)
}

// Render writes report.md and the charts of dir/results.json again (after
// the report's layout changed, or to redraw a copied run).
func Render(dir string) (*Results, error) {
	res, err := LoadResults(dir)
	if err != nil {
		return nil, err
	}
	if err := writeCharts(dir, ReportCharts(res)); err != nil {
		return nil, err
	}
	var md bytes.Buffer
	if err := WriteReport(&md, res); err != nil {
		return nil, err
	}
	return res, os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644)
}

// LoadResults reads the results.json of a report folder (kura bench run
// --out DIR).
func LoadResults(dir string) (*Results, error) {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "results.json"), err)
	}
	return &res, nil
}

func (rn *runner) logf(format string, a ...any) {
	fmt.Fprintf(rn.o.Log, "bench: "+format+"\n", a...)
}

func (rn *runner) findPeers(ctx context.Context) {
	for _, name := range rn.o.Peers {
		switch name {
		case "tar":
			rn.res.Peers = append(rn.res.Peers, lookPeer("tar", "--version"), lookPeer("zstd", "--version"))
		case ToolRestic:
			rn.res.Peers = append(rn.res.Peers, rn.findRestic(ctx))
		default:
			rn.res.Peers = append(rn.res.Peers, Peer{Name: name, Missing: true})
			rn.res.Notes = append(rn.res.Notes, fmt.Sprintf("peer %q is not supported yet: not measured", name))
		}
	}
	for _, p := range rn.res.Peers {
		if p.Missing && (p.Name == "tar" || p.Name == "zstd") {
			rn.res.Notes = append(rn.res.Notes, fmt.Sprintf("peer tool %s not found in PATH: its rows are missing (apt-get install -y %s)", p.Name, p.Name))
		}
	}
}

func (rn *runner) havePeer(name string) bool {
	return slices.ContainsFunc(rn.res.Peers, func(p Peer) bool { return p.Name == name && !p.Missing })
}

func lookPeer(name, versionFlag string) Peer {
	path, err := exec.LookPath(name)
	if err != nil {
		return Peer{Name: name, Missing: true}
	}
	p := Peer{Name: name, Path: path}
	if out, err := exec.Command(path, versionFlag).Output(); err == nil {
		p.Version = strings.Trim(strings.SplitN(string(out), "\n", 2)[0], "* ")
	}
	return p
}

func (rn *runner) checkDropCaches() {
	switch {
	case rn.o.NoDropCaches:
		rn.res.DropCachesNote = "--no-drop-caches was given: runs read through a warm page cache"
	case os.Geteuid() != 0:
		rn.res.DropCachesNote = "not running as root: the page cache could not be dropped, so reads may come from memory (run as root for cold-cache figures)"
	default:
		if err := dropCaches(); err != nil {
			rn.res.DropCachesNote = "dropping the page cache failed (" + err.Error() + "): runs may read from memory"
		} else {
			rn.res.DropCaches = true
		}
	}
}

// dropCaches writes dirty pages and drops the page cache, dentries and
// inodes, so the next run reads from the disk.
func dropCaches() error {
	if err := exec.Command("sync").Run(); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200)
}

func (rn *runner) cold() bool {
	if !rn.res.DropCaches {
		return false
	}
	if err := dropCaches(); err != nil {
		rn.logf("dropping the page cache: %v", err)
		return false
	}
	return true
}

func (rn *runner) measureSet(ctx context.Context, si SetInfo) {
	src := filepath.Join(rn.o.Data, si.Name)
	for _, c := range Combos {
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			if ctx.Err() != nil {
				return
			}
			home := filepath.Join(rn.o.Scratch, fmt.Sprintf("home-%s-b%dk-r%d", si.Name, c.Block>>10, rep))
			rn.kuraCycle(ctx, si, src, home, c, rep, c == DefaultCombo)
			if err := os.RemoveAll(home); err != nil {
				rn.logf("removing %s: %v", home, err)
			}
		}
	}
	if rn.havePeer("tar") {
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			if ctx.Err() != nil {
				return
			}
			rn.tarCycle(ctx, TestPeers, si, rep, true)
		}
	}
	if rn.havePeer(ToolRestic) {
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			if ctx.Err() != nil {
				return
			}
			rn.resticCycle(ctx, si, rep)
		}
	}
}

func (rn *runner) kuraCycle(ctx context.Context, si SetInfo, src, home string, c Combo, rep int, phases bool) {
	base := Run{Set: si.Name, Tool: ToolKura, Rep: rep, Block: c.Block, Buffer: c.Buffer, Files: int64(si.Files), Bytes: si.Bytes, Durable: true}
	b := withTest(base, TestTable51, PhaseBackup)
	b.Level = rn.o.Compress
	b = rn.localBackup(ctx, b, home, src)
	rn.add(b)
	if !phases || !b.OK() {
		return
	}
	v := withTest(base, TestPhases, PhaseVerify)
	v.Level, v.Durable = "data", false // reads only
	v.Command = []string{rn.o.Kura, "--home", home, "verify", strconv.FormatInt(b.SavesetID, 10), "--level", "data", "--json"}
	rn.add(rn.kura(ctx, v, nil))

	target := filepath.Join(rn.o.Scratch, fmt.Sprintf("restore-kura-%s-r%d", si.Name, rep))
	rn.add(rn.restoreRun(ctx, withTest(base, TestPhases, PhaseRestore), home, b.SavesetID, target))
	rn.remove(si, ToolKura, rep, target)
}

// localBackup is b as `kura backup --vtl bench --compress b.Level --json
// src` into a fresh home holding one library tuned to b's block and
// buffer (the home is emptied first; the caller removes it).
func (rn *runner) localBackup(ctx context.Context, b Run, home, src string) Run {
	if err := os.RemoveAll(home); err != nil {
		return failed(b, err)
	}
	if err := createLibrary(home, Combo{b.Block, b.Buffer}); err != nil {
		return failed(b, fmt.Errorf("creating the library: %w", err))
	}
	b.Command = []string{rn.o.Kura, "--home", home, "backup", "--vtl", benchLibrary, "--compress", b.Level, "--json", src}
	return rn.kura(ctx, b, nil)
}

// restoreRun is r as `kura restore ID --to target` of a saveset of home
// into an emptied target, with the sync after it timed (kura restore does
// not fsync the files it writes).
func (rn *runner) restoreRun(ctx context.Context, r Run, home string, id int64, target string) Run {
	_ = os.RemoveAll(target)
	r.Command = []string{rn.o.Kura, "--home", home, "restore", strconv.FormatInt(id, 10), "--to", target, "--json"}
	r = rn.kura(ctx, r, nil)
	r.Durable = false
	r.SyncSeconds = timeSync()
	return r
}

// failed is r recorded as failed with err.
func failed(r Run, err error) Run {
	r.Error = err.Error()
	if r.ExitCode == 0 {
		r.ExitCode = -1
	}
	return r
}

const benchLibrary = "bench"

func withTest(r Run, test, phase string) Run {
	r.Test, r.Phase = test, phase
	return r
}

func createLibrary(home string, c Combo) error {
	env, err := engine.Open(home)
	if err != nil {
		return err
	}
	defer env.Close()
	_, err = env.CreateLibrary(library.Config{Name: benchLibrary, BlockSize: c.Block, BufferSize: c.Buffer})
	return err
}

// kura runs one kura command (cold cache first) with extra environment
// env and reads its --json figures.
func (rn *runner) kura(ctx context.Context, r Run, env []string) Run {
	r.ColdCache = rn.cold()
	var out bytes.Buffer
	p := rn.execute(ctx, r.Command, env, &out, nil)
	p.apply(&r)
	if r.ExitCode == 0 || r.ExitCode == 3 || r.ExitCode == 4 {
		var f JobFigures
		if err := json.Unmarshal(out.Bytes(), &f); err != nil {
			r.Error = fmt.Sprintf("reading kura --json: %v", err)
		} else {
			r.JobID, r.SavesetID = f.JobID, f.SavesetID
			r.JobSeconds, r.AvgKBps, r.PeakKBps = f.Seconds, f.AvgKBps, f.PeakKBps
			if r.Phase == PhaseBackup {
				r.OutBytes, r.Ratio = f.MediaBytes, f.Ratio
				if r.Bytes == 0 { // a database dump: its size is known once made
					r.Bytes = f.SourceBytes
				}
			}
		}
	}
	if r.ExitCode == 4 && r.Error == "" {
		r.Error = "verify found problems: " + p.stderr
	}
	r.setRates()
	return r
}

// tarCycle is one repeat of tar on a set, recorded as runs of test: tar
// -cf, tar -xf of that archive into an empty folder, the folder's delete,
// and (with zstd, when the tool is there) tar -cf - | zstd -T0. The sync
// after each run is timed separately (Run.SyncSeconds), not in Seconds.
func (rn *runner) tarCycle(ctx context.Context, test string, si SetInfo, rep int, zstd bool) {
	base := Run{Test: test, Set: si.Name, Rep: rep, Files: int64(si.Files), Bytes: si.Bytes}
	archive := filepath.Join(rn.o.Scratch, fmt.Sprintf("%s-r%d.tar", si.Name, rep))

	c := base
	c.Tool, c.Phase = ToolTar, PhaseBackup
	c.Command = []string{"tar", "-cf", archive, "-C", rn.o.Data, si.Name}
	c.ColdCache = rn.cold()
	p := rn.execute(ctx, c.Command, nil, nil, nil)
	p.apply(&c)
	c.SyncSeconds = timeSync()
	c.OutBytes = fileSize(archive)
	c.setRates()
	rn.add(c)

	if c.OK() {
		target := filepath.Join(rn.o.Scratch, fmt.Sprintf("restore-tar-%s-r%d", si.Name, rep))
		_ = os.RemoveAll(target)
		x := base
		x.Tool, x.Phase = ToolTar, PhaseRestore
		if err := os.MkdirAll(target, 0o755); err != nil {
			x.Error, x.ExitCode = err.Error(), -1
			rn.add(x)
		} else {
			x.Command = []string{"tar", "-xf", archive, "-C", target}
			x.ColdCache = rn.cold()
			p := rn.execute(ctx, x.Command, nil, nil, nil)
			p.apply(&x)
			x.SyncSeconds = timeSync()
			x.setRates()
			rn.add(x)
			d := base
			d.Tool = ToolTar
			rn.deleteRun(d, target)
		}
	}
	_ = os.Remove(archive)

	if !zstd || !rn.havePeer("zstd") {
		return
	}
	z := base
	z.Tool, z.Phase = ToolTarZstd, PhaseBackup
	z.Level = "zstd -3 (default)"
	zpath := archive + ".zst"
	z.Command = []string{"sh", "-c", fmt.Sprintf("tar -cf - -C %s %s | zstd -T0 -q -o %s", shellQuote(rn.o.Data), shellQuote(si.Name), shellQuote(zpath))}
	z.ColdCache = rn.cold()
	p = rn.pipeline(ctx, []string{"tar", "-cf", "-", "-C", rn.o.Data, si.Name}, []string{"zstd", "-T0", "-q", "-o", zpath})
	p.apply(&z)
	z.SyncSeconds = timeSync()
	z.OutBytes = fileSize(zpath)
	if z.OutBytes > 0 {
		z.Ratio = fmt.Sprintf("%.2f:1", float64(z.Bytes)/float64(z.OutBytes))
	}
	z.setRates()
	rn.add(z)
	_ = os.Remove(zpath)
}

// remove deletes a restore target and records the time it took (deletes
// are slow on a disk mounted with discard; never part of a rate).
func (rn *runner) remove(si SetInfo, tool string, rep int, target string) {
	d := Run{Test: TestPhases, Set: si.Name, Tool: tool, Rep: rep, Files: int64(si.Files), Bytes: si.Bytes}
	if tool != ToolKura {
		d.Test = TestPeers
	}
	rn.deleteRun(d, target)
}

// deleteRun times rm -rf of target as the delete phase of d's test.
func (rn *runner) deleteRun(d Run, target string) {
	d.Phase, d.Command = PhaseDelete, []string{"rm", "-rf", target}
	start := time.Now()
	if err := os.RemoveAll(target); err != nil {
		d.Error, d.ExitCode = err.Error(), -1
	}
	d.Seconds = time.Since(start).Seconds()
	if d.Seconds > 0 {
		d.FilesPerSec = float64(d.Files) / d.Seconds
	}
	rn.add(d)
}

func (rn *runner) add(r Run) {
	rn.res.Runs = append(rn.res.Runs, r)
	rn.step++
	what := r.Tool + " " + r.Phase
	switch {
	case r.Test == TestLink || r.Test == TestPGLink:
		link := r.Link
		if link == "" {
			link = "unlimited"
		}
		what += fmt.Sprintf(" over %s, --compress %s", link, r.Level)
	case r.Test == TestDrives:
		what += ": " + strings.ReplaceAll(variantLabel(r.Variant), "`", "")
	case r.Test == TestTable55 && r.Block != 0:
		what += fmt.Sprintf(" through agent %s, %d KiB/%d KiB", r.Client, r.Block>>10, r.Buffer>>10)
	case r.Test == TestFiles && r.Phase == PhaseBackup:
		what += " (--compress none)"
	case r.Test == TestNetwork && r.Tool == ToolKura && r.Phase == PhaseBackup:
		if r.Client != "" {
			what += fmt.Sprintf(" --compress %s through agent %s", r.Level, r.Client)
		} else {
			what += fmt.Sprintf(" --compress %s, local", r.Level)
		}
	case r.Test == TestNetwork && r.Tool == ToolKura && r.Phase == PhaseDelete:
		what += fmt.Sprintf(" of the files restored from the local --compress %s saveset", r.Level)
	case r.Test == TestNetwork && r.Tool == ToolKura:
		where := "local"
		if r.Client != "" {
			where = "server's"
		}
		what += fmt.Sprintf(" of the %s --compress %s saveset", where, r.Level)
	case r.Block != 0 && r.Phase == PhaseBackup:
		what += fmt.Sprintf(" %d KiB/%d KiB", r.Block>>10, r.Buffer>>10)
	}
	msg := fmt.Sprintf("%.2f s", r.Seconds)
	if r.Phase != PhaseDelete && r.MiBps+r.FilesPerSec > 0 {
		msg += fmt.Sprintf(", %.1f MiB/s, %.0f files/s", r.MiBps, r.FilesPerSec)
	}
	if r.Ratio != "" {
		msg += ", " + r.Ratio
	}
	if (r.Test == TestLink || r.Test == TestPGLink) && r.OutBytes > 0 {
		msg += ", " + formatBytes(r.OutBytes) + " sent"
	}
	for _, j := range r.Jobs {
		if len(r.Jobs) > 1 {
			msg += fmt.Sprintf("; job %d (%s) %.2f s", j.JobID, j.Client, j.Seconds)
		}
	}
	if r.MaxRSSKiB > 0 && r.Client == "" { // a remote run's is the CLI's
		msg += fmt.Sprintf(", max RSS %.1f MiB", float64(r.MaxRSSKiB)/1024)
	}
	if r.Test == TestNetwork && r.Phase == PhaseBackup {
		if r.Client != "" {
			msg += fmt.Sprintf(", CPU agent %.2f s + server %.2f s (CLI %.2f s)", r.AgentCPUSeconds, r.ServerCPUSeconds, r.UserSeconds+r.SysSeconds)
		} else {
			msg += fmt.Sprintf(", CPU %.2f s", r.UserSeconds+r.SysSeconds)
		}
	}
	if !r.OK() {
		msg = fmt.Sprintf("FAILED (exit %d): %s", r.ExitCode, r.Error)
	}
	run := "run"
	if r.Test == TestNetwork && r.Tool == ToolKura {
		run = "pair"
	}
	rn.logf("[%d/%d] %s %s %s %d: %s", rn.step, rn.steps, r.Set, what, run, r.Rep, msg)
}

// proc is the outcome of running a command.
type proc struct {
	seconds   float64
	maxRSSKiB int64
	user, sys float64
	exit      int
	err       error
	stderr    string
}

func (p proc) apply(r *Run) {
	r.Seconds, r.MaxRSSKiB, r.UserSeconds, r.SysSeconds, r.ExitCode = p.seconds, p.maxRSSKiB, p.user, p.sys, p.exit
	if p.err != nil {
		r.Error = p.err.Error()
		if p.stderr != "" {
			r.Error += ": " + p.stderr
		}
	}
}

// env is the environment of a subprocess: the runner's own, without a
// user's server login (KURA_SERVER, KURA_TOKEN, a `kura login` file: a
// local run must never reach a server), plus extra.
func (rn *runner) env(extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KURA_SERVER", "KURA_TOKEN", "KURA_LOGIN", "KURA_HOME":
			// Local runs say --home; an inherited KURA_HOME would make
			// the admin commands of the remote tests local.
		default:
			out = append(out, kv)
		}
	}
	out = append(out, "KURA_LOGIN="+filepath.Join(rn.o.Scratch, "no-login.json"))
	return append(out, extra...)
}

// execute runs argv with extra environment env, timing it from start to
// exit, and takes its rusage.
func (rn *runner) execute(ctx context.Context, argv, env []string, stdout io.Writer, stdin io.Reader) proc {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = rn.env(env)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = stdout, &stderr, stdin
	start := time.Now()
	err := cmd.Run()
	p := proc{seconds: time.Since(start).Seconds()}
	p.fromState(cmd.ProcessState)
	if err != nil {
		p.err = err
		p.stderr = tail(stderr.String())
		if p.exit == 0 {
			p.exit = -1
		}
		if p.exit == 3 { // kura: completed with warnings
			p.err = nil
		}
	}
	return p
}

func (p *proc) fromState(st *os.ProcessState) {
	if st == nil {
		return
	}
	p.exit = st.ExitCode()
	p.user += st.UserTime().Seconds()
	p.sys += st.SystemTime().Seconds()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		p.maxRSSKiB = max(p.maxRSSKiB, ru.Maxrss) // KiB on Linux
	}
}

// pipeline runs a | b (b's stdout is b's business), timing both together.
func (rn *runner) pipeline(ctx context.Context, a, b []string) proc {
	var ea, eb bytes.Buffer
	ca := exec.CommandContext(ctx, a[0], a[1:]...)
	cb := exec.CommandContext(ctx, b[0], b[1:]...)
	ca.Env, cb.Env = rn.env(nil), rn.env(nil)
	ca.Stderr, cb.Stderr = &ea, &eb
	pr, pw, err := os.Pipe()
	if err != nil {
		return proc{err: err, exit: -1}
	}
	ca.Stdout, cb.Stdin = pw, pr
	start := time.Now()
	if err := cb.Start(); err != nil {
		pr.Close()
		pw.Close()
		return proc{err: err, exit: -1}
	}
	errA := ca.Start()
	pw.Close()
	pr.Close()
	if errA == nil {
		errA = ca.Wait()
	}
	errB := cb.Wait()
	p := proc{seconds: time.Since(start).Seconds()}
	var pa, pb proc
	pa.fromState(ca.ProcessState)
	pb.fromState(cb.ProcessState)
	p.user, p.sys = pa.user+pb.user, pa.sys+pb.sys
	p.maxRSSKiB = max(pa.maxRSSKiB, pb.maxRSSKiB)
	switch {
	case errA != nil:
		p.err, p.exit, p.stderr = errA, max(pa.exit, 1), tail(ea.String())
	case errB != nil:
		p.err, p.exit, p.stderr = errB, max(pb.exit, 1), tail(eb.String())
	}
	return p
}

func timeSync() float64 {
	start := time.Now()
	_ = exec.Command("sync").Run()
	return time.Since(start).Seconds()
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return s
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
