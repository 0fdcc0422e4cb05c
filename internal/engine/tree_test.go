package engine_test

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// node is what a user checks of one path after a restore: type, content,
// mode, mtime, owner, link target, xattrs, and which paths share an inode.
type node struct {
	Type   string
	Mode   fs.FileMode
	Size   int64
	Sum    [32]byte
	MTime  int64
	UID    uint32
	GID    uint32
	Link   string
	Xattrs string
	Ino    uint64 // replaced by a hard-link group name in manifests
}

// manifest describes the tree under root, keyed by slash path relative to root.
func manifest(t *testing.T, root string) map[string]node {
	t.Helper()
	m := map[string]node{}
	inodes := map[uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fi, _ := d.Info()
		n := node{Mode: fi.Mode(), MTime: st.Mtim.Nano(), UID: st.Uid, GID: st.Gid, Xattrs: xattrs(p)}
		switch {
		case fi.Mode().IsRegular():
			n.Type = "file"
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.Size, n.Sum = int64(len(b)), sha256.Sum256(b)
			if st.Nlink > 1 {
				if first, ok := inodes[st.Ino]; ok {
					n.Link = "hardlink-group:" + first
				} else {
					inodes[st.Ino] = rel
					n.Link = "hardlink-group:" + rel
				}
			}
		case fi.IsDir():
			n.Type = "dir"
			n.Size = 0
		case fi.Mode()&fs.ModeSymlink != 0:
			n.Type = "symlink"
			n.Link, _ = os.Readlink(p)
			n.Mode = fs.ModeSymlink // symlink permissions mean nothing on Linux
		case fi.Mode()&fs.ModeNamedPipe != 0:
			n.Type = "fifo"
		default:
			n.Type = fi.Mode().Type().String()
		}
		m[rel] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func xattrs(p string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return ""
	}
	var names []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 1024)
		vn, err := unix.Lgetxattr(p, name, v)
		if err == nil {
			names = append(names, name+"="+string(v[:vn]))
		}
	}
	sort.Strings(names)
	return strings.Join(names, ";")
}

// sameTree fails the test with every difference between two manifests.
func sameTree(t *testing.T, want, got map[string]node) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			diffs = append(diffs, "missing: "+p)
			continue
		}
		if w != g {
			diffs = append(diffs, fmt.Sprintf("differs: %s\n    want %+v\n    got  %+v", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "unexpected: "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("… and %d more", len(diffs)-20))
		}
		t.Fatalf("restored tree differs:\n%s", strings.Join(diffs, "\n"))
	}
}

// treeMaker builds random trees of every file type the engine handles.
type treeMaker struct {
	t   *testing.T
	rng *rand.Rand
	n   int
}

func (m *treeMaker) name() string {
	m.n++
	switch m.rng.IntN(12) {
	case 0:
		return fmt.Sprintf("non-utf8-\xff\xfe-%d", m.n)
	case 1:
		return fmt.Sprintf("spaces and 'quotes' %d", m.n)
	case 2:
		return strings.Repeat("long", 50) + fmt.Sprint(m.n) // 200+ bytes
	}
	return fmt.Sprintf("f%03d", m.n)
}

func (m *treeMaker) content() []byte {
	var size int
	switch m.rng.IntN(10) {
	case 0:
		size = 0
	case 1:
		size = 1<<20 + m.rng.IntN(3<<20) // large: streamed, spans frames
	default:
		size = m.rng.IntN(20 << 10)
	}
	b := make([]byte, size)
	if m.rng.IntN(2) == 0 {
		for i := range b {
			b[i] = byte(m.rng.Uint32())
		}
	} else {
		line := []byte(fmt.Sprintf("line of text %d for compression\n", m.n))
		for i := range b {
			b[i] = line[i%len(line)]
		}
	}
	return b
}

// build fills dir with a random tree of about n entries.
func (m *treeMaker) build(dir string, n, depth int) {
	t := m.t
	var files []string
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, m.name())
		switch k := m.rng.IntN(20); {
		case k < 11:
			must(t, os.WriteFile(p, m.content(), 0o640))
			files = append(files, p)
			if m.rng.IntN(8) == 0 {
				_ = unix.Setxattr(p, "user.kura.test", []byte("v"+fmt.Sprint(m.n)), 0)
			}
		case k < 14 && depth > 0:
			must(t, os.Mkdir(p, 0o750))
			m.build(p, n/2, depth-1)
		case k == 14:
			must(t, os.Mkdir(p, 0o700)) // empty dir
		case k == 15:
			must(t, os.Symlink("target-"+fmt.Sprint(m.n), p))
		case k == 16 && len(files) > 0:
			must(t, os.Link(files[m.rng.IntN(len(files))], p))
		case k == 17:
			must(t, syscall.Mkfifo(p, 0o644))
		case k == 18:
			must(t, os.WriteFile(p, []byte("exec"), 0o4755))
		default:
			must(t, os.WriteFile(p, m.content(), 0o600))
		}
	}
	// Times are set last so creating children does not disturb them.
	mt := time.Unix(1_700_000_000+int64(m.rng.IntN(1e6)), int64(m.rng.IntN(1e9)))
	must(t, os.Chtimes(dir, mt, mt))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
