package restorer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/restorer"
)

// netRawCap is the raw security.capability value of cap_net_raw=ep (what
// setcap writes): VFS_CAP_REVISION_2 with the effective flag, then the
// permitted and inheritable words of capabilities 0-31 and 32-63.
func netRawCap() []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000|1)
	binary.LittleEndian.PutUint32(b[4:], 1<<unix.CAP_NET_RAW)
	return b
}

// privileged is one source entry carrying security.* and trusted.*
// attributes, and the owner and mode it must come back with.
type privileged struct {
	name   string
	uid    int
	gid    int
	mode   os.FileMode // permission and special bits, of regular files
	xattrs map[string][]byte
}

// makePrivilegedTree builds a tree whose files carry a file capability,
// a trusted.* attribute and a user.* one, with foreign owners and a
// setuid bit, plus a directory, a symlink and a FIFO with trusted.*
// attributes. The owner is set first, the mode next and the capability
// last, as chown clears capabilities and setuid bits.
func makePrivilegedTree(t *testing.T, src string) []privileged {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("setting security.capability and trusted.* attributes needs root")
	}
	small := privileged{name: "ping", uid: 1234, gid: 5678, mode: 0o750 | os.ModeSetuid,
		xattrs: map[string][]byte{"security.capability": netRawCap(), "trusted.kura": []byte("t\x00rusted"), "user.kura": []byte("u")}}
	large := privileged{name: "big-tool", uid: 4321, gid: 8765, mode: 0o755,
		xattrs: map[string][]byte{"security.capability": netRawCap(), "trusted.kura": []byte("large")}}
	dir := privileged{name: "sub", uid: 11, gid: 12, xattrs: map[string][]byte{"trusted.kura": []byte("dir")}}
	link := privileged{name: "sub/link", uid: 13, gid: 14, xattrs: map[string][]byte{"trusted.kura": []byte("symlink")}}
	fifo := privileged{name: "sub/fifo", uid: 15, gid: 16, xattrs: map[string][]byte{"trusted.kura": []byte("fifo")}}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(src, small.name), []byte("small tool"), 0o600))
	must(os.WriteFile(filepath.Join(src, large.name), bytes.Repeat([]byte("L"), 3<<20/2), 0o600)) // past the small-file path
	must(os.Mkdir(filepath.Join(src, dir.name), 0o755))
	must(os.Symlink("../ping", filepath.Join(src, link.name)))
	must(unix.Mkfifo(filepath.Join(src, fifo.name), 0o640))
	all := []privileged{small, large, dir, link, fifo}
	for _, p := range all {
		path := filepath.Join(src, p.name)
		must(os.Lchown(path, p.uid, p.gid))
		if p.mode != 0 {
			must(os.Chmod(path, p.mode))
		}
		for k, v := range p.xattrs {
			must(unix.Lsetxattr(path, k, v, 0))
		}
	}
	return all
}

// checkPrivileged checks the restored entries against the source: owner,
// mode and each attribute byte for byte. With keep false, the security.*
// and trusted.* attributes must be absent and the others present.
func checkPrivileged(t *testing.T, root string, want []privileged, keep bool) {
	t.Helper()
	for _, p := range want {
		path := filepath.Join(root, p.name)
		fi, err := os.Lstat(path)
		var st unix.Stat_t
		if err == nil {
			err = unix.Lstat(path, &st)
		}
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
			continue
		}
		if keep && (int(st.Uid) != p.uid || int(st.Gid) != p.gid) {
			t.Errorf("%s: owner %d:%d, want %d:%d", p.name, st.Uid, st.Gid, p.uid, p.gid)
		}
		if p.mode != 0 && fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != p.mode {
			t.Errorf("%s: mode %v, want %v", p.name, fi.Mode(), p.mode)
		}
		for k, v := range p.xattrs {
			buf := make([]byte, 256)
			n, err := unix.Lgetxattr(path, k, buf)
			privileged := strings.HasPrefix(k, "security.") || strings.HasPrefix(k, "trusted.")
			switch {
			case keep || !privileged:
				if err != nil || !bytes.Equal(buf[:n], v) {
					t.Errorf("%s: %s = %x, %v; want %x", p.name, k, buf[:max(n, 0)], err, v)
				}
			case err == nil:
				t.Errorf("%s: %s = %x restored, want it skipped", p.name, k, buf[:n])
			}
		}
	}
}

