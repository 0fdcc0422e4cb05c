package walk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/kura-backup/kura/internal/index"
)

type result struct {
	items    []*Item
	warnings []Warning
}

func (r *result) paths() []string {
	var ps []string
	for _, it := range r.items {
		ps = append(ps, it.Entry.Path)
	}
	return ps
}

func (r *result) get(t testing.TB, rel string) *Item {
	t.Helper()
	for _, it := range r.items {
		if it.Entry.Path == rel {
			return it
		}
	}
	t.Fatalf("%q not emitted; got %q", rel, r.paths())
	return nil
}

func (r *result) has(rel string) bool {
	for _, it := range r.items {
		if it.Entry.Path == rel {
			return true
		}
	}
	return false
}

func walkAll(t testing.TB, roots []string, opts Options) *result {
	t.Helper()
	r := &result{}
	err := Walk(context.Background(), roots, opts,
		func(it *Item) error { r.items = append(r.items, it); return nil },
		func(w Warning) { r.warnings = append(r.warnings, w) })
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return r
}

// tempDir returns a fresh directory with its symlinks resolved, and its
// path as an index path (no leading "/").
func tempDir(t testing.TB) (abs, rel string) {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d, d[1:]
}

// ancestors returns the index paths of the directories down to rel.
func ancestors(rel string) []string {
	var out []string
	for i := range len(rel) {
		if rel[i] == '/' {
			out = append(out, rel[:i])
		}
	}
	return append(out, rel)
}

func mkfile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOrderIsIndexOrderOnRandomTrees(t *testing.T) {
	base, _ := tempDir(t)
	// Names chosen around '/' in byte order: ' ', '!', '-', '.' sort below
	// '/', so "a-b" < "a/..." only component-wise.
	names := []string{"a", "b", "a-b", "a.b", "a b", "a!", "a0", "aa", "A", "é", "~", "z"}
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp(base, "t")
		if err != nil {
			rt.Fatal(err)
		}
		want := ancestors(root[1:])
		var build func(dir string, depth int)
		build = func(dir string, depth int) {
			kids := rapid.SliceOfNDistinct(rapid.SampledFrom(names), 0, 6, rapid.ID[string]).Draw(rt, "kids")
			for _, k := range kids {
				p := filepath.Join(dir, k)
				want = append(want, p[1:])
				switch kind := rapid.IntRange(0, 3).Draw(rt, "kind"); {
				case kind == 0 && depth < 3:
					if err := os.Mkdir(p, 0o755); err != nil {
						rt.Fatal(err)
					}
					build(p, depth+1)
				case kind == 1:
					if err := os.Symlink("a", p); err != nil {
						rt.Fatal(err)
					}
				default:
					if err := os.WriteFile(p, nil, 0o644); err != nil {
						rt.Fatal(err)
					}
				}
			}
		}
		build(root, 0)
		r := walkAll(t, []string{root}, Options{})
		slices.SortFunc(want, index.Compare)
		if got := r.paths(); !slices.Equal(got, want) {
			rt.Fatalf("walk order\n%q\nwant (index.Compare)\n%q", got, want)
		}
		if len(r.warnings) != 0 {
			rt.Fatalf("warnings: %v", r.warnings)
		}
	})
}

