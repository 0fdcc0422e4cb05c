package library

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// evict drops the file's clean pages from the page cache.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// BenchmarkTapesEvicted is BenchmarkTapes with the page cache of every
// label and filemark dropped before each listing (fadvise DONTNEED on
// those files only; inodes and folder entries stay cached): the listing
// of a server whose page cache a long backup has turned over.
func BenchmarkTapesEvicted(b *testing.B) {
	for _, n := range benchTapeCounts {
		b.Run(fmt.Sprintf("tapes=%d", n), func(b *testing.B) {
			l := benchLibrary(b, n)
			var files []string
			for _, pat := range []string{"*/label", "*/label.copy", "*/*.mark"} {
				m, err := filepath.Glob(filepath.Join(l.dir, tapesDir, pat))
				if err != nil {
					b.Fatal(err)
				}
				files = append(files, m...)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for _, p := range files {
					if err := evict(p); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if _, err := l.Tapes(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
