package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/catalogbackup"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

func backupCatalog(t *testing.T, env *engine.Env, o engine.CatalogBackupOptions) *engine.CatalogBackupResult {
	t.Helper()
	rec, err := env.BackupCatalog(context.Background(), o)
	if err != nil {
		t.Fatalf("catalog backup: %v", err)
	}
	return rec
}

// loseCatalog removes what a lost server takes with it: the catalog, the
// index cache, the job locks. The library folders survive.
func loseCatalog(t *testing.T, env *engine.Env) {
	t.Helper()
	home := env.Home
	must(t, env.Close())
	for _, p := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm", "index", "run"} {
		must(t, os.RemoveAll(filepath.Join(home, p)))
	}
}

// touch changes a tree for the next incremental.
func touch(t *testing.T, dir string, round int) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("round-%d", round)), []byte(strings.Repeat("r", 1000*round)), 0o644))
}

func openHome(t *testing.T, home string) *engine.Env {
	t.Helper()
	env, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

func restoreTree(t *testing.T, env *engine.Env, id int64, src string, want map[string]node) {
	t.Helper()
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))
}

// The disaster-recovery path end to end: a catalog backup, a saveset made
// after it, the catalog and the index cache lost; the catalog comes back
// from tape, and the later saveset with `kura tape scan`.
func TestCatalogBackupAndRestore(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env := openHome(t, home)
	src := t.TempDir()
	tm := &treeMaker{t: t, rng: rand.New(rand.NewPCG(21, 21))}
	tm.build(src, 20, 2)
	want1 := manifest(t, src)
	id1 := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	touch(t, src, 1)
	want2 := manifest(t, src)
	id2 := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}).Figures.SavesetID

	rec := backupCatalog(t, env, engine.CatalogBackupOptions{})
	if rec.Savesets != 2 || rec.LastSavesetID != id2 || rec.Barcode == "" || rec.File < 1 || rec.JobID == 0 || len(rec.SHA256) != 64 {
		t.Fatalf("catalog backup: %+v", rec)
	}
	last, err := env.LastCatalogBackup()
	if err != nil || last == nil || last.Barcode != rec.Barcode || last.File != rec.File || !last.Created.Equal(rec.Created) {
		t.Fatalf("last_catalog_backup = %+v, %v; want %+v", last, err, rec)
	}
	job, err := env.Catalog.Job(rec.JobID)
	if err != nil || job.Kind != catalog.KindCatalog || job.State != catalog.StateSucceeded || !slices.Equal(job.Tapes, []string{rec.Barcode}) {
		t.Fatalf("catalog backup job: %+v, %v", job, err)
	}
	if entries, _ := os.ReadDir(home); slices.ContainsFunc(entries, func(d os.DirEntry) bool { return strings.HasPrefix(d.Name(), "catalog-backup.") }) {
		t.Error("the catalog backup left its temporary folder in the home")
	}

	touch(t, src, 2)
	want3 := manifest(t, src)
	id3 := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}).Figures.SavesetID
	loseCatalog(t, env)

	env2 := openHome(t, home)
	res, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{NoScan: true})
	if err != nil {
		t.Fatalf("restoring the catalog: %v", err)
	}
	if res.From.Barcode != rec.Barcode || res.From.File != rec.File || res.From.Label.Savesets != 2 || len(res.Skipped) != 0 {
		t.Fatalf("restored from %+v (skipped %+v), want tape %s file %d", res.From, res.Skipped, rec.Barcode, rec.File)
	}
	if !slices.Contains(res.Rescan, rec.Barcode) {
		t.Errorf("rescan %v: want tape %s, which holds saveset %d written after the backup", res.Rescan, rec.Barcode, id3)
	}
	for _, id := range []int64{id1, id2} {
		if ss, err := env2.Catalog.Saveset(id); err != nil || ss.Status != catalog.StatusComplete {
			t.Fatalf("saveset %d after the restore: %+v, %v", id, ss, err)
		}
	}
	if _, err := env2.Catalog.Saveset(id3); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("saveset %d, made after the catalog backup, is in the restored catalog: %v", id3, err)
	}
	// The catalog backup's own job was running in its snapshot: it is
	// shown as it ended.
	if job, err := env2.Catalog.Job(rec.JobID); err != nil || job.State != catalog.StateSucceeded {
		t.Errorf("the catalog backup's job after the restore: %+v, %v", job, err)
	}
	// The indexes come back from tape: the cache was lost.
	restoreTree(t, env2, id1, src, want1)
	restoreTree(t, env2, id2, src, want2)

	found, err := env2.Scan(rec.Barcode)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range found {
		kinds = append(kinds, f.Kind)
		if f.File == rec.File && (f.Kind != "catalog" || !strings.HasPrefix(f.Note, "catalog backup of ")) {
			t.Errorf("scan shows the catalog backup as %+v", f)
		}
		if f.Added != (f.SavesetID == id3 && f.Kind == "index") {
			t.Errorf("scan: %+v; want only saveset %d rebuilt", f, id3)
		}
	}
	if want := []string{"data", "index", "data", "index", "catalog", "data", "index"}; !slices.Equal(kinds, want) {
		t.Errorf("scan found %v, want %v", kinds, want)
	}
	restoreTree(t, env2, id3, src, want3)
	// A new backup takes the next ID.
	if id := backup(t, env2, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}).Figures.SavesetID; id != id3+1 {
		t.Errorf("the next backup got saveset ID %d, want %d", id, id3+1)
	}
}