func TestMultipleRootsAndAncestors(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/x/a/f1", "1")
	mkfile(t, d+"/x/b/f2", "2")
	mkfile(t, d+"/y/c", "3")
	mkfile(t, d+"/z", "not selected")
	roots := []string{d + "/y", d + "/x/a", d + "/x/a/f1" /* inside x/a */, d + "/y/" /* same */, d + "/x/b/../a" /* same */}
	r := walkAll(t, roots, Options{})

	want := append(ancestors(rel),
		rel+"/x", rel+"/y", // not z
		rel+"/x/a", // not b
		rel+"/x/a/f1",
		rel+"/y/c")
	if got := r.paths(); !slices.Equal(got, want) {
		t.Fatalf("paths\n%q\nwant\n%q", got, want)
	}
	if !slices.IsSortedFunc(r.paths(), index.Compare) {
		t.Errorf("not in index order")
	}
	// Ancestors carry their real attributes.
	for _, p := range ancestors(rel) {
		it := r.get(t, p)
		var st unix.Stat_t
		if err := unix.Lstat("/"+p, &st); err != nil {
			t.Fatal(err)
		}
		e := it.Entry
		if e.Type != index.TypeDir || e.Inode != st.Ino || e.Mode != st.Mode&0o7777 || e.UID != st.Uid || e.MTime != st.Mtim.Nano() || it.Abs != "/"+p {
			t.Errorf("ancestor %s = %+v, want the attributes of %+v", p, e, st)
		}
	}
}

func TestRootErrors(t *testing.T) {
	d, _ := tempDir(t)
	mkfile(t, d+"/f", "")
	called := false
	fn := func(*Item) error { called = true; return nil }
	for _, tc := range []struct {
		name  string
		roots []string
		opts  Options
	}{
		{"missing roots only", []string{d + "/missing", d + "/gone/sub"}, Options{}},
		{"roots missing or excluded", []string{d + "/missing", d + "/f"}, Options{Excludes: []string{"f"}}},
		{"an empty root", []string{d + "/f", ""}, Options{}},
		{"no roots", nil, Options{}},
		{"bad pattern", []string{d}, Options{Excludes: []string{"[a-"}}},
		{"relative path pattern", []string{d}, Options{Excludes: []string{"a/b"}}},
	} {
		if err := Walk(context.Background(), tc.roots, tc.opts, fn, nil); err == nil {
			t.Errorf("%s: Walk succeeded", tc.name)
		}
		if called {
			t.Fatalf("%s: emitted entries before failing", tc.name)
		}
	}
	err := Walk(context.Background(), []string{d + "/missing"}, Options{}, fn, nil)
	if !errors.Is(err, ErrNoRoots) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), d+"/missing") {
		t.Errorf("missing root error = %v, want ErrNoRoots and ErrNotExist naming the path", err)
	}
}

// TestMissingRootWarns: a missing root among others is a warning naming it,
// and the other roots are walked in full (as tar and rsync do).
func TestMissingRootWarns(t *testing.T) {
	d, dr := tempDir(t)
	mkfile(t, d+"/a/f", "x")
	mkfile(t, d+"/b/g", "y")
	var got []string
	var warns []Warning
	err := Walk(context.Background(), []string{d + "/a", d + "/missing", d + "/b", d + "/gone/sub"}, Options{},
		func(it *Item) error { got = append(got, it.Entry.Path); return nil },
		func(w Warning) { warns = append(warns, w) })
	if err != nil {
		t.Fatalf("Walk with a missing root: %v", err)
	}
	slices.Sort(got)
	if want := append(ancestors(dr+"/a"), dr+"/a/f", dr+"/b", dr+"/b/g"); !slices.Equal(got, want) {
		t.Errorf("walked %q, want %q", got, want)
	}
	if len(warns) != 2 || !errors.Is(warns[0], os.ErrNotExist) || !strings.HasPrefix(warns[0].Path, d+"/missing") ||
		!errors.Is(warns[1], os.ErrNotExist) || !strings.HasPrefix(warns[1].Path, d+"/gone") {
		t.Errorf("warnings %v, want one ErrNotExist for each missing root", warns)
	}
}

func TestValidatePattern(t *testing.T) {
	for p, ok := range map[string]bool{
		"*.tmp": true, ".cache": true, "[abc]*": true, "/home/*/.cache": true, "/var/tmp/**": true, "/**": true,
		"": false, "[": false, "a/b": false, "/a/": false, "/a//b": false, "/a/../b": false,
		"**": false, "/a/**/b": false, "/a**": false, "/[/**": false,
	} {
		if err := ValidatePattern(p); (err == nil) != ok {
			t.Errorf("ValidatePattern(%q) = %v, want ok=%t", p, err, ok)
		}
	}
}

