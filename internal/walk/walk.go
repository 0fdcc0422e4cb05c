// Package walk lists the files of a backup selection in index order.
//
// Walk streams one Item per selected path to a callback, in exactly the order
// of index.Compare: for each directory, all its selected children sorted by
// name bytewise, then each child directory in that order. Only the listings
// of the directories on the current stack are held in memory, never the
// whole tree, plus the first path of every regular file with more than one
// link (to detect hard links).
//
// Invariants:
//   - Entry.Path is the absolute path without its leading "/" (as GNU tar
//     stores it). The ancestors of every root are emitted as directories
//     with their real attributes, listing only the children that lead to a
//     root; "/" itself is never an entry.
//   - Entry.Mode holds the unix permission bits with setuid, setgid and
//     sticky: st_mode & 07777 (not os.FileMode bits).
//   - Symlinks are stored, never followed, so link loops cannot loop.
//     Directories are opened with O_NOFOLLOW relative to their parent's
//     descriptor, so a directory swapped for a symlink during the walk is
//     not entered either, and paths longer than PATH_MAX work.
//   - The walk never stops on bad input: every path it cannot store fully
//     is reported as a Warning (unreadable or vanished files, sockets,
//     non-UTF-8 names, unreadable attributes), and the walk goes on.
//   - The paths in Options.SkipPaths (the Kura home, the library folder)
//     are never entered or stored: the backup never backs up itself.
package walk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
)

// Options select what Walk stores.
type Options struct {
	// Excludes are glob patterns (see ValidatePattern): one without '/'
	// matches the base name of any path component, one with '/' the
	// absolute path, and a trailing "/**" everything below.
	Excludes []string
	// SkipPaths are paths never entered or stored, without a warning: the
	// Kura home and the library folder. A skip path that is a symlink is
	// skipped both as named and where it points.
	SkipPaths []string
	// OneFileSystem stops the walk at mount points: a directory on another
	// device than its root is stored but not entered.
	OneFileSystem bool
}

// String describes the options, for logs and benchmark records.
func (o Options) String() string {
	return fmt.Sprintf("excludes=%q skip=%q one-file-system=%t", o.Excludes, o.SkipPaths, o.OneFileSystem)
}

// Item is one path of the walk.
type Item struct {
	Entry index.Entry
	// Abs is the absolute OS path. It may exceed PATH_MAX (deep trees), in
	// which case only Open can open it.
	Abs string
	// Alloc is what a regular file takes on disk (st_blocks × 512). Less
	// than Entry.Size means the file may have holes.
	Alloc int64

	dir  *dirHandle // the parent directory, while the walk is inside it
	name string     // base name, relative to dir
}

// Open opens the item's regular file for reading, without following a
// symlink and without blocking on a FIFO. While the walk is inside the
// item's directory (in particular during the callback) it opens relative to
// the directory's descriptor, so it works for paths longer than PATH_MAX;
// later it opens Abs. It fails if the path no longer holds the file that
// was walked (another inode or device, or not a regular file).
func (it *Item) Open() (*os.File, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if t := it.Entry.Type; t != index.TypeFile && t != index.TypeHardlink {
		return nil, &os.PathError{Op: "open", Path: it.Abs, Err: fmt.Errorf("not a regular file (%s)", t)}
	}
	fd, err := -1, error(nil)
	opened := false
	if h := it.dir; h != nil {
		h.mu.Lock()
		if !h.closed {
			fd, err = openat(h.fd, it.name, flags)
			opened = true
		}
		h.mu.Unlock()
	}
	if !opened {
		fd, err = openat(unix.AT_FDCWD, it.Abs, flags)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: it.Abs, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: it.Abs, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != it.Entry.Inode || uint64(st.Dev) != it.Entry.Dev {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: it.Abs, Err: ErrReplaced}
	}
	return os.NewFile(uintptr(fd), it.Abs), nil
}

// Warning is a path the walk could not store fully. The walk goes on.
type Warning struct {
	Path string // absolute OS path
	// Op is what failed: "open", "lstat", "readdir", "readlink", "xattr",
	// "skip" (not stored: sockets, unknown types, excluded roots) or
	// "name" (stored, but the name is not valid UTF-8).
	Op  string
	Err error
}