// A lost server rebuilt from its tapes alone: a new home on another path,
// the library folder moved; the restore finds the catalog backup in the
// folder it is given, points the library there and scans the tapes written
// after the backup.
func TestCatalogRestoreInNewHome(t *testing.T) {
	base := t.TempDir()
	env := openHome(t, filepath.Join(base, "home"))
	libDir := filepath.Join(base, "lib")
	if _, err := env.CreateLibrary(library.Config{Name: "main", Dir: libDir, Slots: 3}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	tm := &treeMaker{t: t, rng: rand.New(rand.NewPCG(22, 22))}
	tm.build(src, 15, 2)
	want1 := manifest(t, src)
	id1 := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "main"}).Figures.SavesetID
	rec := backupCatalog(t, env, engine.CatalogBackupOptions{Library: "main"})
	touch(t, src, 1)
	want2 := manifest(t, src)
	id2 := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "main", Level: engine.LevelIncr}).Figures.SavesetID
	env.Close()
	must(t, os.RemoveAll(filepath.Join(base, "home")))
	moved := filepath.Join(base, "moved-lib")
	must(t, os.Rename(libDir, moved))

	env2 := openHome(t, filepath.Join(base, "new-home"))
	if _, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{}); err == nil {
		t.Fatal("a restore with no library folder in the home and none given succeeded")
	}
	res, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{LibraryDirs: []string{moved}})
	if err != nil {
		t.Fatal(err)
	}
	if res.From.Barcode != rec.Barcode || res.From.File != rec.File || res.From.Library != "main" {
		t.Fatalf("restored from %+v, want %+v", res.From, rec)
	}
	if !slices.Equal(res.Rebuilt, []int64{id2}) || len(res.Rescan) != 0 {
		t.Fatalf("rebuilt %v, rescan %v: want saveset %d rebuilt by the scan", res.Rebuilt, res.Rescan, id2)
	}
	if lib, err := env2.Catalog.Library("main"); err != nil || lib.Dir != moved {
		t.Fatalf("library main after the restore: %+v, %v; want it in %s", lib, err, moved)
	}
	restoreTree(t, env2, id1, src, want1)
	restoreTree(t, env2, id2, src, want2)
}