func TestExcludes(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/a.tmp", "")
	mkfile(t, d+"/keep.txt", "")
	mkfile(t, d+"/sub/x.tmp", "")       // base-name pattern, any depth
	mkfile(t, d+"/sub/.cache/c", "")    // excluded directory: subtree gone
	mkfile(t, d+"/sub/deep/.cache", "") // also a file named .cache
	mkfile(t, d+"/sub/deep/ok", "")
	mkfile(t, d+"/logs/old-1", "") // path pattern
	mkfile(t, d+"/logs/new", "")
	mkfile(t, d+"/spool/q/1", "") // "/**": spool kept, contents gone
	r := walkAll(t, []string{d}, Options{Excludes: []string{"*.tmp", ".cache", d + "/logs/old-*", d + "/spool/**"}})
	want := append(ancestors(rel),
		rel+"/keep.txt", rel+"/logs", rel+"/spool", rel+"/sub",
		rel+"/logs/new",
		rel+"/sub/deep",
		rel+"/sub/deep/ok")
	if got := r.paths(); !slices.Equal(got, want) {
		t.Fatalf("paths\n%q\nwant\n%q", got, want)
	}

	// A root excluded by a pattern is a warning, not a silent gap.
	r = walkAll(t, []string{d + "/sub/x.tmp", d + "/keep.txt"}, Options{Excludes: []string{"*.tmp"}})
	if r.has(rel+"/sub") || !r.has(rel+"/keep.txt") {
		t.Errorf("paths %q", r.paths())
	}
	if len(r.warnings) != 1 || r.warnings[0].Op != "skip" || !errors.Is(r.warnings[0], ErrExcluded) {
		t.Errorf("warnings %v, want one root excluded", r.warnings)
	}
}

func TestSkipPaths(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/data/f", "")
	mkfile(t, d+"/kura/home/catalog.db", "")
	mkfile(t, d+"/library/tape1", "")
	r := walkAll(t, []string{d}, Options{SkipPaths: []string{d + "/kura/home", d + "/library/"}})
	want := append(ancestors(rel), rel+"/data", rel+"/kura", rel+"/data/f")
	if got := r.paths(); !slices.Equal(got, want) {
		t.Fatalf("paths\n%q\nwant\n%q", got, want)
	}
	if len(r.warnings) != 0 {
		t.Errorf("warnings %v", r.warnings)
	}
	// A skip path given through a symlink is skipped as named and where it
	// really is.
	if err := os.Symlink(d+"/data", d+"/link-to-data"); err != nil {
		t.Fatal(err)
	}
	r = walkAll(t, []string{d}, Options{SkipPaths: []string{d + "/link-to-data", d + "/kura", d + "/library"}})
	want = ancestors(rel)
	if got := r.paths(); !slices.Equal(got, want) {
		t.Errorf("symlinked skip path: paths\n%q\nwant\n%q", got, want)
	}
	// A root inside a skip path is dropped with a warning; with no other
	// root there is nothing to walk, which is an error.
	r = &result{}
	err := Walk(context.Background(), []string{d + "/library/tape1"}, Options{SkipPaths: []string{d + "/library"}},
		func(it *Item) error { r.items = append(r.items, it); return nil },
		func(w Warning) { r.warnings = append(r.warnings, w) })
	if !errors.Is(err, ErrNoRoots) || !errors.Is(err, ErrExcluded) || len(r.items) != 0 || len(r.warnings) != 1 || !errors.Is(r.warnings[0], ErrExcluded) {
		t.Errorf("err %v items %q warnings %v", err, r.paths(), r.warnings)
	}
}

