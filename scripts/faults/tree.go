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

// snapshot reads a tree from disk.
func snapshot(root string) (tree, error) {
	t := tree{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n := node{perm: info.Mode().Perm()}
		switch {
		case info.IsDir():
			n.kind, n.mtime = "dir", info.ModTime().UnixNano()
		case info.Mode()&fs.ModeSymlink != 0:
			n.kind = "symlink"
			if n.link, err = os.Readlink(p); err != nil {
				return err
			}
			n.perm = 0
		case info.Mode().IsRegular():
			n.kind, n.size, n.mtime = "file", info.Size(), info.ModTime().UnixNano()
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			copy(n.sum[:], h.Sum(nil))
		default:
			n.kind = fmt.Sprintf("other %v", info.Mode().Type())
		}
		t[filepath.ToSlash(rel)] = n
		return nil
	})
	return t, err
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