// rotBelowTapeChecks flips a byte of a tape file and rewrites its block
// CRCs and filemark to match: damage the tape's own checks cannot see (a
// bit flipped in memory before the drive computed them), which only the
// catalog backup's checksums catch.
func rotBelowTapeChecks(t *testing.T, dataPath string, off int64) {
	t.Helper()
	base := strings.TrimSuffix(dataPath, ".data")
	data, err := os.ReadFile(dataPath)
	must(t, err)
	data[off] ^= 0x01
	must(t, os.WriteFile(dataPath, data, 0o644))
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	sums, err := os.ReadFile(base + ".crc")
	must(t, err)
	bs := int(binary.LittleEndian.Uint32(sums[8:]))
	for k := 0; k*bs < len(data); k++ {
		binary.LittleEndian.PutUint32(sums[16+4*k:], crc32.Checksum(data[k*bs:min(len(data), (k+1)*bs)], castagnoli))
	}
	must(t, os.WriteFile(base+".crc", sums, 0o644))
	mark, err := os.ReadFile(base + ".mark")
	must(t, err)
	binary.LittleEndian.PutUint32(mark[32:], crc32.Checksum(sums[16:], castagnoli))
	end := len(mark) - 4
	binary.LittleEndian.PutUint32(mark[end:], crc32.Checksum(mark[:end], castagnoli))
	must(t, os.WriteFile(base+".mark", mark, 0o644))
}

func flipOnTape(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	var b [1]byte
	_, err = f.ReadAt(b[:], off)
	must(t, err)
	b[0] ^= 0x40
	_, err = f.WriteAt(b[:], off)
	must(t, err)
}

func catalogDataPath(t *testing.T, env *engine.Env, rec *engine.CatalogBackupResult) string {
	t.Helper()
	lib, err := env.LibraryOfTape(rec.Barcode)
	must(t, err)
	tp, err := lib.OpenTape(rec.Barcode)
	must(t, err)
	defer tp.Close()
	return tp.(tape.DataPather).DataPath(rec.File)
}

// Damaged catalog backups are refused with the check that caught them, and
// the next newest good one is restored.
func TestCatalogRestoreSkipsDamagedBackups(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env := openHome(t, home)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	id1 := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	good := backupCatalog(t, env, engine.CatalogBackupOptions{})
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	rotten := backupCatalog(t, env, engine.CatalogBackupOptions{})
	flipped := backupCatalog(t, env, engine.CatalogBackupOptions{})

	// The newest: a byte flipped on the media, which the tape's block CRC
	// catches. The next: a byte flipped inside the zstd frame beneath the
	// tape's checks, which its content checksum catches.
	flipOnTape(t, catalogDataPath(t, env, flipped), 100)
	p := catalogDataPath(t, env, rotten)
	fi, err := os.Stat(p)
	must(t, err)
	rotBelowTapeChecks(t, p, fi.Size()-2)
	found, err := env.Scan(flipped.Barcode)
	must(t, err)
	for _, f := range found {
		switch {
		case f.File == flipped.File && (f.Kind != "catalog" || !strings.Contains(f.Note, "corrupt block")):
			t.Errorf("scan shows the catalog backup with a bad block as %+v", f)
		case (f.File == good.File || f.File == rotten.File) && (f.Kind != "catalog" || !strings.HasPrefix(f.Note, "catalog backup of")):
			t.Errorf("scan shows a catalog backup with a good label as %+v", f)
		}
	}
	loseCatalog(t, env)

	env2 := openHome(t, home)
	copies, _, err := env2.FindCatalogBackups(nil)
	must(t, err)
	if len(copies) != 3 || copies[0].File != flipped.File || copies[0].Label != nil || copies[1].File != rotten.File || copies[1].Label == nil {
		t.Fatalf("catalog backups found: %+v", copies)
	}
	res, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.From.File != good.File || res.From.Label.Savesets != 1 {
		t.Fatalf("restored from %+v, want the good backup in tape file %d", res.From, good.File)
	}
	if len(res.Skipped) != 2 {
		t.Fatalf("skipped %+v, want the two damaged backups", res.Skipped)
	}
	if s := res.Skipped[0]; s.File != flipped.File || !strings.Contains(s.Error, "corrupt block") {
		t.Errorf("the backup with a bad block: %+v", s)
	}
	if s := res.Skipped[1]; s.File != rotten.File || !strings.Contains(s.Error, "catalogbackup: corrupt: zstd") {
		t.Errorf("the backup damaged beneath the tape's checks: %+v", s)
	}
	if ss, err := env2.Catalog.Saveset(id1); err != nil || ss.Status != catalog.StatusComplete {
		t.Fatalf("saveset %d: %+v, %v", id1, ss, err)
	}

	// Asked for by tape and file, a damaged backup is refused outright.
	env2.Close()
	loseCatalog(t, env2)
	env3 := openHome(t, home)
	_, err = env3.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{Barcode: rotten.Barcode, File: rotten.File})
	if !errors.Is(err, engine.ErrNoCatalogBackup) || !strings.Contains(err.Error(), "sha256") && !strings.Contains(err.Error(), "zstd") {
		t.Fatalf("restoring the damaged backup: %v", err)
	}
	if sets, _ := env3.Catalog.Savesets(catalog.SavesetFilter{}); len(sets) != 0 {
		t.Fatalf("a refused restore changed the catalog: %d savesets", len(sets))
	}
}

