package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/walk"
	"golang.org/x/sys/unix"
)

func newEnv(t *testing.T) *engine.Env {
	t.Helper()
	env, err := engine.Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

func backup(t *testing.T, env *engine.Env, o engine.BackupOptions) *engine.Result {
	t.Helper()
	res, err := env.Backup(context.Background(), o)
	if errors.Is(err, engine.ErrWarnings) && onlyNameWarnings(res.Warnings) {
		err = nil // random trees hold non-UTF-8 names on purpose
	}
	if err != nil {
		var ws []string
		if res != nil {
			ws = res.Warnings
		}
		t.Fatalf("backup: %v %q", err, ws)
	}
	return res
}

func restore(t *testing.T, env *engine.Env, o engine.RestoreOptions) *engine.Result {
	t.Helper()
	res, err := env.Restore(context.Background(), o)
	if err != nil {
		t.Fatalf("restore: %v (warnings %v)", err, res.Warnings)
	}
	return res
}

func wholeSeconds(m map[string]node) map[string]node {
	out := make(map[string]node, len(m))
	for p, n := range m {
		n.MTime -= n.MTime % 1e9
		out[p] = n
	}
	return out
}

func onlyNameWarnings(ws []string) bool {
	for _, w := range ws {
		if !strings.Contains(w, "not valid UTF-8") {
			return false
		}
	}
	return len(ws) > 0
}

// restored is where a restore into to puts the source folder src.
func restored(to, src string) string { return filepath.Join(to, src) }

func TestRoundTripRandomTrees(t *testing.T) {
	levels := []compress.Level{compress.LevelAuto, compress.LevelNone, compress.LevelHigh}
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(levels[seed-1].String(), func(t *testing.T) {
			env := newEnv(t)
			src := filepath.Join(t.TempDir(), "src")
			must(t, os.Mkdir(src, 0o755))
			tm := &treeMaker{t: t, rng: rand.New(rand.NewPCG(seed, 42))}
			tm.build(src, 40, 3)
			want := manifest(t, src)

			res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Compress: levels[seed-1]})
			f := res.Figures
			if f.SavesetID == 0 || f.Files < int64(len(want)) || f.SourceBytes == 0 || f.MediaBytes == 0 || len(f.Tapes) != 1 {
				t.Fatalf("implausible figures: %+v", f)
			}
			if f.Status != "completed with warnings" && f.Status != "completed" || int(f.Warnings) != len(res.Warnings) {
				t.Fatalf("status %q with %d warnings: %v", f.Status, f.Warnings, res.Warnings)
			}
			to := t.TempDir()
			rr := restore(t, env, engine.RestoreOptions{SavesetID: f.SavesetID, To: to})
			if rr.Figures.SourceBytes != f.SourceBytes {
				t.Errorf("restore wrote %d bytes, backup read %d", rr.Figures.SourceBytes, f.SourceBytes)
			}
			sameTree(t, want, manifest(t, restored(to, src)))
		})
	}
}

// change applies one round of user activity to a tree: new, deleted,
// renamed, rewritten and re-permissioned files.
func change(t *testing.T, dir string, round int) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, "new-"+string(rune('a'+round))), []byte(strings.Repeat("new ", 1000*round)), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "rewritten"), []byte(strings.Repeat("v", 100+round)), 0o644))
	if round == 1 {
		must(t, os.Remove(filepath.Join(dir, "deleted")))
		must(t, os.Rename(filepath.Join(dir, "renamed-from"), filepath.Join(dir, "sub", "renamed-to")))
	}
	if round == 2 {
		must(t, os.Chmod(filepath.Join(dir, "sub", "chmod"), 0o600))
		must(t, os.RemoveAll(filepath.Join(dir, "gone")))
	}
}