func TestHardLinks(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/b/first", "content")
	mkfile(t, d+"/single", "x")
	if err := os.Link(d+"/b/first", d+"/a"); err != nil { // "a" is emitted before "b/first"
		t.Fatal(err)
	}
	if err := os.Link(d+"/b/first", d+"/b/second"); err != nil {
		t.Fatal(err)
	}
	r := walkAll(t, []string{d}, Options{})
	a, first, second := r.get(t, rel+"/a").Entry, r.get(t, rel+"/b/first").Entry, r.get(t, rel+"/b/second").Entry
	if a.Type != index.TypeFile || a.Size != 7 {
		t.Errorf("first name seen = %+v, want a regular file of 7 bytes", a)
	}
	for _, e := range []index.Entry{first, second} {
		if e.Type != index.TypeHardlink || e.Link != rel+"/a" || e.Size != 0 || e.Inode != a.Inode {
			t.Errorf("%s = %+v, want a hard link to %s", e.Path, e, rel+"/a")
		}
	}
	if s := r.get(t, rel+"/single").Entry; s.Type != index.TypeFile {
		t.Errorf("single = %v", s.Type)
	}
	if len(r.warnings) != 0 {
		t.Errorf("warnings %v", r.warnings)
	}
}

func TestSymlinksAreNotFollowed(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/dir/f", "")
	for link, target := range map[string]string{"a": "b", "b": "a", "dir/loop": "..", "dir/self": ".", "abs": "/"} {
		if err := os.Symlink(target, d+"/"+link); err != nil {
			t.Fatal(err)
		}
	}
	r := walkAll(t, []string{d, d + "/dir/loop" /* inside d */}, Options{})
	want := append(ancestors(rel), rel+"/a", rel+"/abs", rel+"/b", rel+"/dir", rel+"/dir/f", rel+"/dir/loop", rel+"/dir/self")
	if got := r.paths(); !slices.Equal(got, want) {
		t.Fatalf("paths\n%q\nwant\n%q", got, want)
	}
	for link, target := range map[string]string{"a": "b", "b": "a", "dir/loop": "..", "abs": "/"} {
		if e := r.get(t, rel+"/"+link).Entry; e.Type != index.TypeSymlink || e.Link != target {
			t.Errorf("%s = %v -> %q, want symlink -> %q", link, e.Type, e.Link, target)
		}
	}
	// A root that is a symlink is stored as one.
	r = walkAll(t, []string{d + "/dir/loop"}, Options{})
	if e := r.get(t, rel+"/dir/loop").Entry; e.Type != index.TypeSymlink || len(r.items) != len(ancestors(rel))+2 {
		t.Errorf("symlink root: %q", r.paths())
	}
}

func TestSpecialFiles(t *testing.T) {
	d, rel := tempDir(t)
	if err := unix.Mkfifo(d+"/fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", d+"/sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mkfile(t, d+"/z", "")
	r := walkAll(t, []string{d, "/dev/null"}, Options{}) // a FIFO would block a reader: never opened
	if e := r.get(t, rel+"/fifo").Entry; e.Type != index.TypeFifo || e.Mode != 0o600 {
		t.Errorf("fifo = %+v", e)
	}
	if r.has(rel + "/sock") {
		t.Errorf("socket stored")
	}
	if len(r.warnings) != 1 || r.warnings[0].Path != d+"/sock" || r.warnings[0].Op != "skip" || !errors.Is(r.warnings[0], ErrSocket) {
		t.Errorf("warnings %v, want socket ignored", r.warnings)
	} else if got, want := r.warnings[0].Error(), d+"/sock: skip: socket ignored"; got != want {
		t.Errorf("warning text %q, want %q", got, want)
	}
	if e := r.get(t, "dev/null").Entry; e.Type != index.TypeChar || e.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("/dev/null = %v rdev %#x", e.Type, e.Rdev)
	}
	if !r.has(rel + "/z") {
		t.Errorf("walk stopped after the socket")
	}
}