// A catalog that holds anything is replaced only with Force, and then kept.
func TestCatalogRestoreRefusesExistingCatalog(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	id1 := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	rec := backupCatalog(t, env, engine.CatalogBackupOptions{})
	must(t, os.WriteFile(filepath.Join(src, "b"), []byte("b"), 0o644))
	id2 := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID

	_, err := env.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{})
	if !errors.Is(err, engine.ErrCatalogExists) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore over a catalog with savesets: %v", err)
	}
	if _, err := env.Catalog.Saveset(id2); err != nil {
		t.Fatalf("the refused restore changed the catalog: %v", err)
	}

	res, err := env.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.From.File != rec.File || res.Replaced == "" {
		t.Fatalf("forced restore: %+v", res)
	}
	old, err := catalog.Open(res.Replaced)
	must(t, err)
	if _, err := old.Saveset(id2); err != nil {
		t.Errorf("the replaced catalog %s lacks saveset %d: %v", res.Replaced, id2, err)
	}
	old.Close()
	// The scan of the tape written after the backup brings saveset 2 back.
	if !slices.Equal(res.Rebuilt, []int64{id2}) {
		t.Errorf("rebuilt %v, want [%d]", res.Rebuilt, id2)
	}
	for _, id := range []int64{id1, id2} {
		to := t.TempDir()
		restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	}
}

// slowProducer runs a catalog backup in the middle of a backup, at the
// moment its saveset is "running" and its first tape file half written.
type slowProducer struct {
	env *engine.Env
	rec *engine.CatalogBackupResult
	err error
}

func (p *slowProducer) Produce(ctx context.Context, spec engine.ProduceSpec, sink stream.FrameSink, idx io.Writer, hooks engine.ProduceHooks) (*engine.Produced, error) {
	p.rec, p.err = p.env.BackupCatalog(ctx, engine.CatalogBackupOptions{})
	return engine.LocalProducer{}.Produce(ctx, spec, sink, idx, hooks)
}

// A catalog backup taken while a backup runs uses a drive of its own and a
// consistent snapshot; restored, the running saveset comes back complete
// from its index on tape.
func TestCatalogBackupDuringBackup(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	env := openHome(t, home)
	src := t.TempDir()
	tm := &treeMaker{t: t, rng: rand.New(rand.NewPCG(23, 23))}
	tm.build(src, 10, 2)
	want := manifest(t, src)
	p := &slowProducer{env: env}
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Producer: p})
	if p.err != nil {
		t.Fatalf("catalog backup during a backup: %v", p.err)
	}
	if p.rec.Barcode == res.Figures.Tapes[0] {
		t.Errorf("the catalog backup went to tape %s, which the backup had in its drive", p.rec.Barcode)
	}
	if p.rec.Savesets != 1 {
		t.Errorf("the snapshot holds %d savesets, want the running one", p.rec.Savesets)
	}
	env.Close()

	env2 := openHome(t, filepath.Join(base, "new-home"))
	rr, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{LibraryDirs: []string{filepath.Join(home, "vtl", "default")}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Figures.SavesetID
	if !slices.Contains(rr.Rebuilt, id) {
		t.Errorf("rebuilt %v, want saveset %d (running in the snapshot, complete on tape)", rr.Rebuilt, id)
	}
	ss, err := env2.Catalog.Saveset(id)
	if err != nil || ss.Status != catalog.StatusComplete {
		t.Fatalf("saveset %d after the restore: %+v, %v", id, ss, err)
	}
	if jobs, _ := env2.Catalog.Jobs(10); slices.ContainsFunc(jobs, func(j *catalog.Job) bool { return j.State == catalog.StateRunning }) {
		t.Errorf("jobs still running after the restore: %+v", jobs)
	}
	to := t.TempDir()
	restore(t, env2, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, wholeSeconds(want), wholeSeconds(manifest(t, restored(to, src))))
}

