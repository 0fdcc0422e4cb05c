package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// smallDisk mounts an 8 MiB tmpfs at a new folder for the test. It needs
// root on Linux; the same faults are injected everywhere through faultfs
// in internal/tape (TestFaults).
func smallDisk(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root on Linux (internal/tape TestFaults injects ENOSPC everywhere)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// randomTree writes one file of n incompressible bytes into a new folder.
func randomTree(t *testing.T, n int) (dir string, data []byte) {
	t.Helper()
	dir = t.TempDir()
	data = make([]byte, n)
	rand.Read(data)
	must(t, os.WriteFile(filepath.Join(dir, "f"), data, 0o644))
	return dir, data
}

func checkRestores(t *testing.T, env *engine.Env, id int64, src string, want []byte) {
	t.Helper()
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	got, err := os.ReadFile(filepath.Join(restored(to, src), "f"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("saveset %d does not restore as it was (%v)", id, err)
	}
}

func usedOn(t *testing.T, env *engine.Env, lib string) (used int64, files int) {
	t.Helper()
	tapes, err := env.Tapes(lib)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tapes {
		used += tp.Used
		files += tp.Files
	}
	return used, files
}

// A backup that fills the disk under its library fails cleanly: its saveset
// and job are marked failed (not left incomplete), the unfinished tape file
// is gone so `tape list` shows what is really there, the next backup runs
// without anyone deleting files by hand, and earlier savesets restore. Both
// with the library alone on the small disk and with the whole home (the
// default library inside it) there.
func TestFullDiskUnderLibrary(t *testing.T) {
	for _, homeToo := range []bool{false, true} {
		name := "library"
		if homeToo {
			name = "home and library"
		}
		t.Run(name, func(t *testing.T) {
			disk := smallDisk(t)
			homeDir := filepath.Join(t.TempDir(), "home")
			if homeToo {
				homeDir = filepath.Join(disk, "home")
			}
			env, err := engine.Open(homeDir)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if _, err := env.CreateLibrary(library.Config{Name: "small", Dir: filepath.Join(disk, "lib"), Slots: 2, TapeSize: 64 << 20}); err != nil {
				t.Fatal(err)
			}
			fullDiskJob(t, env, "small")
		})
	}
}

func fullDiskJob(t *testing.T, env *engine.Env, lib string) {
	small, smallData := randomTree(t, 1<<20)
	first := backup(t, env, engine.BackupOptions{Paths: []string{small}, Library: lib})
	usedBefore, filesBefore := usedOn(t, env, lib)

	big, _ := randomTree(t, 12<<20)
	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{big}, Library: lib})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("backup onto a full disk: %v, want ENOSPC", err)
	}
	ss, err := env.Catalog.Saveset(res.Figures.SavesetID)
	if err != nil || ss.Status != catalog.StatusFailed {
		t.Fatalf("the saveset of the failed backup: %+v, %v; want failed", ss, err)
	}
	job, err := env.Catalog.Job(res.Figures.JobID)
	if err != nil || job.State != "failed" {
		t.Fatalf("the failed job: %+v, %v", job, err)
	}
	if used, files := usedOn(t, env, lib); used != usedBefore || files != filesBefore {
		t.Errorf("after the failed backup the tapes show %d bytes in %d files, want %d in %d (what the first backup wrote)",
			used, files, usedBefore, filesBefore)
	}

	// The next job needs no hand work.
	again := backup(t, env, engine.BackupOptions{Paths: []string{small}, Library: lib})
	checkRestores(t, env, first.Figures.SavesetID, small, smallData)
	checkRestores(t, env, again.Figures.SavesetID, small, smallData)
}

// A full disk under the home (the catalog, the index cache) fails a job
// cleanly, and once space is back the next job works and every earlier
// saveset restores.
func TestFullDiskUnderHome(t *testing.T) {
	disk := smallDisk(t)
	env, err := engine.Open(filepath.Join(disk, "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.CreateLibrary(library.Config{Name: "big", Dir: filepath.Join(t.TempDir(), "lib"), Slots: 2}); err != nil {
		t.Fatal(err)
	}
	src, data := randomTree(t, 1<<20)
	first := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "big"})

	// Fill the home's disk to the last byte.
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	for n := 1; n < 64; n++ { // the last small holes too
		if err := os.WriteFile(filepath.Join(disk, "hole"+string(rune('a'+n%26))+string(rune('a'+n/26))), make([]byte, 512), 0o600); err != nil {
			break
		}
	}

	if _, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}, Library: "big"}); err == nil {
		t.Fatal("a backup with a full home succeeded")
	}
	must(t, os.Remove(filler))
	again := backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "big"})
	checkRestores(t, env, first.Figures.SavesetID, src, data)
	checkRestores(t, env, again.Figures.SavesetID, src, data)
}

// A job killed mid-write on a disk it filled leaves an unfinished tape file
// that takes the last byte. The next process takes that space back before
// it needs it (to open the catalog, to record which tape is in a drive), so
// the next backup works without anyone deleting files by hand.
func TestFullDiskLeftByACrashedWriter(t *testing.T) {
	disk := smallDisk(t)
	homeDir := filepath.Join(disk, "home")
	env, err := engine.Open(homeDir)
	if err != nil {
		t.Fatal(err)
	}
	src, data := randomTree(t, 1<<20)
	first := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	env.Close()

	// What the killed writer left: data without a filemark, up to ENOSPC.
	tapeDir := filepath.Join(homeDir, "vtl", engine.DefaultLibrary, "tapes", first.Figures.Tapes[0])
	marks, _ := filepath.Glob(filepath.Join(tapeDir, "*.mark"))
	f, err := os.Create(filepath.Join(tapeDir, fmt.Sprintf("%06d.data", len(marks)+1)))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	env, err = engine.Open(homeDir)
	if err != nil {
		t.Fatalf("opening the home on the disk the crashed job filled: %v", err)
	}
	defer env.Close()
	again := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	checkRestores(t, env, first.Figures.SavesetID, src, data)
	checkRestores(t, env, again.Figures.SavesetID, src, data)
	if _, files := usedOn(t, env, engine.DefaultLibrary); files != 4 {
		t.Errorf("%d tape files after two backups, want 4 (data and index of each)", files)
	}
}