func TestEntryAttributes(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/f", "hello")
	if err := os.Chmod(d+"/f", 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(d+"/f", 0o4755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d+"/tmp", 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(d+"/tmp", 0o1777); err != nil {
		t.Fatal(err)
	}
	r := walkAll(t, []string{d}, Options{})
	var st unix.Stat_t
	if err := unix.Lstat(d+"/f", &st); err != nil {
		t.Fatal(err)
	}
	f := r.get(t, rel+"/f")
	want := index.Entry{Path: rel + "/f", Type: index.TypeFile, Mode: 0o4755, UID: st.Uid, GID: st.Gid, Size: 5,
		MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Inode: st.Ino, Dev: uint64(st.Dev)}
	f.Entry.Xattrs = nil // checked in TestXattrs; security labels may exist here
	if !entryEqual(f.Entry, want) || f.Abs != d+"/f" {
		t.Errorf("entry\n%+v\nwant\n%+v", f.Entry, want)
	}
	if m := r.get(t, rel+"/tmp").Entry.Mode; m != 0o1777 {
		t.Errorf("sticky dir mode %#o, want 01777", m)
	}
}

func entryEqual(a, b index.Entry) bool {
	return a.Path == b.Path && a.Type == b.Type && a.Mode == b.Mode && a.UID == b.UID && a.GID == b.GID &&
		a.Size == b.Size && a.MTime == b.MTime && a.CTime == b.CTime && a.Inode == b.Inode && a.Dev == b.Dev &&
		a.Rdev == b.Rdev && a.Link == b.Link && len(a.Xattrs) == len(b.Xattrs)
}

func TestXattrs(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/f", "")
	if err := unix.Setxattr(d+"/f", "user.kura.test", []byte("v\x00bin"), 0); err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			t.Skipf("the file system of %s has no user xattrs", d)
		}
		t.Fatal(err)
	}
	r := walkAll(t, []string{d}, Options{})
	if got := r.get(t, rel+"/f").Entry.Xattrs["user.kura.test"]; got != "v\x00bin" {
		t.Errorf("xattr = %q, want %q", got, "v\x00bin")
	}
	if len(r.warnings) != 0 {
		t.Errorf("warnings %v", r.warnings)
	}
}