func (w Warning) Error() string { return w.Path + ": " + w.Op + ": " + w.Err.Error() }

// Unwrap returns the cause, for errors.Is.
func (w Warning) Unwrap() error { return w.Err }

var (
	// ErrSocket is the Err of the warning for a socket, which is not stored
	// (GNU tar: "socket ignored").
	ErrSocket = errors.New("socket ignored")
	// ErrNotUTF8 is the Err of the warning for a name that is not valid
	// UTF-8; the entry is stored with the name's bytes as they are.
	ErrNotUTF8 = errors.New("name is not valid UTF-8 (stored as bytes)")
	// ErrReplaced reports that a path no longer holds what was walked.
	ErrReplaced = errors.New("replaced during the backup")
	// ErrExcluded is the Err of the warning for a root that the excludes or
	// the skip paths remove.
	ErrExcluded = errors.New("root excluded")
	// ErrNoRoots: none of the roots is left to walk (each is missing, cannot
	// be examined, or is excluded). A walk of nothing is an error, not an
	// empty success.
	ErrNoRoots = errors.New("nothing to back up: every path is missing or excluded")
	// SkipDir, returned by the callback for a directory, stores the
	// directory but does not enter it.
	SkipDir = errors.New("skip this directory")
)

// Walk walks roots and calls fn for every selected path, in index order
// (index.Compare), from the calling goroutine. warn, if not nil, receives
// every Warning. The Item belongs to fn once passed.
//
// Roots are made absolute and cleaned; the directories above each root are
// resolved (filepath.EvalSymlinks), the root itself is not: a root that is a
// symlink is stored as a symlink. A root inside another root is dropped.
// A root that does not exist (or cannot be examined) is a Warning (Op
// "lstat") and the other roots are walked, as tar and rsync do; when no root
// is left (all missing or excluded) Walk returns an error wrapping
// ErrNoRoots and the first root's error, before anything is emitted. An
// invalid exclude pattern is an error too.
//
// Walk returns nil at the end, ctx's error when ctx is done, or the first
// error fn returns (other than SkipDir).
func Walk(ctx context.Context, roots []string, opts Options, fn func(*Item) error, warn func(Warning)) error {
	if len(roots) == 0 {
		return errors.New("walk: no roots")
	}
	if slices.Contains(roots, "") {
		return errors.New("walk: empty root")
	}
	ex, err := newExcluder(opts.Excludes)
	if err != nil {
		return fmt.Errorf("walk: %w", err)
	}
	if warn == nil {
		warn = func(Warning) {}
	}
	w := &walker{
		ctx:   ctx,
		done:  ctx.Done(),
		fn:    fn,
		warn:  warn,
		ex:    ex,
		skip:  make(map[string]bool),
		oneFS: opts.OneFileSystem,
		links: make(map[devIno]string),
		buf:   make([]byte, 32<<10),
		xbuf:  make([]byte, 4<<10),
	}
	for _, p := range opts.SkipPaths {
		if p == "" {
			continue
		}
		abs, err := resolve(p)
		if err != nil {
			// A skip path that does not exist cannot be met; keep its
			// cleaned form anyway.
			abs, _ = filepath.Abs(p)
		}
		w.skip[abs] = true
		// A skip path that is a symlink (a home moved elsewhere) is
		// skipped where it really is, too.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			w.skip[real] = true
		}
	}
	rs, firstErr := cleanRoots(roots, warn)
	top := &vnode{}
	kept := 0
	for _, r := range rs {
		if w.rootExcluded(r) {
			warn(Warning{Path: r, Op: "skip", Err: ErrExcluded})
			if firstErr == nil {
				firstErr = Warning{Path: r, Op: "skip", Err: ErrExcluded}
			}
			continue
		}
		top.add(r)
		kept++
	}
	if kept == 0 {
		return fmt.Errorf("%w (%w)", ErrNoRoots, firstErr)
	}
	if err := w.check(); err != nil {
		return err
	}
	if top.root {
		fd, err := openDir(unix.AT_FDCWD, "/")
		if err != nil {
			return fmt.Errorf("walk: open /: %w", err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return fmt.Errorf("walk: stat /: %w", err)
		}
		return w.dir(fd, "/", "", uint64(st.Dev))
	}
	return w.virtual(top, "/", "")
}

