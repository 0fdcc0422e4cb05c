package restorer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// A restore moves through the target in index order: the children of a
// directory, then each subdirectory in turn (a depth-first walk of the
// directories). dirCursor follows that walk one component at a time, with
// mkdirat and openat relative to the directory above, so each entry costs
// a constant number of system calls however deep it lies, and a path
// longer than PATH_MAX is no obstacle (only a single name longer than
// NAME_MAX is, and that fails naming the entry). Going from one directory
// to the next costs the components between them: over a whole restore,
// every directory is entered and left once.
//
// The cursor keeps the descriptors of the deepest cursorWindow directories
// open; one above them is reopened as ".." of its child, and checked to be
// the directory that was entered (device and inode), so a tree of any
// depth needs a bounded number of descriptors. A component that is a
// symlink is resolved through the os.Root of the target, which keeps it
// inside the target (as every path operation of a restore did before).
type dirCursor struct {
	root  *os.Root
	base  *dirHandle // the target itself
	stack []cursorFrame
	open  int    // frames with a handle
	at    string // path(), while valid
	atOK  bool
}

type cursorFrame struct {
	name     string
	h        *dirHandle // nil while closed (above the window)
	dev, ino uint64
}

// cursorWindow is how many directories of the current path stay open.
const cursorWindow = 64

const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

func newDirCursor(root *os.Root) (*dirCursor, error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	h := &dirHandle{f: f, fd: int(f.Fd())}
	h.refs.Store(1)
	return &dirCursor{root: root, base: h}, nil
}

// cur is the directory the cursor is in.
func (c *dirCursor) cur() *dirHandle {
	if len(c.stack) == 0 {
		return c.base
	}
	return c.stack[len(c.stack)-1].h
}

// path is the cursor's directory relative to the target ("" for the target).
func (c *dirCursor) path() string {
	var b strings.Builder
	for i, f := range c.stack {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(f.name)
	}
	return b.String()
}

// to moves the cursor to dir (slash-separated, relative to the target, ""
// for the target), creating the directories that are missing (mode 0700;
// their metadata comes last).
func (c *dirCursor) to(dir string) error {
	if c.atOK && dir == c.at {
		return nil
	}
	// Keep the frames dir shares with the current path: the components
	// of their common prefix, found with a few long comparisons (paths
	// are as long as the tree is deep).
	keep, rest := 0, dir
	if c.atOK {
		n := commonPrefix(c.at, dir)
		if !(n == len(c.at) || c.at[n] == '/') || !(n == len(dir) || dir[n] == '/') {
			n = max(strings.LastIndexByte(dir[:n], '/'), 0)
		}
		if n > 0 {
			keep = strings.Count(dir[:n], "/") + 1
		}
		rest = strings.TrimPrefix(dir[n:], "/")
	} else {
		for keep < len(c.stack) && rest != "" {
			name, after, _ := strings.Cut(rest, "/")
			if name != c.stack[keep].name {
				break
			}
			keep, rest = keep+1, after
		}
	}
	c.atOK = false
	for len(c.stack) > keep {
		if err := c.pop(); err != nil {
			return err
		}
	}
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		if err := c.push(name); err != nil {
			return err
		}
	}
	c.at, c.atOK = dir, true
	return nil
}

// mkdir creates directory name in the cursor's directory; an existing
// directory (or a symlink the target's root resolves to one) is fine.
func (c *dirCursor) mkdir(name string) error {
	err := unix.Mkdirat(c.cur().fd, name, 0o700)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(c.cur().fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "mkdir", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return nil
	case unix.S_IFLNK:
		return c.root.MkdirAll(joinRel(c.path(), name), 0o700)
	}
	return &os.PathError{Op: "mkdir", Path: name, Err: unix.ENOTDIR}
}

// openDir opens directory name of the cursor's directory, without
// following a symlink except through the target's root.
func (c *dirCursor) openDir(name string) (*dirHandle, error) {
	fd, err := unix.Openat(c.cur().fd, name, dirOpenFlags, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return c.openThroughRoot(joinRel(c.path(), name))
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	h := &dirHandle{f: os.NewFile(uintptr(fd), name), fd: fd}
	h.refs.Store(1)
	return h, nil
}

// openThroughRoot opens a directory by its path through the target's root
// (which resolves symlinks that stay inside the target).
func (c *dirCursor) openThroughRoot(p string) (*dirHandle, error) {
	sub, err := c.root.OpenRoot(p)
	if err != nil {
		return nil, err
	}
	f, err := sub.Open(".")
	if err != nil {
		sub.Close()
		return nil, err
	}
	h := &dirHandle{root: sub, f: f, fd: int(f.Fd())}
	h.refs.Store(1)
	return h, nil
}

func (c *dirCursor) push(name string) error {
	if err := c.mkdir(name); err != nil {
		return err
	}
	h, err := c.openDir(name)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		h.release()
		return err
	}
	c.stack = append(c.stack, cursorFrame{name: name, h: h, dev: uint64(st.Dev), ino: st.Ino})
	c.open++
	if c.open > cursorWindow {
		f := &c.stack[len(c.stack)-c.open]
		f.h.release()
		f.h = nil
		c.open--
	}
	return nil
}

// pop moves the cursor to the parent directory.
func (c *dirCursor) pop() error {
	top := c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
	c.open--
	defer top.h.release()
	if len(c.stack) == 0 || c.stack[len(c.stack)-1].h != nil {
		return nil
	}
	// The parent was closed: reopen it as ".." of the child, if that is
	// still the directory entered; else (a symlink on the way, or the tree
	// changed) through the root by its path.
	p := &c.stack[len(c.stack)-1]
	var h *dirHandle
	if fd, err := unix.Openat(top.h.fd, "..", dirOpenFlags, 0); err == nil {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && uint64(st.Dev) == p.dev && st.Ino == p.ino {
			h = &dirHandle{f: os.NewFile(uintptr(fd), p.name), fd: fd}
			h.refs.Store(1)
		} else {
			unix.Close(fd)
		}
	}
	if h == nil {
		var err error
		if h, err = c.openThroughRoot(c.path()); err != nil {
			c.close()
			return fmt.Errorf("reopening %s: %w", c.path(), err)
		}
	}
	p.h = h
	c.open++
	return nil
}

// close releases every handle; the cursor is then at the target.
func (c *dirCursor) close() {
	for _, f := range c.stack {
		if f.h != nil {
			f.h.release()
		}
	}
	c.stack, c.open = nil, 0
}

// release closes the cursor for good.
func (c *dirCursor) release() {
	c.close()
	c.base.release()
}

// joinRel joins a relative directory ("" for the top) and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// commonPrefix is the length of the longest common prefix of a and b,
// compared a chunk at a time.
func commonPrefix(a, b string) int {
	const chunk = 64
	n := 0
	for n+chunk <= len(a) && n+chunk <= len(b) && a[n:n+chunk] == b[n:n+chunk] {
		n += chunk
	}
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
