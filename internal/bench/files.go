package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/units"
)

// The files test (seed 002): small, medium and huge files read (backup),
// written (restore) and deleted through Kura, against a plain copy (cp -a)
// and delete (rm -rf) on the same disk. The files are incompressible and
// Kura runs with --compress none, so both sides move the same bytes and
// what differs is the cost per file and per byte.
//
// Seed 002 used 20 KB × 100, 100 MB × 100 and 4 GB × 1. Scaled by S:
//
//	small   20 KiB × max(100, 10,000 × S): the seed's 100 files are 2 MB,
//	        too little to time a process on; at S = 1 it is 100× the seed's
//	        count, at 0.1 1,000 files
//	medium  100 MiB × round(100 × S); below two files, two files whose
//	        size is scaled instead (at least 1 MiB)
//	huge    one file of 4 GiB × S (at least 1 MiB)

// FileSets are seed 002's shapes at a scale.
func FileSets(scale float64) []FileSet {
	small := max(100, int(math.Round(10000*scale)))
	n := 100 * scale
	medium, mediumSize := int(math.Round(n)), int64(100<<20)
	if medium < 2 {
		medium, mediumSize = 2, max(int64(float64(100<<20)*n/2), 1<<20)
	}
	huge := max(int64(float64(4<<30)*scale), 1<<20)
	out := []FileSet{
		{Name: "small", Files: small, FileBytes: 20 << 10},
		{Name: "medium", Files: medium, FileBytes: mediumSize},
		{Name: "huge", Files: 1, FileBytes: huge},
	}
	for i := range out {
		f := &out[i]
		f.Bytes = int64(f.Files) * f.FileBytes
		f.Label = sizeLabel(f.FileBytes) + " × " + units.Thousands(int64(f.Files))
	}
	return out
}

// sizeLabel is formatBytes without a trailing ".0".
func sizeLabel(n int64) string {
	s := formatBytes(n)
	return strings.Replace(s, ".0 ", " ", 1)
}

// filesPerRepeat is the runs of one shape and repeat: Kura backup, restore,
// delete, expire; cp -a, rm -rf.
const filesPerRepeat = 6

func (rn *runner) filesRuns() int { return len(rn.fileSets()) * filesPerRepeat * rn.o.Repeats }

func (rn *runner) fileSets() []FileSet {
	scale := rn.o.FilesScale
	if scale <= 0 {
		scale = rn.res.Data.Scale
	}
	return FileSets(scale)
}

// makeFileSet writes a shape's files (incompressible, from the data's
// seed) into dir.
func makeFileSet(ctx context.Context, dir string, fs FileSet, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w := len(strconv.Itoa(fs.Files))
	var buf, carry []byte
	for i := range fs.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := rand.New(rand.NewPCG(seed, 0x5eed002<<24|uint64(i)))
		var err error
		buf, err = writeFile(filepath.Join(dir, fmt.Sprintf("f%0*d.bin", w, i+1)), randomSource{r: r}, fs.FileBytes, buf, &carry)
		if err != nil {
			return err
		}
	}
	return nil
}

func (rn *runner) measureFiles(ctx context.Context) {
	root := filepath.Join(rn.o.Scratch, "files-data")
	defer os.RemoveAll(root)
	rn.res.FileSets = rn.fileSets()
	for _, fs := range rn.res.FileSets {
		src := filepath.Join(root, fs.Name)
		base := Run{Test: TestFiles, Set: fs.Name, Files: int64(fs.Files), Bytes: fs.Bytes}
		rn.logf("files test: writing %s (%s) …", fs.Label, formatBytes(fs.Bytes))
		if err := makeFileSet(ctx, src, fs, rn.res.Data.Seed); err != nil {
			for rep := 1; rep <= rn.o.Repeats; rep++ {
				for range filesPerRepeat {
					r := base
					r.Error, r.ExitCode = "writing the files: "+err.Error(), -1
					rn.add(r)
				}
			}
			continue
		}
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			if ctx.Err() != nil {
				return
			}
			base.Rep = rep
			rn.filesKura(ctx, base, src)
			rn.filesCopy(ctx, base, src)
		}
		if err := os.RemoveAll(src); err != nil {
			rn.logf("removing %s: %v", src, err)
		}
	}
}