// resolve makes p absolute and clean, resolving the symlinks of its parent
// directories but not of p itself.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if abs == "/" {
		return abs, nil
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(abs)), nil
}

// cleanRoots resolves and checks the roots and drops duplicates and roots
// inside other roots. A root that cannot be resolved or examined
// is a warning and left out; the first such problem is returned with the
// roots that remain.
func cleanRoots(roots []string, warn func(Warning)) ([]string, error) {
	var rs []string
	var first error
	bad := func(w Warning) {
		warn(w)
		if first == nil {
			first = w
		}
	}
	for _, r := range roots {
		abs, err := resolve(r)
		if err != nil {
			bad(Warning{Path: r, Op: "lstat", Err: err})
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(abs, &st); err != nil {
			bad(Warning{Path: abs, Op: "lstat", Err: err})
			continue
		}
		rs = append(rs, abs)
	}
	slices.Sort(rs)
	rs = slices.Compact(rs)
	var keep []string
	for _, r := range rs {
		inside := false
		for _, o := range rs {
			if o != r && (o == "/" || strings.HasPrefix(r, o+"/")) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, r)
		}
	}
	return keep, first
}

// rootExcluded reports whether root or one of its ancestors is excluded or
// a skip path, checked top-down as the walk would.
func (w *walker) rootExcluded(root string) bool {
	if root == "/" {
		return w.skip["/"]
	}
	for i := 1; i <= len(root); i++ {
		if i < len(root) && root[i] != '/' {
			continue
		}
		p := root[:i]
		if w.skip[p] || w.ex.match(filepath.Base(p), p) {
			return true
		}
	}
	return false
}

// vnode is a directory of the virtual tree above the roots.
type vnode struct {
	root bool // a root: walked for real from here
	kids map[string]*vnode
}

func (n *vnode) add(abs string) {
	if abs == "/" {
		n.root = true
		return
	}
	for _, c := range strings.Split(abs[1:], "/") {
		if n.kids == nil {
			n.kids = make(map[string]*vnode)
		}
		k := n.kids[c]
		if k == nil {
			k = &vnode{}
			n.kids[c] = k
		}
		n = k
	}
	n.root = true
}

type devIno struct{ dev, ino uint64 }

type walker struct {
	ctx   context.Context
	done  <-chan struct{}
	fn    func(*Item) error
	warn  func(Warning)
	ex    *excluder
	skip  map[string]bool
	oneFS bool
	links map[devIno]string // first path of regular files with Nlink > 1
	buf   []byte            // getdents buffer; a listing is complete before any descent
	xbuf  []byte            // xattr buffer
}

// dirHandle is an open directory the walk is inside. Items keep it to open
// their files relative to it; closing is guarded so that a late Open never
// uses a closed (or reused) descriptor.
type dirHandle struct {
	mu     sync.Mutex
	fd     int
	closed bool
}

func (h *dirHandle) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		unix.Close(h.fd)
	}
	h.mu.Unlock()
}

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK

