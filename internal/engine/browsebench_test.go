package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
)

// bigSaveset backs up one file and puts in the place of its cached index
// an index of 1,000,101 entries: data, 100 folders data/d000… and 10,000
// files in each, written directly (not by backing up a million files).
// The saveset then reads as a saveset of a million files.
func bigSaveset(b *testing.B, dirs, files int) (*engine.Env, int64) {
	b.Helper()
	dir := b.TempDir()
	env, err := engine.Open(filepath.Join(dir, "home"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}})
	if err != nil {
		b.Fatal(err)
	}
	id := res.Figures.SavesetID
	p := filepath.Join(home.IndexDir(env.Home), fmt.Sprintf("%d.idx", id))
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := index.NewWriter(bw, []byte(fmt.Sprintf(`{"saveset":%d}`, id)))
	var off int64
	rng := rand.New(rand.NewPCG(1, 2))
	add := func(e *index.Entry) {
		e.Offset, e.UID, e.GID, e.MTime = off, 1000, 1000, 1_767_225_600e9+off
		off += 512 + (e.Size+511)&^511
		if err := w.Add(e); err != nil {
			b.Fatal(err)
		}
	}
	add(&index.Entry{Path: "data", Type: index.TypeDir, Mode: 0o755})
	for d := range dirs {
		add(&index.Entry{Path: fmt.Sprintf("data/d%03d", d), Type: index.TypeDir, Mode: 0o755})
	}
	for d := range dirs {
		for i := range files {
			e := &index.Entry{Path: fmt.Sprintf("data/d%03d/f%06d.txt", d, d*files+i), Type: index.TypeFile, Mode: 0o644, Size: 9728 + int64(i%1024)}
			for k := range e.Digest { // random, as real digests are: the index is its real size
				e.Digest[k] = byte(rng.Uint32())
			}
			add(e)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("saveset %d: an index of %d entries, %d bytes", id, w.Len(), w.Size())
	return env, id
}

// BenchmarkBrowse1M is the web console's browse view (and kura ls) on a
// saveset of 1,000,000 files in 100 folders of 10,000: ListPage as
// Service.Entries calls it, a page of 1,000 entries. open is opening the
// saveset (its top folder; the first page of a listing checks every block
// of the cached index), folder the first page of a folder of 10,000
// (checked the same way), next a later page of it (resumed after the
// page before, as the console's next-page link does). Nothing is cached
// in between: each iteration opens the index file anew.
func BenchmarkBrowse1M(b *testing.B) {
	const page = 1000
	env, id := bigSaveset(b, 100, 10_000)
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			p, err := env.ListPage(id, "/", "", page, nil)
			if err != nil || len(p.Entries) != 1 {
				b.Fatalf("the top: %v, %v", p, err)
			}
		}
	})
	b.Run("folder", func(b *testing.B) {
		for b.Loop() {
			p, err := env.ListPage(id, "/data/d050", "", page, nil)
			if err != nil || len(p.Entries) != page || p.Next == "" {
				b.Fatalf("data/d050: %v", err)
			}
		}
	})
	b.Run("next", func(b *testing.B) {
		after := "data/d050/f504999.txt" // the last of the folder's fifth page
		for b.Loop() {
			p, err := env.ListPage(id, "/data/d050", after, page, nil)
			if err != nil || len(p.Entries) != page || p.Entries[0].Path != "data/d050/f505000.txt" {
				b.Fatalf("data/d050 after %s: %v", after, err)
			}
		}
	})
}

// BenchmarkFind1M is the console's search by name on the saveset of
// BenchmarkBrowse1M (1,000,101 entries): FindPage as Service.Find calls
// it, newest first, a page of 50. rare is a name that one file holds
// (the whole index is read to find it), glob a glob of it, common the
// first page of a name that 10,000 files hold.
func BenchmarkFind1M(b *testing.B) {
	const page = 50
	env, _ := bigSaveset(b, 100, 10_000)
	for _, c := range []struct {
		name, pattern string
		want          int
	}{
		{"rare", "f504999.txt", 1},
		{"glob", "f50499?.txt", 10},
		{"common", "d050/", page},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				p, err := env.FindPage(engine.FindSpec{Pattern: c.pattern, NewestFirst: true}, engine.FindCursor{}, page, nil)
				if err != nil || len(p.Matches) != c.want {
					b.Fatalf("find %s: %d matches, %v", c.pattern, len(p.Matches), err)
				}
			}
		})
	}
}
