package walk

import (
	"bytes"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
)

// stat builds the Item for sysName relative to dirfd (unix.AT_FDCWD with an
// absolute sysName above the roots). It reports a warning and false when
// the path cannot be stored.
func (w *walker) stat(dirfd int, sysName, base, abs, rel string, h *dirHandle) (*Item, bool) {
	var st unix.Stat_t
	var err error = unix.EINTR
	for err == unix.EINTR {
		err = unix.Fstatat(dirfd, sysName, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		w.warn(Warning{Path: abs, Op: "lstat", Err: err})
		return nil, false
	}
	e := index.Entry{
		Path:  rel,
		Mode:  st.Mode & 0o7777,
		UID:   st.Uid,
		GID:   st.Gid,
		MTime: st.Mtim.Nano(),
		CTime: st.Ctim.Nano(),
		Inode: st.Ino,
		Dev:   uint64(st.Dev),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type = index.TypeFile
		e.Size = st.Size
		if st.Nlink > 1 {
			key := devIno{e.Dev, e.Inode}
			if first, ok := w.links[key]; ok {
				e.Type, e.Link, e.Size = index.TypeHardlink, first, 0
			} else {
				w.links[key] = rel
			}
		}
	case unix.S_IFDIR:
		e.Type = index.TypeDir
	case unix.S_IFLNK:
		e.Type = index.TypeSymlink
		target, err := readlinkat(dirfd, sysName)
		if err != nil {
			// A symlink without its target cannot be restored: not stored.
			w.warn(Warning{Path: abs, Op: "readlink", Err: err})
			return nil, false
		}
		e.Link = target
	case unix.S_IFIFO:
		e.Type = index.TypeFifo
	case unix.S_IFCHR:
		e.Type = index.TypeChar
		e.Rdev = uint64(st.Rdev)
	case unix.S_IFBLK:
		e.Type = index.TypeBlock
		e.Rdev = uint64(st.Rdev)
	case unix.S_IFSOCK:
		w.warn(Warning{Path: abs, Op: "skip", Err: ErrSocket})
		return nil, false
	default:
		w.warn(Warning{Path: abs, Op: "skip", Err: fmt.Errorf("unknown file type %#o", st.Mode&unix.S_IFMT)})
		return nil, false
	}
	x, err := w.xattrs(xattrPath(dirfd, sysName, abs))
	if err != nil {
		w.warn(Warning{Path: abs, Op: "xattr", Err: err})
	}
	e.Xattrs = x
	return &Item{Entry: e, Abs: abs, Alloc: st.Blocks * 512, dir: h, name: sysName}, true
}

// readlinkat reads a symlink's target, growing the buffer as needed.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// xattrPath returns a path naming the entry for the l*xattr calls, which
// have no *at form: abs when it fits in PATH_MAX, else a path through the
// parent's descriptor in /proc.
func xattrPath(dirfd int, sysName, abs string) string {
	if dirfd == unix.AT_FDCWD || len(abs) < unix.PathMax {
		return abs
	}
	return "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + sysName
}

// Xattrs reads the extended attributes of path, without following a
// symlink, as a backup stores them: what a source verify compares with.
func Xattrs(path string) (map[string]string, error) {
	w := walker{xbuf: make([]byte, 4<<10)}
	return w.xattrs(path)
}

// xattrs reads the extended attributes of path without following a
// symlink. A file system without xattr support gives none, silently.
func (w *walker) xattrs(path string) (map[string]string, error) {
	list, err := w.listxattr(path)
	if err != nil || len(list) == 0 {
		return nil, ignoreUnsupported(err)
	}
	m := make(map[string]string)
	for _, name := range bytes.Split(bytes.TrimRight(list, "\x00"), []byte{0}) {
		if len(name) == 0 {
			continue
		}
		v, err := getxattr(path, string(name))
		if err == unix.ENODATA || ignoreUnsupported(err) == nil && err != nil {
			continue // removed since the listing, or not readable here
		}
		if err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		m[string(name)] = v
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// listxattr returns the NUL-separated attribute names of path (a slice
// the caller must consume before the next call).
func (w *walker) listxattr(path string) ([]byte, error) {
	for {
		n, err := unix.Llistxattr(path, w.xbuf)
		switch err {
		case nil:
			return w.xbuf[:n], nil
		case unix.EINTR:
			continue
		case unix.ERANGE:
			size, err := unix.Llistxattr(path, nil)
			if err != nil {
				return nil, err
			}
			w.xbuf = make([]byte, size+1024)
			continue
		}
		return nil, err
	}
}

func getxattr(path, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(path, name, buf)
		switch err {
		case nil:
			return string(buf[:n]), nil
		case unix.EINTR:
			continue
		case unix.ERANGE:
			size, err := unix.Lgetxattr(path, name, nil)
			if err != nil {
				return "", err
			}
			buf = make([]byte, size+256)
			continue
		}
		return "", err
	}
}

func ignoreUnsupported(err error) error {
	if err == unix.ENOTSUP || err == unix.EOPNOTSUPP {
		return nil
	}
	return err
}
