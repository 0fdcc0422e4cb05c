package tape_test

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// residentPages counts the pages of a file in the page cache (mincore).
func residentPages(t *testing.T, path string) (resident, total int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec)
}

// A finished tape file is not left in the page cache: a backup server
// writes far more than it reads back, and a cache full of its own tapes
// made every later write pay for reclaiming it (a third backup through an
// agent cost the server twice the CPU of the first).
func TestFinishedTapeFileLeavesThePageCache(t *testing.T) {
	var fs unix.Statfs_t
	if err := unix.Statfs(t.TempDir(), &fs); err == nil && fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary folder is tmpfs, whose pages are the file itself: nothing to drop")
	}
	tp, _ := newTape(t, 65536, 256<<20, tape.Options{})
	data := tapetest.Payload(3, 40<<20)
	tapetest.WriteFile(t, tp, "cache", data, 1<<20)
	resident, total := residentPages(t, tp.DataPath(1))
	if resident > total/10 {
		t.Fatalf("%d of %d pages of the finished tape file are still cached", resident, total)
	}
}