func TestVanishedPathsAreWarnings(t *testing.T) {
	// As root permission bits do not stop reads, so the unreadable case is
	// made real by removing paths during the walk.
	d, rel := tempDir(t)
	mkfile(t, d+"/a", "")
	mkfile(t, d+"/b", "")       // removed after readdir, before lstat
	mkfile(t, d+"/gone/x", "")  // removed after being emitted, before being entered
	mkfile(t, d+"/later/y", "") // the walk goes on
	r := &result{}
	err := Walk(context.Background(), []string{d}, Options{}, func(it *Item) error {
		r.items = append(r.items, it)
		switch it.Entry.Path {
		case rel + "/a":
			return os.Remove(d + "/b")
		case rel + "/gone":
			return os.RemoveAll(d + "/gone")
		}
		return nil
	}, func(w Warning) { r.warnings = append(r.warnings, w) })
	if err != nil {
		t.Fatal(err)
	}
	want := append(ancestors(rel), rel+"/a", rel+"/gone", rel+"/later", rel+"/later/y")
	if got := r.paths(); !slices.Equal(got, want) {
		t.Fatalf("paths\n%q\nwant\n%q", got, want)
	}
	if len(r.warnings) != 2 {
		t.Fatalf("warnings %v, want 2", r.warnings)
	}
	for i, w := range []Warning{{d + "/b", "lstat", unix.ENOENT}, {d + "/gone", "open", unix.ENOENT}} {
		if got := r.warnings[i]; got.Path != w.Path || got.Op != w.Op || !errors.Is(got, w.Err) {
			t.Errorf("warning %d = %v, want %v", i, got, w)
		}
	}

	if os.Geteuid() != 0 { // also the plain permission case when it can be made
		mkfile(t, d+"/locked/secret", "")
		if err := os.Chmod(d+"/locked", 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(d+"/locked", 0o755)
		r := walkAll(t, []string{d}, Options{})
		if !r.has(rel+"/locked") || r.has(rel+"/locked/secret") || len(r.warnings) != 1 || !errors.Is(r.warnings[0], os.ErrPermission) {
			t.Errorf("unreadable dir: paths %q warnings %v", r.paths(), r.warnings)
		}
	}
}

func TestNonUTF8Name(t *testing.T) {
	d, rel := tempDir(t)
	name := "caf\xe9" // Latin-1
	mkfile(t, d+"/"+name+"/f", "")
	r := walkAll(t, []string{d}, Options{})
	want := append(ancestors(rel), rel+"/"+name, rel+"/"+name+"/f")
	if got := r.paths(); !slices.Equal(got, want) {
		t.Fatalf("paths %q, want %q", got, want)
	}
	if len(r.warnings) != 1 || r.warnings[0].Op != "name" || r.warnings[0].Path != d+"/"+name || !errors.Is(r.warnings[0], ErrNotUTF8) {
		t.Errorf("warnings %v", r.warnings)
	}
}

func TestPathLongerThanPathMax(t *testing.T) {
	d, rel := tempDir(t)
	comp := strings.Repeat("d", 250)
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	deep := d
	for len(deep) < 5000 {
		if err := unix.Mkdirat(fd, comp, 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd, deep = nfd, deep+"/"+comp
	}
	ffd, err := unix.Openat(fd, "file", unix.O_WRONLY|unix.O_CREAT, 0o644)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(ffd, []byte("deep"))
	unix.Close(ffd)

	var content string
	r := &result{}
	err = Walk(context.Background(), []string{d}, Options{}, func(it *Item) error {
		r.items = append(r.items, it)
		if strings.HasSuffix(it.Abs, "/file") {
			f, err := it.Open()
			if err != nil {
				return err
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			content = string(b)
			return err
		}
		return nil
	}, func(w Warning) { r.warnings = append(r.warnings, w) })
	if err != nil {
		t.Fatal(err)
	}
	last := r.items[len(r.items)-1]
	if last.Entry.Path != deep[1:]+"/file" || len(last.Abs) <= unix.PathMax || last.Entry.Size != 4 {
		t.Errorf("last entry %q (%d bytes), want the deep file", last.Entry.Path, len(last.Abs))
	}
	if content != "deep" {
		t.Errorf("content through Item.Open = %q", content)
	}
	if len(r.warnings) != 0 {
		t.Errorf("warnings %v", r.warnings)
	}
	if !strings.HasPrefix(last.Entry.Path, rel+"/") {
		t.Errorf("path %q outside %q", last.Entry.Path, rel)
	}
}

func TestOneFileSystem(t *testing.T) {
	// /dev/pts is a devpts mount inside /dev on Linux, and holds ptmx.
	var dev, pts unix.Stat_t
	if unix.Lstat("/dev", &dev) != nil || unix.Lstat("/dev/pts/ptmx", &pts) != nil || dev.Dev == pts.Dev {
		t.Skip("no /dev/pts mount inside /dev here")
	}
	all := walkAll(t, []string{"/dev"}, Options{})
	one := walkAll(t, []string{"/dev"}, Options{OneFileSystem: true})
	if !all.has("dev/pts/ptmx") {
		t.Errorf("without OneFileSystem: dev/pts/ptmx missing")
	}
	if !one.has("dev/pts") || one.has("dev/pts/ptmx") {
		t.Errorf("OneFileSystem: want the mount point dev/pts, not its contents")
	}
	for _, it := range one.items {
		if it.Entry.Dev != uint64(dev.Dev) && it.Entry.Type == index.TypeDir {
			var parent unix.Stat_t
			if unix.Lstat(filepath.Dir(it.Abs), &parent) == nil && parent.Dev != dev.Dev {
				t.Errorf("OneFileSystem entered %s", filepath.Dir(it.Abs))
			}
		}
	}
}

func TestCancelAndCallbackErrors(t *testing.T) {
	d, rel := tempDir(t)
	for _, p := range []string{"a/1", "a/2", "b/1", "c/1"} {
		mkfile(t, d+"/"+p, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	err := Walk(ctx, []string{d}, Options{}, func(it *Item) error {
		n++
		if it.Entry.Path == rel+"/a" {
			cancel()
		}
		return nil
	}, nil)
	if !errors.Is(err, context.Canceled) || n != len(ancestors(rel))+1 {
		t.Errorf("cancel: err %v after %d items, want Canceled right after %s", err, n, rel+"/a")
	}

	stop := errors.New("stop")
	err = Walk(context.Background(), []string{d}, Options{}, func(it *Item) error {
		if it.Entry.Path == rel+"/b" {
			return stop
		}
		return nil
	}, nil)
	if err != stop {
		t.Errorf("callback error: got %v", err)
	}

	var got []string
	err = Walk(context.Background(), []string{d}, Options{}, func(it *Item) error {
		got = append(got, it.Entry.Path)
		if it.Entry.Path == rel+"/a" {
			return SkipDir
		}
		return nil
	}, nil)
	want := append(ancestors(rel), rel+"/a", rel+"/b", rel+"/c", rel+"/b/1", rel+"/c/1")
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SkipDir: %v %q, want %q", err, got, want)
	}
}

func TestItemOpen(t *testing.T) {
	d, rel := tempDir(t)
	mkfile(t, d+"/f", "one")
	mkfile(t, d+"/g", "two")
	r := walkAll(t, []string{d}, Options{})
	// After the walk, Open falls back to the absolute path.
	f, err := r.get(t, rel+"/f").Open()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "one" {
		t.Errorf("read %q", b)
	}
	// A path that now holds another file is refused.
	if err := os.Rename(d+"/g", d+"/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.get(t, rel+"/f").Open(); !errors.Is(err, ErrReplaced) {
		t.Errorf("Open of a replaced file: %v, want ErrReplaced", err)
	}
	if _, err := r.get(t, rel).Open(); err == nil {
		t.Errorf("Open of a directory succeeded")
	}
}

func BenchmarkWalk100k(b *testing.B) {
	d, _ := tempDir(b)
	for i := range 100 {
		dir := filepath.Join(d, "dir"+strings.Repeat("x", i%7), string(rune('a'+i%26))+"-"+string(rune('0'+i/26)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 1000 {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("file-%s%c%04d", strings.Repeat("0", j%5), 'a'+j%26, j)))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
	n := 0
	for b.Loop() {
		n = 0
		err := Walk(context.Background(), []string{d}, Options{Excludes: []string{"*.tmp"}}, func(*Item) error { n++; return nil }, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n < 100_000 {
			b.Fatalf("walked %d entries", n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// A walk leaves the access times of the folders it reads as they were
// (O_NOATIME): with an atime older than the mtime, relatime would
// otherwise stamp every folder a backup lists.
func TestWalkLeavesFolderAtimes(t *testing.T) {
	d, _ := tempDir(t)
	mkfile(t, d+"/top/sub/f", "1")
	old := unix.NsecToTimespec(946684800 * 1e9) // 2000-01-01
	for _, dir := range []string{d + "/top", d + "/top/sub"} {
		// atime far in the past, mtime now: reading it would update the atime.
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, dir, []unix.Timespec{old, {Nsec: unix.UTIME_NOW}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	walkAll(t, []string{d + "/top"}, Options{})
	for _, dir := range []string{d + "/top", d + "/top/sub"} {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			t.Fatal(err)
		}
		if st.Atim != old {
			t.Errorf("%s: atime %v after the walk; it was %v", dir, st.Atim, old)
		}
	}
}