func TestIncrementalAndDifferentialChains(t *testing.T) {
	env := newEnv(t)
	src := filepath.Join(t.TempDir(), "data")
	for _, d := range []string{"", "sub", "gone", "gone/deep"} {
		must(t, os.MkdirAll(filepath.Join(src, d), 0o755))
	}
	files := map[string]string{"rewritten": "v0", "deleted": "bye", "renamed-from": "moving", "sub/chmod": "x",
		"gone/deep/a": "a", "big": strings.Repeat("0123456789", 300_000)}
	for p, c := range files {
		must(t, os.WriteFile(filepath.Join(src, p), []byte(c), 0o644))
	}
	type moment struct {
		id   int64
		want map[string]node
	}
	var ms []moment
	run := func(level string) *engine.Result {
		res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: level})
		if res.Level != level {
			t.Fatalf("asked for %s, ran %s (%s)", level, res.Level, res.Note)
		}
		ms = append(ms, moment{res.Figures.SavesetID, manifest(t, src)})
		return res
	}
	full := run(engine.LevelFull)
	change(t, src, 1)
	incr1 := run(engine.LevelIncr)
	change(t, src, 2)
	incr2 := run(engine.LevelIncr)
	change(t, src, 3)
	diff := run(engine.LevelDiff)

	// Unchanged data is not read again: the big file is only in the full.
	if incr1.Figures.SourceBytes >= full.Figures.SourceBytes/2 || incr2.Figures.SourceBytes >= full.Figures.SourceBytes/2 {
		t.Errorf("incrementals read too much: full %d, incr %d and %d bytes", full.Figures.SourceBytes, incr1.Figures.SourceBytes, incr2.Figures.SourceBytes)
	}
	// A differential holds everything changed since the full.
	if diff.Figures.SourceBytes <= incr2.Figures.SourceBytes {
		t.Errorf("differential (%d bytes) should hold more than the last incremental (%d)", diff.Figures.SourceBytes, incr2.Figures.SourceBytes)
	}
	ss, err := env.Catalog.Saveset(diff.Figures.SavesetID)
	if err != nil || ss.BaseID != full.Figures.SavesetID {
		t.Fatalf("differential base = %v, %v; want the full %d", ss, err, full.Figures.SavesetID)
	}
	for _, m := range ms {
		to := t.TempDir()
		restore(t, env, engine.RestoreOptions{SavesetID: m.id, To: to})
		sameTree(t, m.want, manifest(t, restored(to, src)))
	}
}

func TestIncrWithoutFullRunsFull(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr})
	if res.Level != engine.LevelFull || res.Note == "" {
		t.Fatalf("level %q note %q: want a full backup and a note saying why", res.Level, res.Note)
	}
}

func TestRestoreSelectedFiles(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "keep", "deep"), 0o755))
	must(t, os.MkdirAll(filepath.Join(src, "skip"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "keep", "deep", "one.txt"), []byte("one"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "keep", "two.txt"), []byte("two"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "skip", "three.txt"), []byte("three"), 0o644))
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})

	to := t.TempDir()
	rel := strings.TrimPrefix(filepath.Join(src, "keep", "deep", "one.txt"), "/")
	restore(t, env, engine.RestoreOptions{Latest: true, Selection: "paths:" + src, To: to, Includes: []string{rel}})
	got, err := os.ReadFile(filepath.Join(to, rel))
	if err != nil || string(got) != "one" {
		t.Fatalf("single file: %q, %v", got, err)
	}
	for _, p := range []string{"keep/two.txt", "skip/three.txt"} {
		if _, err := os.Stat(filepath.Join(restored(to, src), p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s restored but not asked for (err %v)", p, err)
		}
	}
	// A folder and everything below it, by glob on the base name too.
	to2 := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to2, Includes: []string{"*.txt"}})
	if n := len(manifest(t, restored(to2, src))); n < 5 {
		t.Errorf("glob restore made %d entries", n)
	}
}

// TestRestoreNeedsATarget: a restore that says neither where to write nor
// that it may write over the originals writes nothing, records no job and
// says what to give; so does one that says both.
func TestRestoreNeedsATarget(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	p := filepath.Join(src, "f")
	must(t, os.WriteFile(p, []byte("backed up"), 0o644))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	must(t, os.WriteFile(p, []byte("live"), 0o644))
	jobs, err := env.Catalog.Jobs(0)
	must(t, err)
	for name, o := range map[string]engine.RestoreOptions{
		"neither": {SavesetID: id},
		"both":    {SavesetID: id, To: t.TempDir(), InPlace: true},
	} {
		_, err := env.Restore(context.Background(), o)
		if !errors.Is(err, engine.ErrRestoreTarget) || !strings.Contains(err.Error(), "--in-place") {
			t.Errorf("%s: err %v, want ErrRestoreTarget naming --to and --in-place", name, err)
		}
		if _, err := env.RestoreFiles(context.Background(), engine.EnvStore{Env: env}, &catalog.Saveset{ID: id}, o, 0, 0); !errors.Is(err, engine.ErrRestoreTarget) {
			t.Errorf("%s: RestoreFiles err %v, want ErrRestoreTarget", name, err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "live" {
		t.Fatalf("a restore without a target wrote over the live file: %q", b)
	}
	after, err := env.Catalog.Jobs(0)
	must(t, err)
	if len(after) != len(jobs) {
		t.Errorf("refused restores recorded %d jobs", len(after)-len(jobs))
	}
}

func TestOverwritePolicies(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	p := filepath.Join(src, "f")
	must(t, os.WriteFile(p, []byte("backed up"), 0o644))
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(p, old, old))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	must(t, os.WriteFile(p, []byte("newer local"), 0o644))

	restore(t, env, engine.RestoreOptions{SavesetID: id, InPlace: true, Overwrite: engine.OverwriteNever})
	restore(t, env, engine.RestoreOptions{SavesetID: id, InPlace: true, Overwrite: engine.OverwriteOlder})
	if b, _ := os.ReadFile(p); string(b) != "newer local" {
		t.Fatalf("never/older replaced a newer file: %q", b)
	}
	restore(t, env, engine.RestoreOptions{SavesetID: id, InPlace: true, Overwrite: engine.OverwriteAlways})
	if b, _ := os.ReadFile(p); string(b) != "backed up" {
		t.Fatalf("always did not replace: %q", b)
	}
}

func TestWarningsForSpecialFiles(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "ok"), []byte("ok"), 0o644))
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}})
	if !errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("err = %v, want ErrWarnings", err)
	}
	if res.Figures.Status != "completed with warnings" || res.Figures.Warnings != 1 ||
		len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "sock") {
		t.Fatalf("status %q, warnings %v", res.Figures.Status, res.Warnings)
	}
	job, err := env.Catalog.Job(res.Figures.JobID)
	if err != nil || job.State != "warnings" || job.WarningCount != 1 {
		t.Fatalf("job record %+v, %v", job, err)
	}
	// The saveset is complete and restorable.
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	if b, err := os.ReadFile(filepath.Join(restored(to, src), "ok")); err != nil || string(b) != "ok" {
		t.Fatalf("restore after warnings: %q %v", b, err)
	}
}

