package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
)

func createLibrary(t *testing.T, env *engine.Env, cfg library.Config) *library.Library {
	t.Helper()
	lib, err := env.CreateLibrary(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func copySaveset(t *testing.T, env *engine.Env, id int64, o engine.CopyOptions) *engine.Result {
	t.Helper()
	res, err := env.Copy(context.Background(), id, o)
	if err != nil {
		t.Fatalf("copy of saveset %d to %s: %v", id, o.Library, err)
	}
	return res
}

func saveset(t *testing.T, env *engine.Env, id int64) *catalog.Saveset {
	t.Helper()
	ss, err := env.Catalog.Saveset(id)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// exportAll takes every tape holding a saveset's own data or index offline.
func exportAll(t *testing.T, env *engine.Env, parts ...catalog.Part) {
	t.Helper()
	done := map[string]bool{}
	for _, p := range parts {
		if done[p.Barcode] {
			continue
		}
		done[p.Barcode] = true
		lib, err := env.LibraryOfTape(p.Barcode)
		if err != nil {
			t.Fatal(err)
		}
		must(t, lib.Export(p.Barcode))
	}
}

func importAll(t *testing.T, env *engine.Env, parts ...catalog.Part) {
	t.Helper()
	done := map[string]bool{}
	for _, p := range parts {
		if done[p.Barcode] {
			continue
		}
		done[p.Barcode] = true
		lib, err := env.LibraryOfTape(p.Barcode)
		if err != nil {
			t.Fatal(err)
		}
		must(t, lib.Import(p.Barcode))
	}
}

func ownParts(ss *catalog.Saveset) []catalog.Part {
	return append(slices.Clone(ss.Parts), ss.IndexPart)
}

func copyParts(c catalog.Copy) []catalog.Part { return append(slices.Clone(c.Parts), c.IndexPart) }

func TestCopyRestoresWhenOwnTapesAreExported(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	createLibrary(t, env, library.Config{Name: "other"})
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.Mkdir(src, 0o755))
	tm := &treeMaker{t: t, rng: rand.New(rand.NewPCG(11, 3))}
	tm.build(src, 24, 1)
	want0 := manifest(t, src)
	full := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID

	res := copySaveset(t, env, full, engine.CopyOptions{Library: "offsite"})
	f := res.Figures
	if f.Kind != catalog.KindCopy || f.SavesetID != full || f.SourceBytes == 0 || f.MediaBytes < f.SourceBytes || len(f.Tapes) != 1 {
		t.Fatalf("copy figures: %+v", f)
	}
	ss := saveset(t, env, full)
	if len(ss.Copies) != 1 {
		t.Fatalf("copies after kura copy: %+v", ss.Copies)
	}
	c := ss.Copies[0]
	if c.Copy != 1 || c.Library != "offsite" || len(c.Parts) != 1 || c.IndexPart.Barcode == "" || c.Created.IsZero() {
		t.Fatalf("copy record: %+v", c)
	}
	if lib, _ := env.Catalog.TapeLibrary(c.Parts[0].Barcode); lib != "offsite" || c.Parts[0].Barcode != f.Tapes[0] {
		t.Errorf("copy on tape %s of library %q, job says tapes %v", c.Parts[0].Barcode, lib, f.Tapes)
	}
	// The frames are the same bytes: only the labels differ (tape file and
	// part numbers), so the parts are about as long.
	if d := c.Parts[0].Bytes - ss.Parts[0].Bytes; d < -64 || d > 64 {
		t.Errorf("copy part of %d bytes, saveset part of %d", c.Parts[0].Bytes, ss.Parts[0].Bytes)
	}
	onTape, err := env.Catalog.Savesets(catalog.SavesetFilter{Barcode: c.Parts[0].Barcode})
	if err != nil || len(onTape) != 1 || onTape[0].ID != full {
		t.Errorf("savesets on the copy's tape: %v %v", onTape, err)
	}

	// An incremental on another library, whose unchanged files live in
	// the full.
	must(t, os.WriteFile(filepath.Join(src, "new after the full"), []byte(strings.Repeat("new ", 5000)), 0o644))
	want1 := manifest(t, src)
	incr := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr, Library: "other"}).Figures.SavesetID

	exportAll(t, env, ownParts(ss)...)
	to := t.TempDir()
	rr := restore(t, env, engine.RestoreOptions{SavesetID: full, To: to})
	sameTree(t, want0, manifest(t, restored(to, src)))
	if !slices.Equal(rr.Figures.Tapes, []string{c.Parts[0].Barcode}) {
		t.Errorf("restore read tapes %v, want the copy's %s", rr.Figures.Tapes, c.Parts[0].Barcode)
	}
	job, err := env.Catalog.Job(rr.Figures.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(job.Log, "\n"), "reading copy 1 on library offsite") {
		t.Errorf("the restore's log does not say which copy it read:\n%s", strings.Join(job.Log, "\n"))
	}

	// The chain: the incremental's own tapes, the full's copy.
	to = t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: incr, To: to})
	sameTree(t, want1, manifest(t, restored(to, src)))

	// Without the cached index of the copy, it is read from the copy's tape.
	must(t, os.Remove(filepath.Join(env.Home, "index", "1.copy1.idx")))
	to = t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: full, To: to})
	sameTree(t, want0, manifest(t, restored(to, src)))
	if _, err := os.Stat(filepath.Join(env.Home, "index", "1.copy1.idx")); err != nil {
		t.Errorf("the copy's index was not cached again: %v", err)
	}
	if _, err := env.List(full, src); err != nil {
		t.Errorf("ls of a saveset read from its copy: %v", err)
	}

	// With the copy offline too, the restore names the saveset's own tapes.
	exportAll(t, env, copyParts(c)...)
	_, err = env.Restore(context.Background(), engine.RestoreOptions{SavesetID: full, To: t.TempDir()})
	if !errors.Is(err, engine.ErrTapesOffline) || !strings.Contains(err.Error(), ss.Parts[0].Barcode) {
		t.Fatalf("restore with every copy offline: %v; want ErrTapesOffline naming the saveset's own barcode", err)
	}
	// Back home, the saveset's own tapes are read again.
	importAll(t, env, ownParts(ss)...)
	rr = restore(t, env, engine.RestoreOptions{SavesetID: full, To: t.TempDir()})
	if !slices.Equal(rr.Figures.Tapes, []string{ss.Parts[0].Barcode}) {
		t.Errorf("restore read tapes %v, want the saveset's own %s", rr.Figures.Tapes, ss.Parts[0].Barcode)
	}
}

