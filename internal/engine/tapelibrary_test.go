package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape/mtx/mtxtest"
	"github.com/kura-backup/kura/internal/tape/sttape"
)

// newTapeLibraryEnv is a home with a tape library "robot" on an emulated
// changer (two drives, four slots, one mail slot) holding three blank
// cartridges of 3 MiB to early warning, 6 MiB to the end.
func newTapeLibraryEnv(t *testing.T) (*engine.Env, *mtxtest.Robot) {
	t.Helper()
	env := newEnv(t)
	drives := []string{"/dev/nst0", "/dev/nst1"}
	r := mtxtest.New("/dev/sg7", drives, 4, 1)
	for i := 1; i <= 3; i++ {
		r.Insert(i, fmt.Sprintf("R%05dL8", i), sttape.NewMedia(3<<20, 6<<20))
	}
	env.TapeHardware = &library.Hardware{Run: r.Run, OpenDrive: r.OpenDrive}
	_, err := env.CreateChanger(library.Config{Name: "robot", BlockSize: 32 << 10, BufferSize: 256 << 10,
		Media: &library.MediaConfig{Kind: library.MediaChanger, Changer: "/dev/sg7", DriveDevices: drives}})
	if err != nil {
		t.Fatal(err)
	}
	return env, r
}

// noiseTree writes n bytes that do not compress into files under a new
// folder.
func noiseTree(t *testing.T, seed uint64, n int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	must(t, os.WriteFile(filepath.Join(src, "sub", "big"), b[:n/2], 0o644))
	must(t, os.WriteFile(filepath.Join(src, "other"), b[n/2:], 0o644))
	must(t, os.WriteFile(filepath.Join(src, "small"), []byte("on a real tape library"), 0o644))
	return src
}

func partTapes(t *testing.T, env *engine.Env, id int64) []string {
	t.Helper()
	ss, err := env.Catalog.Saveset(id)
	if err != nil {
		t.Fatal(err)
	}
	var bcs []string
	for _, p := range ss.Parts {
		if !slices.Contains(bcs, p.Barcode) {
			bcs = append(bcs, p.Barcode)
		}
	}
	return bcs
}

func verifyClean(t *testing.T, env *engine.Env, id int64, level string) {
	t.Helper()
	res, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: level})
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("verify %s of saveset %d: %v %v", level, id, err, res)
	}
}

// TestTapeLibraryBackupRestoreVerify: a backup to a tape library on an
// emulated changer labels blank cartridges as it needs them and spans from
// one to the next at the drive's early warning; the saveset restores and
// verifies at every level; the tapes list without loading any; an
// exported cartridge is a clear error for a restore until imported.
func TestTapeLibraryBackupRestoreVerify(t *testing.T) {
	env, r := newTapeLibraryEnv(t)
	src := noiseTree(t, 1, 4<<20)
	want := manifest(t, src)
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "robot"})
	id := res.Figures.SavesetID
	tapes := partTapes(t, env, id)
	if len(tapes) < 2 {
		t.Fatalf("a 4 MiB saveset on 3 MiB cartridges lies on tapes %v, want two", tapes)
	}
	lib, err := env.Changer("robot")
	if err != nil {
		t.Fatal(err)
	}
	moves := r.Moves()
	ts, err := lib.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	if r.Moves() != moves {
		t.Error("listing the tapes moved cartridges")
	}
	if ts[0].State != library.StateFull || ts[1].State != library.StateAppendable || ts[2].State != library.StateUnread {
		t.Errorf("tapes after the backup: %+v", ts)
	}

	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))
	for _, level := range []string{"media", "data"} {
		verifyClean(t, env, id, level)
	}

	must(t, lib.Export(tapes[0]))
	_, err = env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "exported") || !strings.Contains(err.Error(), tapes[0]) {
		t.Fatalf("restore with tape %s exported: %v, want an error naming it exported", tapes[0], err)
	}
	must(t, env.ImportTape(tapes[0]))
	to = t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))
}