func TestLibraryIsNeverBackedUpIntoItself(t *testing.T) {
	env := newEnv(t)
	must(t, os.WriteFile(filepath.Join(env.Home, "..", "note"), []byte("x"), 0o644))
	res := backup(t, env, engine.BackupOptions{Paths: []string{filepath.Dir(env.Home)}})
	entries, err := env.List(res.Figures.SavesetID, strings.TrimPrefix(filepath.Dir(env.Home), "/"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Path, "/home") {
			t.Fatalf("the Kura home was backed up into itself: %s", e.Path)
		}
	}
	if len(entries) != 1 {
		t.Fatalf("entries %v, want only the note", entries)
	}
}

func TestSpanningAndStockToolsRecipe(t *testing.T) {
	for _, tool := range []string{"tar", "zstd", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/test.sh installs it): %v", tool, err)
		}
	}
	env := newEnv(t)
	_, err := env.CreateLibrary(library.Config{Name: "tiny", TapeSize: 16 << 20, EarlyWarningMargin: 2 << 20, Slots: 6})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 4 {
		b := make([]byte, 9<<20+i*1000) // incompressible: 36 MiB over 16 MiB tapes
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		must(t, os.WriteFile(filepath.Join(src, "video"+string(rune('0'+i))), b, 0o644))
	}
	must(t, os.WriteFile(filepath.Join(src, "readme.txt"), []byte(strings.Repeat("text ", 5000)), 0o600))
	want := manifest(t, src)
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "tiny"})
	if len(res.Figures.Tapes) < 3 {
		t.Fatalf("36 MiB on 16 MiB tapes used tapes %v", res.Figures.Tapes)
	}
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))

	// The recipe restores the same tree with cat, zstd and GNU tar alone.
	recipe, err := env.Recipe(res.Figures.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", recipe)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("recipe %q: %v\n%s", recipe, err, out)
	}
	// Stock tar restores whole-second times (Kura's own restore is exact).
	sameTree(t, wholeSeconds(want), wholeSeconds(manifest(t, restored(dir, src))))
}

func TestVerifyFindsDamage(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))), []byte(strings.Repeat(string(rune('a'+i)), 300_000)), 0o644))
	}
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Compress: compress.LevelNone, Verify: true})
	if len(res.Figures.Phases) != 2 || res.Figures.Phases[1].Name != "verify" {
		t.Fatalf("--verify should add a verify phase: %+v", res.Figures.Phases)
	}
	id := res.Figures.SavesetID
	for _, level := range []string{engine.VerifyMedia, engine.VerifyData, engine.VerifySource} {
		vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: level})
		if err != nil || len(vr.Problems) != 0 {
			t.Fatalf("verify %s of a good saveset: %v %v", level, err, vr.Problems)
		}
	}
	// Change a file on disk: source verify names it.
	must(t, os.WriteFile(filepath.Join(src, "fc"), []byte(strings.Repeat("X", 300_000)), 0o644))
	vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifySource})
	if !errors.Is(err, engine.ErrVerify) || len(vr.Problems) != 1 || !strings.HasSuffix(vr.Problems[0].Path, "/fc") {
		t.Fatalf("source verify after a change: %v %+v", err, vr.Problems)
	}

	// Flip a byte in the middle of the data on tape.
	flipByte(t, env, id, 3_000_000)
	for _, level := range []string{engine.VerifyMedia, engine.VerifyData} {
		vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: level})
		if !errors.Is(err, engine.ErrVerify) {
			t.Fatalf("verify %s of a damaged saveset: err %v", level, err)
		}
		named := false
		for _, p := range vr.Problems {
			if strings.HasPrefix(filepath.Base(p.Path), "f") && strings.HasPrefix(p.Path, src+"/") {
				named = true
			}
		}
		if !named {
			t.Errorf("verify %s did not name an affected file: %+v", level, vr.Problems)
		}
	}
}