func TestCopyRefusals(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	copySaveset(t, env, id, engine.CopyOptions{Library: "offsite"})

	refused := func(what string, id int64, lib, want string) {
		t.Helper()
		_, err := env.Copy(context.Background(), id, engine.CopyOptions{Library: lib})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error saying %q", what, err, want)
		}
	}
	refused("a second copy to the same library", id, "offsite", "already has a copy on library offsite")
	refused("a copy to the saveset's own library", id, engine.DefaultLibrary, "is on library default already")
	refused("a copy to an unknown library", id, "nowhere", `no library named "nowhere"`)
	refused("a copy without a library", id, "", "--to-vtl")
	refused("a copy of an unknown saveset", 99, "offsite", "no saveset 99")

	createLibrary(t, env, library.Config{Name: "third"})
	failed := &catalog.Saveset{Client: "", Selection: "x", Level: catalog.LevelFull, Status: catalog.StatusFailed}
	must(t, env.Catalog.CreateSaveset(failed))
	refused("a copy of a failed saveset", failed.ID, "third", "not complete")
	must(t, env.Catalog.ExpireSaveset(id, "test"))
	refused("a copy of an expired saveset", id, "third", "expired")

	if ss := saveset(t, env, id); len(ss.Copies) != 1 {
		t.Errorf("refused copies changed the record: %+v", ss.Copies)
	}
}