func (w *walker) check() error {
	select {
	case <-w.done:
		return w.ctx.Err()
	default:
		return nil
	}
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// emit passes it to fn and reports whether a directory should be entered.
func (w *walker) emit(it *Item) (descend bool, err error) {
	err = w.fn(it)
	if err == SkipDir {
		return false, nil
	}
	return err == nil && it.Entry.Type == index.TypeDir, err
}

// virtual walks a directory above the roots: it lists only the children
// that lead to roots.
func (w *walker) virtual(n *vnode, abs, rel string) error {
	names := make([]string, 0, len(n.kids))
	for name := range n.kids {
		names = append(names, name)
	}
	slices.Sort(names)
	type sub struct {
		name string
		dev  uint64
		ino  uint64
	}
	var subs []sub
	for _, name := range names {
		if err := w.check(); err != nil {
			return err
		}
		cAbs := join(abs, name)
		it, ok := w.stat(unix.AT_FDCWD, cAbs, name, cAbs, joinRel(rel, name), nil)
		if !ok {
			continue
		}
		if !n.kids[name].root && it.Entry.Type != index.TypeDir {
			w.warn(Warning{Path: cAbs, Op: "open", Err: fmt.Errorf("%w: no longer a directory", ErrReplaced)})
			continue
		}
		descend, err := w.emit(it)
		if err != nil {
			return err
		}
		if descend {
			subs = append(subs, sub{name, it.Entry.Dev, it.Entry.Inode})
		}
	}
	for _, s := range subs {
		cAbs, cRel := join(abs, s.name), joinRel(rel, s.name)
		k := n.kids[s.name]
		if !k.root {
			if err := w.virtual(k, cAbs, cRel); err != nil {
				return err
			}
			continue
		}
		fd, ok := w.openDir(unix.AT_FDCWD, cAbs, cAbs, s.dev, s.ino)
		if !ok {
			continue
		}
		if err := w.dir(fd, cAbs, cRel, s.dev); err != nil {
			return err
		}
	}
	return nil
}

// openDir opens directory name (relative to dirfd) for listing and checks
// that it is still the directory that was stat'ed.
func (w *walker) openDir(dirfd int, name, abs string, dev, ino uint64) (int, bool) {
	fd, err := openDir(dirfd, name)
	if err != nil {
		w.warn(Warning{Path: abs, Op: "open", Err: err})
		return -1, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		w.warn(Warning{Path: abs, Op: "open", Err: err})
		return -1, false
	}
	if uint64(st.Dev) != dev || st.Ino != ino {
		unix.Close(fd)
		w.warn(Warning{Path: abs, Op: "open", Err: ErrReplaced})
		return -1, false
	}
	return fd, true
}

// dir walks the real directory open as fd (which it closes) at abs/rel.
// rootDev is the device of the root it belongs to.
func (w *walker) dir(fd int, abs, rel string, rootDev uint64) error {
	h := &dirHandle{fd: fd}
	defer h.close()

	names, err := w.readNames(fd)
	if err != nil {
		// Store what could be read; say that the listing is incomplete.
		w.warn(Warning{Path: abs, Op: "readdir", Err: err})
	}
	slices.Sort(names)
	type sub struct {
		name     string
		dev, ino uint64
	}
	var subs []sub
	for _, name := range names {
		if err := w.check(); err != nil {
			return err
		}
		cAbs := join(abs, name)
		if w.skip[cAbs] || w.ex.match(name, cAbs) {
			continue
		}
		it, ok := w.stat(fd, name, name, cAbs, joinRel(rel, name), h)
		if !ok {
			continue
		}
		if !utf8.ValidString(name) {
			w.warn(Warning{Path: cAbs, Op: "name", Err: ErrNotUTF8})
		}
		descend, err := w.emit(it)
		if err != nil {
			return err
		}
		if descend && (!w.oneFS || it.Entry.Dev == rootDev) {
			subs = append(subs, sub{name, it.Entry.Dev, it.Entry.Inode})
		}
	}
	names = nil // only the subdirectories are kept while descending
	for _, s := range subs {
		if err := w.check(); err != nil {
			return err
		}
		cAbs := join(abs, s.name)
		cfd, ok := w.openDir(fd, s.name, cAbs, s.dev, s.ino)
		if !ok {
			continue
		}
		if err := w.dir(cfd, cAbs, joinRel(rel, s.name), rootDev); err != nil {
			return err
		}
	}
	return nil
}

// readNames lists the directory open as fd, without "." and "..". On error
// it returns the names read so far.
func (w *walker) readNames(fd int) ([]string, error) {
	var names []string
	for {
		n, err := unix.ReadDirent(fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return names, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(w.buf[:n], -1, names)
	}
}

// openDir opens a directory to read without touching its access time
// where the kernel allows it (O_NOATIME: the owner or root), so a backup
// leaves the tree's atimes as they were.
func openDir(dirfd int, name string) (int, error) {
	fd, err := openat(dirfd, name, dirFlags|unix.O_NOATIME)
	if err == unix.EPERM {
		fd, err = openat(dirfd, name, dirFlags)
	}
	return fd, err
}

// openat opens name relative to dirfd, retrying on EINTR.
func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