func TestScanRebuildsLostCatalog(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	libDir := filepath.Join(t.TempDir(), "lib")
	if _, err := env.CreateLibrary(library.Config{Name: "main", Dir: libDir}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	tm := &treeMaker{t: t, rng: rand.New(rand.NewPCG(9, 9))}
	tm.build(src, 20, 2)
	want := manifest(t, src)
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "main"})
	env.Close()

	// The whole home is lost: catalog and cached indexes.
	must(t, os.RemoveAll(home))
	env2, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer env2.Close()
	if _, err := env2.RegisterLibrary(libDir); err != nil {
		t.Fatal(err)
	}
	found, err := env2.Scan(res.Figures.Tapes[0])
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := 0
	for _, f := range found {
		if f.Added {
			rebuilt++
		}
	}
	if rebuilt != 1 {
		t.Fatalf("scan found %+v, want one rebuilt saveset", found)
	}
	to := t.TempDir()
	restore(t, env2, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))
}

func TestBrowse(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.Mkdir(filepath.Join(src, "docs"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "docs", "report.odt"), []byte("v1"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "notes.txt"), []byte("n"), 0o644))
	id1 := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	must(t, os.WriteFile(filepath.Join(src, "docs", "report.odt"), []byte("version 2"), 0o644))
	id2 := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}).Figures.SavesetID

	entries, err := env.List(id2, src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Base(e.Path))
	}
	if strings.Join(names, ",") != "docs,notes.txt" {
		t.Fatalf("ls = %v", names)
	}
	if _, err := env.List(id2, src+"/no-such-folder"); err == nil {
		t.Error("listing a folder the saveset does not hold gave no error")
	}
	var versions []int64
	err = env.Find("report.odt", func(m engine.Match) error {
		versions = append(versions, m.SavesetID)
		return nil
	})
	if err != nil || len(versions) != 2 || versions[0] != id1 || versions[1] != id2 {
		t.Fatalf("find = %v, %v", versions, err)
	}
}

// flipByte damages one byte of a saveset's first data part on tape.
func flipByte(t *testing.T, env *engine.Env, id int64, off int64) {
	t.Helper()
	ss, err := env.Catalog.Saveset(id)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := env.LibraryOfTape(ss.Parts[0].Barcode)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := lib.OpenTape(ss.Parts[0].Barcode)
	if err != nil {
		t.Fatal(err)
	}
	data := tp.(tape.DataPather).DataPath(ss.Parts[0].File)
	tp.Close()
	f, err := os.OpenFile(data, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreGoesOnPastDamage(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for i := range 10 {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), []byte(strings.Repeat(fmt.Sprint(i), 1<<20)), 0o644))
	}
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Compress: compress.LevelNone})
	id := res.Figures.SavesetID
	flipByte(t, env, id, 2<<20+5000) // inside the third file
	flipByte(t, env, id, 7<<20+5000) // inside the eighth

	vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifyMedia})
	if !errors.Is(err, engine.ErrVerify) {
		t.Fatalf("media verify: %v", err)
	}
	bad := 0
	for _, p := range vr.Problems {
		if strings.HasPrefix(p.Path, "tape ") {
			bad++
		}
	}
	if bad != 2 {
		t.Errorf("media verify found %d damaged blocks, want both: %+v", bad, vr.Problems)
	}

	to := t.TempDir()
	rr, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if err == nil || errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("restore over damaged media should fail at its end: %v", err)
	}
	// A damaged block costs every file whose frames touch it (a frame is
	// decoded whole), and nothing else: each file is either restored byte
	// for byte or named as lost, never left half-written.
	lost := map[string]bool{}
	for _, w := range rr.Warnings {
		if strings.Contains(w, "NOT RESTORED") {
			lost[filepath.Base(strings.SplitN(w, ":", 2)[0])] = true
		}
	}
	if !lost["f02"] || !lost["f07"] || len(lost) > 6 {
		t.Errorf("lost files %v: want f02 and f07 (the damaged ones) and at most their frame neighbours", lost)
	}
	restoredFiles, _ := os.ReadDir(restored(to, src))
	if len(restoredFiles)+len(lost) != 10 {
		t.Errorf("restored %d files and lost %d, want 10 in all", len(restoredFiles), len(lost))
	}
	for _, f := range restoredFiles {
		if lost[f.Name()] {
			t.Errorf("%s is named as lost but was left on disk", f.Name())
		}
		b, _ := os.ReadFile(filepath.Join(restored(to, src), f.Name()))
		want := strings.Repeat(strings.TrimPrefix(f.Name(), "f0"), 1<<20)
		if string(b) != want {
			t.Errorf("%s restored with wrong content (%d bytes)", f.Name(), len(b))
		}
	}
}

