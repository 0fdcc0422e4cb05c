package library

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// A writer that died on a disk it filled left an unfinished tape file; the
// inventory, which every load, unload, export and full mark rewrites, cannot
// be written until that space comes back. The library takes it back itself.
func TestInventoryWriteReclaimsAFullDisk(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root on Linux (internal/tape TestReclaim runs everywhere)")
	}
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, 0) })
	l := newLibrary(t, func(c *Config) { c.Dir = filepath.Join(disk, "lib"); c.TapeSize = 64 << 20 })
	tapes, err := l.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	bc := tapes[0].Barcode
	f, err := os.Create(filepath.Join(filepath.Join(l.dir, tapesDir, bc), "000001.data"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	f.Close()
	if err := l.MarkFull(tapes[1].Barcode); err != nil {
		t.Fatalf("an inventory write on the disk a dead writer filled: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Join(l.dir, tapesDir, bc), "000001.data")); !os.IsNotExist(err) {
		t.Errorf("the unfinished tape file is still there: %v", err)
	}
}