// copyDataPath is the data file of the first part of copy n.
func copyDataPath(t *testing.T, env *engine.Env, id int64, n int) string {
	t.Helper()
	ss := saveset(t, env, id)
	p := ss.Copies[n-1].Parts[0]
	lib, err := env.LibraryOfTape(p.Barcode)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := lib.OpenTape(p.Barcode)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	return tp.(tape.DataPather).DataPath(p.File)
}

func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
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

func TestCopyVerifyFindsAFlippedByte(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	src := t.TempDir()
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))), []byte(strings.Repeat(string(rune('a'+i)), 300_000)), 0o644))
	}
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}, Compress: compress.LevelNone}).Figures.SavesetID

	res := copySaveset(t, env, id, engine.CopyOptions{Library: "offsite", Verify: true})
	if ph := res.Figures.Phases; len(ph) != 2 || ph[0].Name != "copy" || ph[1].Name != "verify" || ph[1].Files != ph[0].Files {
		t.Fatalf("copy --verify phases: %+v", ph)
	}
	vr, err := env.VerifyCopy(context.Background(), id, 1, engine.VerifyOptions{})
	if err != nil || vr.Checked != res.Figures.Files || len(vr.Problems) != 0 {
		t.Fatalf("verify of a good copy: %v, %d checked, %+v", err, vr.Checked, vr.Problems)
	}

	flipAt(t, copyDataPath(t, env, id, 1), 3_000_000)
	for _, level := range []string{engine.VerifyData, engine.VerifyMedia} {
		vr, err := env.VerifyCopy(context.Background(), id, 1, engine.VerifyOptions{Level: level})
		if !errors.Is(err, engine.ErrVerify) {
			t.Fatalf("verify %s of a damaged copy: %v", level, err)
		}
		named := false
		for _, p := range vr.Problems {
			named = named || strings.HasPrefix(p.Path, src+"/f")
		}
		if !named {
			t.Errorf("verify %s of the copy did not name an affected file: %+v", level, vr.Problems)
		}
	}
	// The saveset's own tapes are untouched.
	if vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{}); err != nil || len(vr.Problems) != 0 {
		t.Errorf("verify of the saveset itself: %v %+v", err, vr.Problems)
	}
	if _, err := env.VerifyCopy(context.Background(), id, 2, engine.VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "no copy 2") {
		t.Errorf("verify of a copy that does not exist: %v", err)
	}
}

func TestCopyOfDamagedSavesetIsNotRecorded(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "big"), []byte(strings.Repeat("0123456789", 300_000)), 0o644))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}, Compress: compress.LevelNone}).Figures.SavesetID
	flipByte(t, env, id, 1_500_000)

	res, err := env.Copy(context.Background(), id, engine.CopyOptions{Library: "offsite"})
	if !errors.Is(err, tape.ErrCorrupt) {
		t.Fatalf("copy of a damaged saveset: %v; want tape.ErrCorrupt", err)
	}
	if res == nil || res.Figures.Status != catalog.StateFailed {
		t.Fatalf("copy job result: %+v", res)
	}
	if ss := saveset(t, env, id); len(ss.Copies) != 0 {
		t.Errorf("a failed copy was recorded: %+v", ss.Copies)
	}
	if m, _ := filepath.Glob(filepath.Join(env.Home, "index", "*copy*")); len(m) != 0 {
		t.Errorf("a failed copy left index files: %v", m)
	}
}