func TestRestoreNamesExportedTapes(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	bc := res.Figures.Tapes[0]
	lib, err := env.LibraryOfTape(bc)
	if err != nil {
		t.Fatal(err)
	}
	must(t, lib.Export(bc))
	_, err = env.Restore(context.Background(), engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: t.TempDir()})
	if !errors.Is(err, engine.ErrTapesOffline) || !strings.Contains(err.Error(), bc) {
		t.Fatalf("restore from an exported tape: %v; want ErrTapesOffline naming the barcode", err)
	}
	must(t, lib.Import(bc))
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: t.TempDir()})
}

func TestBarcodesStayUniqueAcrossLibraries(t *testing.T) {
	env := newEnv(t)
	if _, err := env.OpenLibrary(""); err != nil { // the default library: KUR001…
		t.Fatal(err)
	}
	lib2, err := env.CreateLibrary(library.Config{Name: "offsite", Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	tapes, _ := lib2.Tapes()
	for _, tp := range tapes {
		if strings.HasPrefix(tp.Barcode, "KUR") {
			t.Errorf("library offsite got barcode %s, already used by the default library", tp.Barcode)
		}
	}
	if _, err := env.CreateLibrary(library.Config{Name: "third", BarcodePrefix: "KUR"}); err == nil {
		t.Fatal("a second library with prefix KUR was accepted")
	}
}

// With catalog.db lost, the home's library is still on disk with its
// savesets. A backup refuses to write until the library is registered
// (it would start a second history on the same tapes), and once it is, new
// savesets never take the IDs the tapes hold, scanned or not: the old chain
// comes back with `kura tape scan` and restores beside the new one.
func TestLostCatalogRefusesToWriteUntilRegistered(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("first"), 0o644))
	first := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	must(t, os.WriteFile(filepath.Join(src, "b"), []byte("second"), 0o644))
	second := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: "incr"})
	barcode := first.Figures.Tapes[0]
	env.Close()
	for _, f := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm"} {
		os.Remove(filepath.Join(env.Home, f))
	}
	env2, err := engine.Open(env.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer env2.Close()
	libDir := filepath.Join(env.Home, "vtl", engine.DefaultLibrary)
	tapeFiles := func() int {
		ents, err := os.ReadDir(filepath.Join(libDir, "tapes", barcode))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := tapeFiles()
	_, err = env2.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}})
	var ul *engine.UnregisteredLibraryError
	if !errors.Is(err, engine.ErrUnregisteredLibrary) || !errors.As(err, &ul) || ul.Dir != libDir || !strings.Contains(err.Error(), libDir) {
		t.Fatalf("backup into a lost catalog: err = %v, want an UnregisteredLibraryError naming the folder %s", err, libDir)
	}
	if n := tapeFiles(); n != before {
		t.Fatalf("the refused backup wrote to the tape: %d entries, were %d", n, before)
	}
	if _, err := env2.RegisterLibrary(libDir); err != nil {
		t.Fatal(err)
	}
	// Registered but not scanned yet: a new backup takes a fresh ID.
	must(t, os.WriteFile(filepath.Join(src, "c"), []byte("third"), 0o644))
	third := backup(t, env2, engine.BackupOptions{Paths: []string{src}})
	if id := third.Figures.SavesetID; id <= second.Figures.SavesetID {
		t.Fatalf("new saveset got ID %d, which tape %s already holds (savesets %d and %d)", id,
			barcode, first.Figures.SavesetID, second.Figures.SavesetID)
	}
	found, err := env2.Scan(barcode)
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, f := range found {
		if f.Added {
			added++
		}
	}
	if added != 2 {
		t.Fatalf("scan rebuilt %d savesets, want the 2 old ones: %+v", added, found)
	}
	// The old chain and the new full restore, each as it was.
	for _, c := range []struct {
		id   int64
		want []string
	}{{second.Figures.SavesetID, []string{"a", "b"}}, {third.Figures.SavesetID, []string{"a", "b", "c"}}} {
		to := t.TempDir()
		restore(t, env2, engine.RestoreOptions{SavesetID: c.id, To: to})
		ents, err := os.ReadDir(restored(to, src))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("saveset %d restored %v, want %v", c.id, got, c.want)
		}
	}
}

