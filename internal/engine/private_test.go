package engine_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// assertPrivate walks root and fails for every file or folder that its group
// or others may read, write or enter.
func assertPrivate(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n++
		if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %04o: others may read it", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("only %d entries under %s", n, root)
	}
}

// Everything under a Kura home and under a library folder — a library
// created with its own --dir anywhere included — is created owner-only,
// whatever the umask: catalog (and its WAL), index cache, run locks,
// inventory, labels, tape files, checksums and filemarks.
func TestHomeAndLibraryArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("secret"), 0o644))
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	libDir := filepath.Join(t.TempDir(), "elsewhere", "offsite")
	if _, err := env.CreateLibrary(library.Config{Name: "offsite", Dir: libDir, Slots: 2}); err != nil {
		t.Fatal(err)
	}
	backup(t, env, engine.BackupOptions{Paths: []string{src}, Library: "offsite"})
	if _, err := env.BackupCatalog(context.Background(), engine.CatalogBackupOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"catalog.db", "catalog.db-wal", "index/1.idx", "vtl/default/inventory.json", "vtl/default/tapes/KUR001/000001.data"} {
		if _, err := os.Stat(filepath.Join(env.Home, p)); err != nil {
			t.Errorf("expected %s in the home: %v", p, err)
		}
	}
	assertPrivate(t, env.Home)
	assertPrivate(t, libDir)
	if w := env.ExposedFolders(); len(w) != 0 {
		t.Errorf("warnings for private folders: %q", w)
	}
}

// A home or library folder that others can read is reported at start-up.
func TestExposedFoldersAreReported(t *testing.T) {
	env := newEnv(t)
	libDir := filepath.Join(t.TempDir(), "lib")
	if _, err := env.CreateLibrary(library.Config{Name: "shared", Dir: libDir, Slots: 1}); err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(env.Home, 0o755))
	must(t, os.Chmod(libDir, 0o750))
	w := env.ExposedFolders()
	if len(w) != 2 || !strings.Contains(w[0], env.Home) || !strings.Contains(w[0], "0755") ||
		!strings.Contains(w[1], "library shared") || !strings.Contains(w[1], "chmod 700 "+libDir) {
		t.Fatalf("warnings %q", w)
	}
}