func TestCopySpansTapes(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "tiny", TapeSize: 16 << 20, EarlyWarningMargin: 2 << 20, Slots: 6})
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3 {
		b := make([]byte, 9<<20+i*777) // incompressible: 27 MiB over 16 MiB tapes
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		must(t, os.WriteFile(filepath.Join(src, "video"+string(rune('0'+i))), b, 0o644))
	}
	must(t, os.WriteFile(filepath.Join(src, "readme.txt"), []byte(strings.Repeat("text ", 5000)), 0o600))
	want := manifest(t, src)
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID

	res := copySaveset(t, env, id, engine.CopyOptions{Library: "tiny", Verify: true})
	ss := saveset(t, env, id)
	c := ss.Copies[0]
	if len(c.Parts) < 2 || len(res.Figures.Tapes) < 2 {
		t.Fatalf("27 MiB copied to 16 MiB tapes: parts %+v, tapes %v", c.Parts, res.Figures.Tapes)
	}
	// Every part of the copy carries the saveset's label with its own part
	// number, as a backup's parts do.
	for i, p := range c.Parts {
		found, err := env.Scan(p.Barcode)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(found, func(f engine.ScanFound) bool {
			return f.File == p.File && f.Kind == "data" && f.SavesetID == id && f.Part == i+1
		}) {
			t.Errorf("scan of copy tape %s: %+v; want data part %d of saveset %d in file %d", p.Barcode, found, i+1, id, p.File)
		}
	}

	exportAll(t, env, ownParts(ss)...)
	to := t.TempDir()
	rr := restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))
	if !slices.Equal(rr.Figures.Tapes, partBarcodes(c.Parts)) {
		t.Errorf("restore read tapes %v, want the copy's %v", rr.Figures.Tapes, partBarcodes(c.Parts))
	}
}

func partBarcodes(parts []catalog.Part) []string {
	var out []string
	for _, p := range parts {
		if !slices.Contains(out, p.Barcode) {
			out = append(out, p.Barcode)
		}
	}
	return out
}

func TestCopyThatFailsItsVerifyIsNotKept(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	// A saveset whose stream disagrees with its index: the copy carries
	// the same frames, and its verify finds the disagreement.
	now := time.Now().UnixNano()
	id := craftSaveset(t, env, []crafted{
		{Entry: index.Entry{Path: "a", Type: index.TypeFile, Mode: 0o644, MTime: now}, tarPath: "b", content: "x"},
	})
	res, err := env.Copy(context.Background(), id, engine.CopyOptions{Library: "offsite", Verify: true})
	if !errors.Is(err, engine.ErrVerify) {
		t.Fatalf("copy --verify of a saveset that disagrees with its index: %v", err)
	}
	if res == nil || len(res.Figures.Phases) != 2 || len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "/a: ") {
		t.Fatalf("copy result: %+v", res)
	}
	if ss := saveset(t, env, id); len(ss.Copies) != 0 {
		t.Errorf("a copy that failed its verify is still recorded: %+v", ss.Copies)
	}
	if m, _ := filepath.Glob(filepath.Join(env.Home, "index", "*copy*")); len(m) != 0 {
		t.Errorf("a copy that failed its verify left index files: %v", m)
	}
	job, err := env.Catalog.Job(res.Figures.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if job.State != catalog.StateFailed || !strings.Contains(strings.Join(job.Log, "\n"), "taken out of the catalog") {
		t.Errorf("copy job %s, log:\n%s", job.State, strings.Join(job.Log, "\n"))
	}
}

// Erasing the tape of a copy drops that copy; the saveset stays, and
// restores from its own tapes.
func TestEraseCopyTapeKeepsTheSaveset(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite", Slots: 2, Drives: 1})
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	copySaveset(t, env, id, engine.CopyOptions{Library: "offsite"})
	bc := saveset(t, env, id).Copies[0].Parts[0].Barcode
	if _, err := env.EraseTape(bc, false); err == nil {
		t.Fatal("erasing a tape that holds a copy succeeded without --force")
	}
	if _, err := env.EraseTape(bc, true); err != nil {
		t.Fatal(err)
	}
	ss := saveset(t, env, id)
	if ss.Expired || len(ss.Copies) != 0 {
		t.Fatalf("after erasing the copy's tape: expired %v, copies %+v", ss.Expired, ss.Copies)
	}
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	if b, err := os.ReadFile(filepath.Join(restored(to, src), "f")); err != nil || string(b) != "kept" {
		t.Fatalf("restored %q, %v", b, err)
	}
}