// A file whose size differs from what was read is reported the way GNU tar
// does ("file changed as we read it"): files in /proc claim size 0 and
// then deliver data, which makes the case deterministic.
func TestFileChangedWhileReadIsAWarning(t *testing.T) {
	env := newEnv(t)
	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{"/proc/self/status"}})
	if !errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("err = %v, want completed with warnings", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "status: file changed as we read it") {
		t.Fatalf("warnings %q", res.Warnings)
	}
	// The entry is in the index, flagged, so the gap is never silent.
	var found bool
	err = env.Find("status", func(m engine.Match) error {
		found = found || m.Entry.Flags&index.FlagChanged != 0
		return nil
	})
	if err != nil || !found {
		t.Fatalf("the changed file is not flagged in the index (err %v)", err)
	}
}

// Paths longer than the kernel takes by name (PATH_MAX) are backed up and
// restored: the walker opens them relative to their directory.
func TestPathsLongerThanPathMax(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	dir := src
	for len(dir) < 4500 {
		dir = filepath.Join(dir, strings.Repeat("d", 200))
	}
	must(t, mkdirAllLong(dir))
	f, err := openLong(filepath.Join(dir, "deep.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("at the bottom")
	f.Close()
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	if res.Figures.Warnings != 0 {
		t.Fatalf("warnings %q", res.Warnings)
	}
	var found bool
	err = env.Find("deep.txt", func(m engine.Match) error {
		found = m.Entry.Size == int64(len("at the bottom"))
		return nil
	})
	if err != nil || !found {
		t.Fatalf("the deep file is not in the saveset with its content (err %v)", err)
	}
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	fd, err := unix.Open("/", unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := strings.Trim(filepath.Join(restored(to, dir), "deep.txt"), "/")
	comps := strings.Split(p, "/")
	for _, c := range comps[:len(comps)-1] {
		nfd, err := unix.Openat(fd, c, unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("restored tree lacks %s: %v", c, err)
		}
		fd = nfd
	}
	buf := make([]byte, 100)
	ffd, err := unix.Openat(fd, "deep.txt", unix.O_RDONLY, 0)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := unix.Read(ffd, buf)
	unix.Close(ffd)
	if string(buf[:n]) != "at the bottom" {
		t.Fatalf("restored content %q", buf[:n])
	}
}

// mkdirAllLong and openLong work below PATH_MAX by walking with *at calls.
func mkdirAllLong(p string) error {
	fd, err := unix.Open("/", unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return err
		}
		nfd, err := unix.Openat(fd, c, unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = nfd
	}
	return unix.Close(fd)
}

func openLong(p string) (*os.File, error) {
	dir, base := filepath.Split(p)
	fd, err := unix.Open("/", unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		nfd, err := unix.Openat(fd, c, unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		fd = nfd
	}
	ffd, err := unix.Openat(fd, base, unix.O_CREAT|unix.O_WRONLY, 0o644)
	unix.Close(fd)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(ffd), p), nil
}

// More small files than the read-ahead budget holds must not stall the
// backup: readers that run ahead may not starve the file the writer needs
// next (a deadlock seen with 9,800 files of 200 KB).
func TestReadAheadBudgetNeverDeadlocks(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	// 30 MiB in files of 256 KiB, a read-ahead budget of a few files, and
	// a slow writer (high compression), so that the readers run far ahead.
	rng := rand.New(rand.NewPCG(3, 3))
	b := make([]byte, 256<<10)
	for i := range 120 {
		for j := range b {
			b[j] = 'a' + byte(rng.IntN(16)) // compressible, and slow to compress
		}
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), b, 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := env.Backup(ctx, engine.BackupOptions{Paths: []string{src}, Compress: compress.LevelHigh, ReadAhead: 2 << 20})
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if res.Figures.SourceBytes != 120*256<<10 {
		t.Fatalf("source bytes %d", res.Figures.SourceBytes)
	}
}

func TestVerifySample(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for i := range 200 {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), []byte(fmt.Sprint(i)), 0o644))
	}
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	all, err := env.Verify(context.Background(), id, engine.VerifyOptions{})
	if err != nil || all.Checked != saveset(t, env, id).Files {
		t.Fatalf("full verify checked %d files: %v", all.Checked, err)
	}
	some, err := env.Verify(context.Background(), id, engine.VerifyOptions{Sample: 10})
	if err != nil || some.Checked < 2 || some.Checked > 60 {
		t.Fatalf("a 10 %% sample checked %d of 200 files: %v", some.Checked, err)
	}
	if _, err := env.Verify(context.Background(), id, engine.VerifyOptions{Sample: 150}); err == nil {
		t.Fatal("a sample of 150 % was accepted")
	}
}

