package library

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// benchLibrary makes a folder library of n tapes in TMPDIR: every tenth
// tape holds three small tape files (4 KiB each), the rest are blank, as
// in a library that has been in use for a while.
func benchLibrary(b *testing.B, n int) *Library {
	b.Helper()
	l, err := Create(Config{
		Name: "bench", Dir: filepath.Join(b.TempDir(), "vtl"),
		Slots: n, Drives: 1, MailSlots: 1,
		TapeSize: MinTapeSize, BlockSize: 4 << 10, BufferSize: 64 << 10,
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= n; i += 10 {
		bc := l.barcode(i)
		for range 3 {
			writeTo(b, l, bc, 4<<10)
		}
	}
	return l
}

var benchTapeCounts = []int{50, 500}

// BenchmarkTapes measures listing every tape of a folder library
// (Library.Tapes): what `kura tape list`, a metrics scrape and each look
// at the server's job queue pay per library.
func BenchmarkTapes(b *testing.B) {
	for _, n := range benchTapeCounts {
		b.Run(fmt.Sprintf("tapes=%d", n), func(b *testing.B) {
			l := benchLibrary(b, n)
			b.ReportAllocs()
			for b.Loop() {
				ts, err := l.Tapes()
				if err != nil || len(ts) != n {
					b.Fatalf("Tapes: %d, %v", len(ts), err)
				}
			}
		})
	}
}

// BenchmarkLoadWritable measures what a backup pays to get its tape:
// acquire a drive, choose and load the best writable tape (every tape
// looked at under the library lock), release the drive.
func BenchmarkLoadWritable(b *testing.B) {
	for _, n := range benchTapeCounts {
		b.Run(fmt.Sprintf("tapes=%d", n), func(b *testing.B) {
			l := benchLibrary(b, n)
			b.ReportAllocs()
			for b.Loop() {
				d, err := l.Acquire(context.Background(), 1)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := d.LoadWritable(); err != nil {
					b.Fatal(err)
				}
				if err := d.Release(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
