package producer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/walk"
)

// CompareSource compares an index entry with the entry on disk now (at
// "/" + its path): its type, its content (regular files), and the metadata
// a restore sets — mode, owner, modification time (not of directories,
// which change with every name added or removed in them), symlink target
// and extended attributes in every namespace. It returns "" when they
// agree, else one line naming every difference (verify --level source, on
// the server and on an agent).
func CompareSource(e *index.Entry) string {
	p := filepath.Join("/", e.Path)
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "missing on disk"
		}
		return "cannot check on disk: " + err.Error()
	}
	if onDisk, ok := entryType(st.Mode); !ok || onDisk != e.Type && !(onDisk == index.TypeFile && e.Type == index.TypeHardlink) {
		return fmt.Sprintf("no longer a %s on disk", kindName(e.Type))
	}
	var diffs []string
	if e.Type == index.TypeFile {
		switch d := sameContent(p, &st, e); {
		case d != "":
			diffs = append(diffs, d)
		case st.Mtim.Nano() != e.MTime:
			diffs = append(diffs, "modification time differs on disk (content is the same)")
		}
	} else if e.Type != index.TypeDir && st.Mtim.Nano() != e.MTime {
		diffs = append(diffs, "modification time differs on disk")
	}
	if e.Type == index.TypeSymlink {
		if target, err := os.Readlink(p); err != nil || target != e.Link {
			diffs = append(diffs, "symlink target differs on disk")
		}
	}
	if m := st.Mode & 0o7777; m != e.Mode {
		diffs = append(diffs, fmt.Sprintf("mode differs on disk: %04o, backed up %04o", m, e.Mode))
	}
	if st.Uid != e.UID || st.Gid != e.GID {
		diffs = append(diffs, fmt.Sprintf("owner differs on disk: %d:%d, backed up %d:%d", st.Uid, st.Gid, e.UID, e.GID))
	}
	if d := xattrDiffs(p, e.Xattrs); d != "" {
		diffs = append(diffs, d)
	}
	return strings.Join(diffs, "; ")
}

// sameContent compares a regular file's size and content with its index
// entry: "" when they are the same, else what differs.
func sameContent(p string, st *unix.Stat_t, e *index.Entry) string {
	if st.Size != e.Size {
		return fmt.Sprintf("size differs on disk: %d bytes, backed up %d", st.Size, e.Size)
	}
	f, err := os.Open(p)
	if err != nil {
		return "cannot read on disk: " + err.Error()
	}
	defer f.Close()
	h := stream.NewDigest()
	if err := hashFile(h, f, st.Size); err != nil {
		return "cannot read on disk: " + err.Error()
	}
	if stream.SumDigest(h) != e.Digest {
		return "content differs on disk"
	}
	return ""
}

// hashFile feeds a file's content to h; holes are hashed as the zeros
// they read as, without reading them.
func hashFile(h *stream.Digest, f *os.File, size int64) error {
	data := DataExtents(int(f.Fd()), size)
	if data == nil {
		_, err := io.Copy(h, f)
		return err
	}
	var pos int64
	for _, x := range data {
		stream.HashZeros(h, x.Offset-pos)
		if _, err := io.Copy(h, io.NewSectionReader(f, x.Offset, x.Length)); err != nil {
			return err
		}
		pos = x.End()
	}
	stream.HashZeros(h, size-pos)
	return nil
}

// xattrDiffs compares the extended attributes of p with those backed up:
// "" when they are the same, else the names added, removed or changed.
// A process that may not read trusted.* attributes ignores them.
func xattrDiffs(p string, backedUp map[string]string) string {
	now, err := walk.Xattrs(p)
	if err != nil {
		return "cannot read extended attributes on disk: " + err.Error()
	}
	seesTrusted := os.Geteuid() == 0
	var removed, changed, added []string
	for k, v := range backedUp {
		if strings.HasPrefix(k, "trusted.") && !seesTrusted {
			continue
		}
		if w, ok := now[k]; !ok {
			removed = append(removed, k)
		} else if w != v {
			changed = append(changed, k)
		}
	}
	for k := range now {
		if _, ok := backedUp[k]; !ok {
			added = append(added, k)
		}
	}
	var parts []string
	for _, l := range []struct {
		what  string
		names []string
	}{{"removed", removed}, {"changed", changed}, {"added", added}} {
		if len(l.names) > 0 {
			sort.Strings(l.names)
			parts = append(parts, l.what+" "+strings.Join(l.names, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "extended attributes differ on disk: " + strings.Join(parts, "; ")
}

// entryType is the index type of a file mode (st_mode); false for a
// socket or an unknown type, which a backup does not store.
func entryType(mode uint32) (index.Type, bool) {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return index.TypeFile, true
	case unix.S_IFDIR:
		return index.TypeDir, true
	case unix.S_IFLNK:
		return index.TypeSymlink, true
	case unix.S_IFIFO:
		return index.TypeFifo, true
	case unix.S_IFCHR:
		return index.TypeChar, true
	case unix.S_IFBLK:
		return index.TypeBlock, true
	}
	return 0, false
}

// kindName names an entry's kind in a verify problem.
func kindName(t index.Type) string {
	switch t {
	case index.TypeFile, index.TypeHardlink:
		return "regular file"
	case index.TypeDir:
		return "directory"
	case index.TypeChar:
		return "character device"
	case index.TypeBlock:
		return "block device"
	}
	return t.String()
}
