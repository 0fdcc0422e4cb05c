package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
)

// deepDepth is the depth of the nested tree the deep-tree tests build:
// far past PATH_MAX (each level adds two bytes to the path), and deep
// enough that per-entry work proportional to the depth (walking every
// component from the target for each entry, as a restore through os.Root
// paths did) takes minutes, while a linear restore takes a second or two.
const deepDepth = 10_000

// hasFile says which levels of a deep tree hold a file: every 100th and
// the deepest (a file at every level would double the test's time, spent
// on paths, not on depth).
func hasFile(level, depth int) bool { return level%100 == 0 || level == depth-1 }

// makeDeepTree builds depth nested directories "d" under root, some
// holding a file "f" whose content is its level (hasFile), with *at calls
// (the deepest paths are far longer than PATH_MAX).
func makeDeepTree(t testing.TB, root string, depth int) {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		fd = next
		if !hasFile(i, depth) {
			continue
		}
		ffd, err := unix.Openat(fd, "f", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o640)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		if _, err := unix.Write(ffd, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		unix.Close(ffd)
	}
	unix.Close(fd)
}

// checkDeepTree checks that root holds the tree makeDeepTree built: every
// level, every file with its content and mode, nothing deeper.
func checkDeepTree(t testing.TB, root string, depth int) {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { unix.Close(fd) }()
	buf := make([]byte, 64)
	for i := range depth {
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			t.Fatalf("restored tree stops at level %d: %v", i, err)
		}
		unix.Close(fd)
		fd = next
		if !hasFile(i, depth) {
			continue
		}
		ffd, err := unix.Openat(fd, "f", unix.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			t.Fatalf("level %d: file: %v", i, err)
		}
		n, _ := unix.Read(ffd, buf)
		var st unix.Stat_t
		unix.Fstat(ffd, &st)
		unix.Close(ffd)
		if got := string(buf[:max(n, 0)]); got != fmt.Sprint(i) || st.Mode&0o777 != 0o640 {
			t.Fatalf("level %d: file holds %q mode %o, want %q mode 640", i, got, st.Mode&0o777, fmt.Sprint(i))
		}
	}
	if err := unix.Faccessat(fd, "d", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("restored tree deeper than %d levels (%v)", depth, err)
	}
}

// A tree 10,000 directories deep (paths of 20 KB, five times PATH_MAX)
// backs up, restores whole with every file and mode, and lists.
func TestDeepTreeRoundTrip(t *testing.T) {
	env := newEnv(t)
	base := t.TempDir()
	src := filepath.Join(base, "src")
	must(t, os.Mkdir(src, 0o755))
	makeDeepTree(t, src, deepDepth)
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	if want := int64(deepDepth + deepDepth/100); res.Figures.Files < want {
		t.Fatalf("backup stored %d entries, want at least %d", res.Figures.Files, want)
	}
	to := filepath.Join(base, "to")
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	checkDeepTree(t, restored(to, src), deepDepth)

	// The deepest directory lists with its file.
	deepest := strings.TrimPrefix(src, "/") + strings.Repeat("/d", deepDepth)
	list, err := env.List(res.Figures.SavesetID, deepest)
	must(t, err)
	if len(list) != 1 || list[0].Path != deepest+"/f" || list[0].Type != index.TypeFile {
		t.Fatalf("listing of the deepest directory: %v", list)
	}
}

// 100,000 files in one folder restore, each with its content. (The
// saveset is made directly, so that the test spends its time in the
// restore, not in making 100,000 source files.)
func TestWideFolderRestore(t *testing.T) {
	const n = 100_000
	env := newEnv(t)
	now := time.Now().UnixNano()
	es := make([]crafted, 0, n+1)
	es = append(es, crafted{Entry: index.Entry{Path: "wide", Type: index.TypeDir, Mode: 0o755, MTime: now}})
	for i := range n {
		es = append(es, crafted{Entry: index.Entry{Path: fmt.Sprintf("wide/f%06d", i), Type: index.TypeFile, Mode: 0o644, MTime: now},
			content: fmt.Sprint(i)})
	}
	sortCrafted(es)
	id := craftSaveset(t, env, es)
	to := filepath.Join(t.TempDir(), "to")
	restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	ents, err := os.ReadDir(filepath.Join(to, "wide"))
	must(t, err)
	if len(ents) != n {
		t.Fatalf("restored %d files, want %d", len(ents), n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		b, err := os.ReadFile(filepath.Join(to, "wide", fmt.Sprintf("f%06d", i)))
		if err != nil || string(b) != fmt.Sprint(i) {
			t.Fatalf("file %d: %q %v", i, b, err)
		}
	}
	if l, err := env.List(id, "wide"); err != nil || len(l) != n {
		t.Fatalf("ls of the folder: %d entries, %v", len(l), err)
	}
}

// A name the file system refuses (longer than NAME_MAX) costs that entry
// and what lies below it, named in a warning; the rest restores.
func TestRestoreNameTooLongIsAWarning(t *testing.T) {
	env := newEnv(t)
	to := filepath.Join(t.TempDir(), "to")
	now := time.Now().UnixNano()
	long := strings.Repeat("n", 300)
	id := craftSaveset(t, env, []crafted{
		{Entry: index.Entry{Path: "a", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "a"},
		{Entry: index.Entry{Path: long, Type: index.TypeDir, Mode: 0o755, MTime: now}},
		{Entry: index.Entry{Path: "z", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "z"},
		{Entry: index.Entry{Path: long + "/x", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "x"},
	})
	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if !errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("restore: %v; want it to finish with warnings", err)
	}
	for _, p := range []string{long, long + "/x"} {
		found := false
		for _, w := range res.Warnings {
			if strings.HasPrefix(w, "/"+p+": ") && strings.Contains(w, "file name too long") {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning naming %.20s… as too long: %q", p, res.Warnings)
		}
	}
	for _, f := range []string{"a", "z"} {
		if b, err := os.ReadFile(filepath.Join(to, f)); err != nil || string(b) != f {
			t.Errorf("%s: %q %v", f, b, err)
		}
	}
}

// BenchmarkRestoreDepth restores nested trees of growing depth: the time
// per level should stay flat.
func BenchmarkRestoreDepth(b *testing.B) {
	for _, depth := range []int{1000, 4000, 16000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			env, err := engine.Open(filepath.Join(b.TempDir(), "home"))
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close()
			src := filepath.Join(b.TempDir(), "src")
			if err := os.Mkdir(src, 0o755); err != nil {
				b.Fatal(err)
			}
			makeDeepTree(b, src, depth)
			res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				to := filepath.Join(b.TempDir(), fmt.Sprint(i))
				if _, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/level")
		})
	}
}
