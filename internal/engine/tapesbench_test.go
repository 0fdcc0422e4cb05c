package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// BenchmarkEnvTapes measures what `kura tape list`, the console's tape
// pages and a metrics scrape pay per library (Env.Tapes: the library's
// tapes and, for each, its live savesets from the catalog), next to the
// library's listing alone and the server queue's count of writable tapes
// (Env.WritableTapes, once per look at the queue while backups wait).
// The library has 500 tapes; 20 backups wrote to the first of them.
func BenchmarkEnvTapes(b *testing.B) {
	const tapes, backups = 500, 20
	dir := b.TempDir()
	env, err := engine.Open(filepath.Join(dir, "home"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	lib, err := env.CreateLibrary(library.Config{Name: "big", Slots: tapes, Drives: 1,
		TapeSize: library.MinTapeSize, BlockSize: 4 << 10, BufferSize: 64 << 10})
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range backups {
		if err := os.WriteFile(filepath.Join(src, "f"), []byte(fmt.Sprint(i)), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := env.Backup(context.Background(), engine.BackupOptions{Library: "big", Paths: []string{src}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Env.Tapes", func(b *testing.B) {
		for b.Loop() {
			if ts, err := env.Tapes("big"); err != nil || len(ts) != tapes {
				b.Fatal(len(ts), err)
			}
		}
	})
	b.Run("Library.Tapes", func(b *testing.B) {
		for b.Loop() {
			if _, err := lib.Tapes(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Env.WritableTapes", func(b *testing.B) {
		for b.Loop() {
			if _, err := env.WritableTapes(lib, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