// When the data ends close to a tape's early-warning point, the index tape
// file goes to the next tape rather than past the point.
func TestIndexMovesToNextTapeAtEarlyWarning(t *testing.T) {
	env := newEnv(t)
	const ew = 24 << 20 // 32 MiB tapes, early warning 8 MiB before the end
	if _, err := env.CreateLibrary(library.Config{Name: "tiny", TapeSize: 32 << 20, EarlyWarningMargin: 8 << 20, Slots: 3}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	// 8,000 one-byte files: 8,192,000 bytes of stream and an index of
	// over 30 KB; one big file brings the data to ~15 KB before early
	// warning, so the index does not fit there.
	const small = 8000
	for i := range small {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("small-%04d", i)), []byte{byte(i)}, 0o644))
	}
	rng := rand.New(rand.NewPCG(5, 5))
	b := make([]byte, ew-small*1024-10_000-15_000)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	must(t, os.WriteFile(filepath.Join(src, "big"), b, 0o644))
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "tiny", Compress: compress.LevelNone})
	ss, err := env.Catalog.Saveset(res.Figures.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Parts) != 1 || ss.IndexBytes < 30_000 {
		t.Fatalf("set-up: %d data parts, index of %d bytes; want 1 part and an index over 30 KB", len(ss.Parts), ss.IndexBytes)
	}
	lib, _ := env.OpenLibrary("tiny")
	for _, bc := range res.Figures.Tapes {
		tp, err := lib.OpenTape(bc)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Used() > tp.Label().EarlyWarning {
			t.Errorf("tape %s holds %d bytes, past its early-warning point %d", bc, tp.Used(), tp.Label().EarlyWarning)
		}
		tp.Close()
	}
	if ss.IndexPart.Barcode == ss.Parts[0].Barcode {
		t.Fatalf("the index went on %s with the data, past early warning", ss.IndexPart.Barcode)
	}
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: ss.ID, To: to})

	// With a copy online, the index tape exported and the cached index
	// damaged, the restore reads the copy: a damaged cache does not count
	// as the index being at hand.
	createLibrary(t, env, library.Config{Name: "offsite"})
	copySaveset(t, env, ss.ID, engine.CopyOptions{Library: "offsite"})
	lib2, err := env.LibraryOfTape(ss.IndexPart.Barcode)
	if err != nil {
		t.Fatal(err)
	}
	must(t, lib2.Export(ss.IndexPart.Barcode))
	damageCache(t, env, ss.ID)
	rr, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: ss.ID, To: t.TempDir()})
	if err != nil || rr.Figures.Files < small {
		t.Fatalf("restore with the index tape exported and the cache damaged: %v", err)
	}
}

// TestBackupOfMissingPaths: a missing path among others is a warning and
// the rest is backed up (a complete saveset, ErrWarnings); when every path
// is missing the job is recorded as failed and no saveset is complete.
func TestBackupOfMissingPaths(t *testing.T) {
	env := newEnv(t)
	good := t.TempDir()
	must(t, os.WriteFile(filepath.Join(good, "f"), []byte("x"), 0o644))
	missing := filepath.Join(t.TempDir(), "missing")

	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{good, missing}})
	if !errors.Is(err, engine.ErrWarnings) || res == nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], missing) {
		t.Fatalf("backup GOOD MISSING: err %v, result %+v: want ErrWarnings naming %s", err, res, missing)
	}
	ss, err := env.Catalog.Saveset(res.Figures.SavesetID)
	must(t, err)
	if ss.Status != catalog.StatusComplete || ss.Files < 1 {
		t.Fatalf("saveset of GOOD MISSING: %s with %d files", ss.Status, ss.Files)
	}

	res, err = env.Backup(context.Background(), engine.BackupOptions{Paths: []string{missing, missing + "2"}})
	if !errors.Is(err, walk.ErrNoRoots) || errors.Is(err, engine.ErrWarnings) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("backup of missing paths only: %v, want ErrNoRoots naming %s", err, missing)
	}
	jobs, err := env.Catalog.Jobs(1)
	must(t, err)
	if len(jobs) != 1 || jobs[0].State != catalog.StateFailed || jobs[0].ID != res.Figures.JobID {
		t.Fatalf("the job of a backup of nothing: %+v, want it recorded as failed", jobs)
	}
}