// The tape file stands alone: zstd -dc of it is the catalog, whose SHA-256
// the label gives.
func TestCatalogBackupIsSelfDescribing(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	rec := backupCatalog(t, env, engine.CatalogBackupOptions{})
	f, err := os.Open(catalogDataPath(t, env, rec))
	must(t, err)
	defer f.Close()
	r, err := catalogbackup.NewReader(f)
	must(t, err)
	defer r.Close()
	db := filepath.Join(t.TempDir(), "catalog.db")
	out, err := os.Create(db)
	must(t, err)
	_, err = io.Copy(out, r)
	must(t, err)
	must(t, out.Close())
	l := r.Label()
	if l.Format != catalogbackup.Format || l.SHA256 != rec.SHA256 || l.Savesets != 1 || l.JobID != rec.JobID ||
		len(l.Libraries) != 1 || l.Libraries[0].Name != engine.DefaultLibrary {
		t.Fatalf("label %+v", l)
	}
	c, err := catalog.Open(db)
	must(t, err)
	defer c.Close()
	if sets, err := c.Savesets(catalog.SavesetFilter{}); err != nil || len(sets) != 1 {
		t.Fatalf("the catalog on tape: %d savesets, %v", len(sets), err)
	}
}

// A library folder that moved is registered at its new place when the
// catalog's folder for it holds no library any more; never while it does.
func TestCatalogRegisterMovedLibrary(t *testing.T) {
	env := newEnv(t)
	base := t.TempDir()
	dir := filepath.Join(base, "a")
	if _, err := env.CreateLibrary(library.Config{Name: "main", Dir: dir, Slots: 1}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, "b")
	must(t, os.Rename(dir, other))
	must(t, os.Mkdir(dir, 0o755))
	if _, err := env.RegisterLibrary(other); err != nil {
		t.Fatalf("registering a moved library: %v", err)
	}
	if lib, err := env.Catalog.Library("main"); err != nil || lib.Dir != other {
		t.Fatalf("library main: %+v, %v; want it in %s", lib, err, other)
	}
	// A copy of it elsewhere does not take its place while it is there.
	copyDir := filepath.Join(base, "c")
	must(t, os.CopyFS(copyDir, os.DirFS(other)))
	if _, err := env.RegisterLibrary(copyDir); err == nil || !strings.Contains(err.Error(), "already registered at "+other) {
		t.Errorf("registering a copy of a registered library: %v", err)
	}
	if _, err := env.RegisterLibrary(other); err != nil {
		t.Errorf("registering a library again at its own folder: %v", err)
	}
}

// A catalog restored from a backup older than the tapes, with the newer
// tapes left unscanned (--no-scan), never gives a new saveset the ID of one
// written after the catalog backup: it comes back with `kura tape scan`.
func TestRestoredCatalogNeverReusesIDsOnTape(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	backupCatalog(t, env, engine.CatalogBackupOptions{})
	after := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	home := env.Home
	loseCatalog(t, env)

	env2 := openHome(t, home)
	if _, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{NoScan: true}); err != nil {
		t.Fatal(err)
	}
	next := backup(t, env2, engine.BackupOptions{Paths: []string{src}})
	if next.Figures.SavesetID <= after.Figures.SavesetID {
		t.Fatalf("a backup after the restore got saveset ID %d; saveset %d, made after the catalog backup, is on tape with it",
			next.Figures.SavesetID, after.Figures.SavesetID)
	}
}
