package restorer_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/restorer"
	"github.com/kura-backup/kura/internal/walk"
)

// posixACL is the raw value of a system.posix_acl_* attribute (as setfacl
// writes it): version 2, then tag, permissions and id of each entry.
func posixACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

const noID = 0xffffffff // the id of the entries that have none

// describe is what a user checks of one entry after a restore: type, mode
// with its special bits, owner, mtime to the nanosecond, device number,
// symlink target and every extended attribute, byte for byte.
func describe(t *testing.T, p string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	x, err := walk.Xattrs(p)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "type %o mode %04o owner %d:%d mtime %d rdev %d", st.Mode&unix.S_IFMT, st.Mode&0o7777, st.Uid, st.Gid,
		st.Mtim.Nano(), st.Rdev)
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, _ := os.Readlink(p)
		fmt.Fprintf(&b, " -> %q", target)
	}
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%x", k, x[k])
	}
	return b.String()
}

// TestRestoreKeepsWhatTheSourceHad: one tree with the metadata a restore
// preserves — setuid, setgid and sticky bits, foreign owners, nanosecond
// mtimes of files and directories, access and default POSIX ACLs, user.*
// attributes, symlinks, a hard link, a FIFO and device nodes — comes back
// the same, entry by entry.
func TestRestoreKeepsWhatTheSourceHad(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("device nodes and foreign owners need root")
	}
	src := t.TempDir()
	p := func(name string) string { return filepath.Join(src, name) }
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustDo(os.Mkdir(p("shared"), 0o755))
	mustDo(os.Chmod(p("shared"), 0o2775|os.ModeSetgid))
	mustDo(os.Mkdir(p("drop"), 0o777))
	mustDo(os.Chmod(p("drop"), 0o777|os.ModeSticky))
	mustDo(os.WriteFile(p("shared/su"), []byte("setuid"), 0o755))
	mustDo(os.Chown(p("shared/su"), 0, 0))
	mustDo(os.Chmod(p("shared/su"), 0o755|os.ModeSetuid|os.ModeSetgid))
	mustDo(os.WriteFile(p("acl"), []byte("acl"), 0o640))
	mustDo(unix.Setxattr(p("acl"), "system.posix_acl_access", posixACL(
		[3]uint32{0x01, 6, noID}, [3]uint32{0x02, 4, 1234}, [3]uint32{0x04, 4, noID}, [3]uint32{0x10, 4, noID}, [3]uint32{0x20, 0, noID}), 0))
	mustDo(unix.Setxattr(p("shared"), "system.posix_acl_default", posixACL(
		[3]uint32{0x01, 7, noID}, [3]uint32{0x02, 7, 1234}, [3]uint32{0x04, 5, noID}, [3]uint32{0x10, 7, noID}, [3]uint32{0x20, 5, noID}), 0))
	mustDo(os.WriteFile(p("drop/theirs"), []byte("owned by someone else"), 0o600))
	mustDo(os.Chown(p("drop/theirs"), 2001, 3001))
	mustDo(unix.Setxattr(p("drop/theirs"), "user.origin", []byte("\x00binary\xff"), 0))
	mustDo(os.Link(p("drop/theirs"), p("shared/link")))
	mustDo(os.Symlink("../drop/theirs", p("shared/sym")))
	mustDo(os.Lchown(p("shared/sym"), 2002, 3002))
	mustDo(unix.Mkfifo(p("fifo"), 0o620))
	mustDo(unix.Mknod(p("null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	mustDo(unix.Mknod(p("loop"), unix.S_IFBLK|0o660, int(unix.Mkdev(7, 200))))
	for name, mode := range map[string]os.FileMode{"fifo": 0o620, "null": 0o666, "loop": 0o660} {
		mustDo(os.Chmod(p(name), mode)) // not the umask's
	}
	mt := time.Unix(1_700_000_000, 123_456_789)
	for _, name := range []string{"shared/su", "acl", "drop/theirs", "fifo", "null", "loop", "shared", "drop"} {
		mustDo(os.Chtimes(p(name), mt, mt))
		mt = mt.Add(1001 * time.Nanosecond)
	}
	mustDo(unix.Lutimes(p("shared/sym"), []unix.Timeval{{Sec: 1_600_000_000}, {Sec: 1_600_000_000, Usec: 7}}))
	mustDo(os.Chtimes(p("shared"), mt, mt)) // after the links made in it

	want := map[string]string{}
	mustDo(filepath.WalkDir(src, func(path string, _ fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, path)
		want[rel] = describe(t, path)
		return err
	}))

	store := &memStore{sets: map[int64]*memSaveset{7: produce(t, src)}}
	to := t.TempDir()
	out, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}},
		restorer.Options{To: to}, restorer.Job{ID: 1})
	if err != nil || out.WarningCount != 0 {
		t.Fatalf("restore: %v %q", err, out.Warnings)
	}
	got := filepath.Join(to, src)
	for rel, w := range want {
		if g := describe(t, filepath.Join(got, rel)); g != w {
			t.Errorf("%s:\n restored %s\n source   %s", rel, g, w)
		}
	}
	a, errA := os.Stat(filepath.Join(got, "drop/theirs"))
	b, errB := os.Stat(filepath.Join(got, "shared/link"))
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Errorf("the hard link is not one: %v %v", errA, errB)
	}
}