// filesKura backs a shape up into a fresh library (read), restores it
// (write), deletes the restored files, and expires the saveset (its tape
// erased through Kura).
func (rn *runner) filesKura(ctx context.Context, base Run, src string) {
	home := filepath.Join(rn.o.Scratch, fmt.Sprintf("home-files-%s-r%d", base.Set, base.Rep))
	target := filepath.Join(rn.o.Scratch, fmt.Sprintf("restore-files-%s-r%d", base.Set, base.Rep))
	defer os.RemoveAll(home)
	base.Tool, base.Block, base.Buffer = ToolKura, DefaultCombo.Block, DefaultCombo.Buffer
	b := base
	b.Phase, b.Level, b.Durable = PhaseBackup, "none", true
	fail := func(r Run, err error) {
		r.Error, r.ExitCode = err.Error(), -1
		rn.add(r)
	}
	_ = os.RemoveAll(home)
	if err := createLibrary(home, DefaultCombo); err != nil {
		fail(b, fmt.Errorf("creating the library: %w", err))
		fail(withTest(base, TestFiles, PhaseRestore), err)
		fail(withTest(base, TestFiles, PhaseDelete), err)
		return
	}
	b.Command = []string{rn.o.Kura, "--home", home, "backup", "--vtl", benchLibrary, "--compress", "none", "--json", src}
	b = rn.kura(ctx, b, nil)
	rn.add(b)
	x := withTest(base, TestFiles, PhaseRestore)
	if !b.OK() {
		fail(x, fmt.Errorf("no backup to restore"))
		fail(withTest(base, TestFiles, PhaseDelete), fmt.Errorf("nothing restored to delete"))
		return
	}
	rn.add(rn.restoreRun(ctx, x, home, b.SavesetID, target))
	rn.deleteRun(base, target)
	rn.expireRun(ctx, base, home, b.SavesetID)
}

// expireRun deletes the saveset through Kura: `kura tape erase --force`
// expires it and erases its tape (what a prune does when retention lets go
// of a tape's last saveset).
func (rn *runner) expireRun(ctx context.Context, base Run, home string, id int64) {
	e := withTest(base, TestFiles, PhaseExpire)
	bc, err := savesetTape(home, id)
	if err != nil {
		e.Error, e.ExitCode = err.Error(), -1
		rn.add(e)
		return
	}
	e.Command = []string{rn.o.Kura, "--home", home, "tape", "erase", "--force", bc}
	p := rn.execute(ctx, e.Command, nil, nil, nil)
	p.apply(&e)
	if e.Seconds > 0 {
		e.FilesPerSec = float64(e.Files) / e.Seconds
	}
	rn.add(e)
}

// savesetTape is the tape holding a saveset's first part.
func savesetTape(home string, id int64) (string, error) {
	env, err := engine.Open(home)
	if err != nil {
		return "", err
	}
	defer env.Close()
	ss, err := env.Catalog.Saveset(id)
	if err != nil {
		return "", err
	}
	if len(ss.Parts) == 0 {
		return "", fmt.Errorf("saveset %d has no tape", id)
	}
	return ss.Parts[0].Barcode, nil
}

// filesCopy copies a shape with cp -a on the same disk and deletes the
// copy.
func (rn *runner) filesCopy(ctx context.Context, base Run, src string) {
	dst := filepath.Join(rn.o.Scratch, fmt.Sprintf("copy-files-%s-r%d", base.Set, base.Rep))
	_ = os.RemoveAll(dst)
	base.Tool = ToolCp
	c := base
	c.Phase = PhaseCopy
	c.Command = []string{"cp", "-a", src, dst}
	c.ColdCache = rn.cold()
	p := rn.execute(ctx, c.Command, nil, nil, nil)
	p.apply(&c)
	c.SyncSeconds = timeSync()
	c.OutBytes = dirSize(dst)
	c.setRates()
	rn.add(c)
	rn.deleteRun(base, dst)
}