// TestTapeLibraryChangerFailsMidBackup: the changer fails the move to the
// next cartridge while a backup spans: the job fails with the changer's
// error, and the saveset before it still restores and verifies.
func TestTapeLibraryChangerFailsMidBackup(t *testing.T) {
	env, r := newTapeLibraryEnv(t)
	first := noiseTree(t, 2, 200<<10)
	want := manifest(t, first)
	id := backup(t, env, engine.BackupOptions{Paths: []string{first}, Library: "robot"}).Figures.SavesetID

	r.FailNext("load")
	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{noiseTree(t, 3, 4<<20)}, Library: "robot"})
	if !errors.Is(err, library.ErrChanger) {
		t.Fatalf("backup with the changer failing: %v, want ErrChanger", err)
	}
	if res != nil && res.Figures.SavesetID != 0 {
		ss, err := env.Catalog.Saveset(res.Figures.SavesetID)
		if err == nil && ss.Status == catalog.StatusComplete {
			t.Fatalf("the failed backup's saveset is %s", ss.Status)
		}
	}
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, first)))
	verifyClean(t, env, id, "data")
}

// TestTapeLibraryCatalogLost: with the catalog lost, the tape library's
// folder registers again (as a tape library, its cartridges known by the
// changer), a scan of its first cartridge rebuilds the saveset from the
// tape alone, and the saveset restores; removing the library forgets it
// and leaves every cartridge in the changer.
func TestTapeLibraryCatalogLost(t *testing.T) {
	env, r := newTapeLibraryEnv(t)
	src := noiseTree(t, 4, 300<<10)
	want := manifest(t, src)
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "robot"}).Figures.SavesetID
	lib, err := env.Changer("robot")
	if err != nil {
		t.Fatal(err)
	}
	dir := lib.Config().Dir
	bc := partTapes(t, env, id)[0]

	env2 := newEnv(t)
	env2.TapeHardware = env.TapeHardware
	again, err := env2.RegisterLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.(*library.TapeLibrary); !ok {
		t.Fatalf("registered as a %T", again)
	}
	found, err := env2.Scan(bc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(found, func(f engine.ScanFound) bool { return f.Added && f.SavesetID == id }) {
		t.Fatalf("scan of %s rebuilt %+v, want saveset %d", bc, found, id)
	}
	to := t.TempDir()
	restore(t, env2, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))

	must(t, env2.Catalog.ExpireSaveset(id, "test"))
	if err := env2.RemoveLibrary("robot"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the removed library's folder is still there (%v)", err)
	}
	full := 0
	for _, sl := range r.Status().Slots {
		if sl.Full {
			full++
		}
	}
	for _, d := range r.Status().Drives {
		if d.Full {
			full++
		}
	}
	if full != 3 {
		t.Errorf("the changer holds %d cartridges after the library was removed, want 3", full)
	}
}

// TestTapeLibraryCatalogBackupRestore: the catalog's own backup goes to a
// tape library, and with the catalog lost it is found on the cartridges
// and restored from them; the saveset it records restores.
func TestTapeLibraryCatalogBackupRestore(t *testing.T) {
	env, _ := newTapeLibraryEnv(t)
	src := noiseTree(t, 5, 100<<10)
	want := manifest(t, src)
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "robot"}).Figures.SavesetID
	rec := backupCatalog(t, env, engine.CatalogBackupOptions{Library: "robot"})
	hw, home := env.TapeHardware, env.Home
	loseCatalog(t, env)

	env2 := openHome(t, home)
	env2.TapeHardware = hw
	res, err := env2.RestoreCatalog(context.Background(), engine.CatalogRestoreOptions{NoScan: true})
	if err != nil {
		t.Fatalf("restoring the catalog from the tape library: %v", err)
	}
	if res.From.Barcode != rec.Barcode || res.From.File != rec.File {
		t.Fatalf("restored from %+v, want tape %s file %d", res.From, rec.Barcode, rec.File)
	}
	to := t.TempDir()
	restore(t, env2, engine.RestoreOptions{SavesetID: id, To: to})
	sameTree(t, want, manifest(t, restored(to, src)))
}