// TestPrivilegedXattrsSurviveARestore: as root, file capabilities and
// trusted.* attributes come back byte for byte with the owner and mode —
// into a new folder and in place. The kernel clears a capability (and a
// setuid bit) on chown, so they are set after the ownership.
func TestPrivilegedXattrsSurviveARestore(t *testing.T) {
	src := t.TempDir()
	want := makePrivilegedTree(t, src)
	store := &memStore{sets: map[int64]*memSaveset{7: produce(t, src)}}
	ss := &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}}

	to := t.TempDir()
	out, err := restorer.Run(context.Background(), store, ss, restorer.Options{To: to}, restorer.Job{ID: 1})
	if err != nil || out.WarningCount != 0 {
		t.Fatalf("restore: %v %q", err, out.Warnings)
	}
	checkPrivileged(t, filepath.Join(to, src), want, true)

	// In place: the same entries written back over their originals.
	for _, p := range want {
		if p.name != "sub" {
			if err := os.Remove(filepath.Join(src, p.name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := unix.Lremovexattr(filepath.Join(src, "sub"), "trusted.kura"); err != nil {
		t.Fatal(err)
	}
	out, err = restorer.Run(context.Background(), store, ss,
		restorer.Options{InPlace: true, Includes: []string{strings.TrimPrefix(src, "/")}}, restorer.Job{ID: 2})
	if err != nil || out.WarningCount != 0 {
		t.Fatalf("restore in place: %v %q", err, out.Warnings)
	}
	checkPrivileged(t, src, want, true)
}

// TestUnprivilegedRestoreSkipsPrivilegedXattrsWithOneWarning: a process
// that may not set security.* and trusted.* attributes restores everything
// else (user.* attributes, content, mode) and warns once for the job,
// naming how many entries had them and that a root restore keeps them.
func TestUnprivilegedRestoreSkipsPrivilegedXattrsWithOneWarning(t *testing.T) {
	src := t.TempDir()
	want := makePrivilegedTree(t, src)
	store := &memStore{sets: map[int64]*memSaveset{7: produce(t, src)}}
	defer restorer.WithoutPrivilegedXattrs()()

	to := t.TempDir()
	out, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}},
		restorer.Options{To: to}, restorer.Job{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out.WarningCount != 1 || len(out.Warnings) != 1 {
		t.Fatalf("%d warnings %q, want one for the job", out.WarningCount, out.Warnings)
	}
	w := out.Warnings[0]
	if !strings.HasPrefix(w, "5 files had security.* or trusted.* attributes") || !strings.Contains(w, "as root keeps them") {
		t.Errorf("warning %q, want it to count the 5 entries and say a root restore keeps them", w)
	}
	checkPrivileged(t, filepath.Join(to, src), want, false)
	if got, err := os.ReadFile(filepath.Join(to, src, "ping")); err != nil || string(got) != "small tool" {
		t.Errorf("ping: %q, %v", got, err)
	}
}

// TestRestoreAsNobodySkipsPrivilegedXattrsWithOneWarning: the same as a
// real unprivileged user — this test binary run again as nobody restores
// the saveset (TestRestoreAsNobodyHelper), so the process's own decision
// that it may not set security.* and trusted.* attributes is the one tried.
func TestRestoreAsNobodySkipsPrivilegedXattrsWithOneWarning(t *testing.T) {
	src := t.TempDir()
	want := makePrivilegedTree(t, src)
	ss := produce(t, src)
	dir, err := os.MkdirTemp(os.TempDir(), "kura-restorer-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"restorer.test": bin, "data": ss.data, "index": ss.idx} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "restorer.test"), "-test.run=^TestRestoreAsNobodyHelper$")
	cmd.Env = append(os.Environ(), "KURA_RESTORE_HELPER="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restore as nobody: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "warnings"))
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	if err := json.Unmarshal(b, &warnings); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "5 files had security.* or trusted.* attributes") {
		t.Fatalf("warnings %q, want one for the job counting the 5 entries", warnings)
	}
	checkPrivileged(t, filepath.Join(dir, "to", src), want, false)
}

// TestRestoreAsNobodyHelper is the restore of the test above, run as
// nobody; it does nothing in a plain test run.
func TestRestoreAsNobodyHelper(t *testing.T) {
	dir := os.Getenv("KURA_RESTORE_HELPER")
	if dir == "" {
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{sets: map[int64]*memSaveset{7: {data: data, idx: idx}}}
	out, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}},
		restorer.Options{To: filepath.Join(dir, "to")}, restorer.Job{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(out.Warnings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "warnings"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestXattrsTheTargetCannotHoldAreOneWarning: restoring into a file system
// without extended attributes (a ramfs) restores the files without them and
// says so once for the job, naming how many entries had them — it does not
// drop them silently, nor warn once per file.
func TestXattrsTheTargetCannotHoldAreOneWarning(t *testing.T) {
	src := t.TempDir()
	want := makePrivilegedTree(t, src)
	store := &memStore{sets: map[int64]*memSaveset{7: produce(t, src)}}
	to := t.TempDir()
	if err := syscall.Mount("ramfs", to, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount a ramfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(to, syscall.MNT_DETACH) })
	out, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}},
		restorer.Options{To: to}, restorer.Job{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out.WarningCount != 1 || len(out.Warnings) != 1 ||
		!strings.HasPrefix(out.Warnings[0], "5 files had extended attributes (or ACLs) that the file system of the target does not support") {
		t.Fatalf("%d warnings %q, want one for the job counting the 5 entries", out.WarningCount, out.Warnings)
	}
	if got, err := os.ReadFile(filepath.Join(to, src, "ping")); err != nil || string(got) != "small tool" {
		t.Errorf("ping: %q, %v", got, err)
	}
	for _, p := range want {
		if fi, err := os.Lstat(filepath.Join(to, src, p.name)); err != nil {
			t.Errorf("%s: %v", p.name, err)
		} else if p.mode != 0 && fi.Mode()&(os.ModePerm|os.ModeSetuid) != p.mode {
			t.Errorf("%s: mode %v, want %v", p.name, fi.Mode(), p.mode)
		}
	}
}
