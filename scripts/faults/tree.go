package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// node is what a restore must reproduce of one entry.
type node struct {
	kind  string // "file", "dir", "symlink"
	perm  fs.FileMode
	size  int64
	sum   [32]byte
	link  string
	mtime int64 // files and directories, nanoseconds
}

// tree maps a slash path below the root to its node.
type tree map[string]node

// snapshot reads a tree from disk. It walks by directory descriptors
// (openat, fstatat, readlinkat), never by path, so a tree deeper than
// PATH_MAX reads as any other.
func snapshot(root string) (tree, error) {
	t := tree{}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return t, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return t, snapshotDir(fd, "", t)
}

// snapshotDir adds what directory fd (at rel below the root) holds to t,
// and closes fd.
func snapshotDir(fd int, rel string, t tree) error {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	slices.Sort(names)
	for _, name := range names {
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("lstat %s: %w", p, err)
		}
		n := node{perm: fs.FileMode(st.Mode & 0o777)}
		mtime := st.Mtim.Sec*1e9 + st.Mtim.Nsec
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			n.kind, n.mtime = "dir", mtime
			t[p] = n
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", p, err)
			}
			if err := snapshotDir(sub, p, t); err != nil {
				return err
			}
			continue
		case unix.S_IFLNK:
			n.kind, n.perm = "symlink", 0
			buf := make([]byte, 65536)
			k, err := unix.Readlinkat(fd, name, buf)
			if err != nil {
				return fmt.Errorf("readlink %s: %w", p, err)
			}
			n.link = string(buf[:k])
		case unix.S_IFREG:
			n.kind, n.size, n.mtime = "file", st.Size, mtime
			ffd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", p, err)
			}
			f := os.NewFile(uintptr(ffd), p)
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			copy(n.sum[:], h.Sum(nil))
		default:
			n.kind = fmt.Sprintf("other %o", st.Mode&unix.S_IFMT)
		}
		t[p] = n
	}
	return nil
}

// readBelow reads the file at rel (a slash path) below root, one
// component at a time with openat and never following a symlink, so a
// path longer than PATH_MAX reads too.
func readBelow(root, rel string) ([]byte, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, name, flags, 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", strings.Join(parts[:i+1], "/"), err)
		}
		fd = next
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return io.ReadAll(f)
}

// diff describes how got differs from t ("" when equal), naming at most a
// few paths.
func (t tree) diff(got tree) string {
	var d []string
	for p, w := range t {
		g, ok := got[p]
		switch {
		case !ok:
			d = append(d, "missing "+p)
		case g.kind != w.kind:
			d = append(d, fmt.Sprintf("%s is a %s, want a %s", p, g.kind, w.kind))
		case g.sum != w.sum || g.size != w.size:
			d = append(d, fmt.Sprintf("%s content differs (%d bytes, want %d)", p, g.size, w.size))
		case g.link != w.link:
			d = append(d, fmt.Sprintf("%s links to %q, want %q", p, g.link, w.link))
		case g.perm != w.perm:
			d = append(d, fmt.Sprintf("%s mode %o, want %o", p, g.perm, w.perm))
		case g.mtime != w.mtime:
			d = append(d, fmt.Sprintf("%s mtime %d, want %d", p, g.mtime, w.mtime))
		}
	}
	for p := range got {
		if _, ok := t[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	if len(d) == 0 {
		return ""
	}
	slices.Sort(d)
	if len(d) > 4 {
		d = append(d[:4], fmt.Sprintf("and %d more", len(d)-4))
	}
	return strings.Join(d, "; ")
}

// makeTree writes a deterministic tree: folders d00.., files of mixed
// content (text that compresses, random bytes that do not, empty files),
// a symlink, a hard link and an empty folder. Sizes go up to maxKiB.
func makeTree(root string, seed uint64, files, maxKiB int) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	mt := time.Unix(1600000000, 0)
	for i := range files {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%5))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var b []byte
		switch i % 4 {
		case 0, 1: // text
			n := rng.IntN(maxKiB<<10 + 1)
			var sb strings.Builder
			for sb.Len() < n {
				fmt.Fprintf(&sb, "line %d of file %d: %x\n", sb.Len(), i, rng.Uint32()%4096)
			}
			b = []byte(sb.String()[:n])
		case 2: // random
			b = make([]byte, rng.IntN(maxKiB<<10+1))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		case 3: // empty or tiny
			b = []byte(strings.Repeat("x", i%3))
		}
		p := filepath.Join(dir, fmt.Sprintf("f%03d.txt", i))
		if err := os.WriteFile(p, b, os.FileMode(0o600|(i%2)*0o44)); err != nil {
			return err
		}
		m := mt.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, m, m); err != nil {
			return err
		}
	}
	if err := os.Symlink("d00/f000.txt", filepath.Join(root, "link")); err != nil {
		return err
	}
	if err := os.Link(filepath.Join(root, "d02", "f002.txt"), filepath.Join(root, "hardlink")); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o750); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.IsDir() && p != root {
			err = os.Chtimes(p, mt, mt)
		}
		return err
	})
}