// TestRestoreIncludeMatchingNothing: an --include that selects nothing is
// a warning; when every one does, the restore fails before writing anything.
func TestRestoreIncludeMatchingNothing(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	rel := strings.TrimPrefix(src, "/")

	to := t.TempDir()
	_, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to, Includes: []string{"no/such/path", "*.nope"}})
	if !errors.Is(err, engine.ErrNothingToRestore) || !strings.Contains(err.Error(), "no/such/path") {
		t.Fatalf("restore of nothing: %v, want ErrNothingToRestore naming the pattern", err)
	}
	if ents, _ := os.ReadDir(to); len(ents) != 0 {
		t.Fatalf("a restore of nothing wrote %d entries", len(ents))
	}

	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to, Includes: []string{rel + "/f", "no/such/path"}})
	if !errors.Is(err, engine.ErrWarnings) || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "no/such/path") {
		t.Fatalf("restore with one empty --include: %v %q, want a warning naming it", err, res.Warnings)
	}
	if b, err := os.ReadFile(filepath.Join(to, src, "f")); err != nil || string(b) != "x" {
		t.Fatalf("the matching file: %q %v", b, err)
	}
}

// TestRestoreExactPaths: --path restores exactly the named file (a* is the
// file named a*, not a glob), counts only its bytes as the restore's
// total, warns of a path that names nothing, and fails when none names
// anything; a path that is not clean is refused before anything runs.
func TestRestoreExactPaths(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for name, body := range map[string]string{"a*": "star", "ab": "not this", "a[1]": "bracket", "a1": "nor this"} {
		must(t, os.WriteFile(filepath.Join(src, name), []byte(body), 0o644))
	}
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID

	to := t.TempDir()
	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to,
		Paths: []string{filepath.Join(src, "a*"), filepath.Join(src, "a[1]"), filepath.Join(src, "gone")}})
	if !errors.Is(err, engine.ErrWarnings) || len(res.Warnings) != 1 ||
		res.Warnings[0] != fmt.Sprintf("--path %s: matches nothing in saveset %d", filepath.Join(src, "gone"), id) {
		t.Fatalf("restore with one path naming nothing: %v %q, want a warning naming it", err, res.Warnings)
	}
	ents, _ := os.ReadDir(filepath.Join(to, src))
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if fmt.Sprint(got) != "[a* a[1]]" || res.Figures.SourceBytes != int64(len("star")+len("bracket")) {
		t.Errorf("--path a* --path a[1] restored %q (%d bytes); want exactly those two files (11 bytes)", got, res.Figures.SourceBytes)
	}

	_, err = env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: t.TempDir(), Paths: []string{filepath.Join(src, "a")}})
	if !errors.Is(err, engine.ErrNothingToRestore) || !strings.Contains(err.Error(), "--path "+filepath.Join(src, "a")) {
		t.Errorf("restore of a path naming nothing: %v, want ErrNothingToRestore naming it", err)
	}
	for _, bad := range []string{"/", "", src + "/../x", src + "//a*"} {
		if _, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: t.TempDir(), Paths: []string{bad}}); !errors.Is(err, engine.ErrBadOption) {
			t.Errorf("restore --path %q: %v, want ErrBadOption", bad, err)
		}
	}
}

// A tape that was exported when the catalog was lost comes back with
// `kura tape import`, which reserves the saveset IDs on it: a backup made
// before it is scanned never takes one of them.
func TestImportedTapeReservesItsSavesetIDs(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	first := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	lib, err := env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	barcode := first.Figures.Tapes[0]
	must(t, lib.Export(barcode))
	env.Close()
	for _, f := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm"} {
		os.Remove(filepath.Join(env.Home, f))
	}
	env2, err := engine.Open(env.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer env2.Close()
	if _, err := env2.RegisterLibrary(lib.Config().Dir); err != nil {
		t.Fatal(err)
	}
	must(t, env2.ImportTape(barcode))
	next := backup(t, env2, engine.BackupOptions{Paths: []string{src}})
	if next.Figures.SavesetID <= first.Figures.SavesetID {
		t.Fatalf("a backup after importing tape %s got saveset ID %d, which the tape holds", barcode, next.Figures.SavesetID)
	}
}

// A local backup applies the limits a server applies to a request
// (api.JobRequest uses the same checks): a label over MaxLabelLen or a
// frame size out of range is refused before any job runs.
func TestBackupRefusesWhatTheServerRefuses(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	for _, o := range []engine.BackupOptions{
		{Paths: []string{src}, Label: strings.Repeat("x", engine.MaxLabelLen+1)},
		{Paths: []string{src}, Label: "nul\x00"},
		{Paths: []string{src}, FrameSize: 1},
	} {
		if _, err := env.Backup(context.Background(), o); !errors.Is(err, engine.ErrBadOption) {
			t.Errorf("backup with label of %d bytes, frame size %d: %v, want ErrBadOption", len(o.Label), o.FrameSize, err)
		}
	}
	if jobs, err := env.Catalog.Jobs(0); err != nil || len(jobs) != 0 {
		t.Errorf("refused backups left jobs: %d, %v", len(jobs), err)
	}
	backup(t, env, engine.BackupOptions{Paths: []string{src}, Label: strings.Repeat("x", engine.MaxLabelLen)})
}
