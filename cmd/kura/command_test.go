package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// randomFile writes n bytes that do not compress to dir/name and returns them.
func randomFile(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1, 2, 3})
	_, _ = r.Read(b)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// A command's output larger than a part is stored in parts and comes back
// whole: piped into a command, restored into a folder, and with the stock
// tools and the documented `cat NAME.kura-part-* >> NAME`.
func TestBackupFromCommandRestoresWhole(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	want := randomFile(t, k.dir, "src.bin", 700<<10) // three parts of 256 KiB
	f := k.backup("--from-command", "cat src.bin", "--name", "dumps/out.bin", "--part-size", "256KiB")
	if f.Files != 1 || f.SourceBytes != int64(len(want)) {
		t.Errorf("backup figures: files %d, source %d bytes; want 1 file of %d bytes", f.Files, f.SourceBytes, len(want))
	}
	id := itoa64(f.SavesetID)
	ls := k.ok("ls", id, "dumps")
	for _, name := range []string{"out.bin", "out.bin.kura-part-000002", "out.bin.kura-part-000003"} {
		if !strings.Contains(ls.stdout, name) {
			t.Errorf("ls does not show %s:\n%s", name, ls)
		}
	}

	// Into a command: its standard input is the output, whole.
	k.ok("restore", id, "--to-command", "cat > piped.bin")
	if got, _ := os.ReadFile(filepath.Join(k.dir, "piped.bin")); !bytes.Equal(got, want) {
		t.Errorf("--to-command got %d bytes, want the %d bytes the command wrote", len(got), len(want))
	}
	// Into a folder: one file, the parts appended.
	to := filepath.Join(k.dir, "r")
	k.ok("restore", id, "--to", to)
	if got, _ := os.ReadFile(filepath.Join(to, "dumps", "out.bin")); !bytes.Equal(got, want) {
		t.Errorf("--to got %d bytes, want %d", len(got), len(want))
	}
	if m, _ := filepath.Glob(filepath.Join(to, "dumps", "*kura-part*")); len(m) != 0 {
		t.Errorf("the restore left parts beside the file: %v", m)
	}

	// Without Kura: the recipe, then the parts appended in name order.
	for _, tool := range []string{"zstd", "tar", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/test.sh installs it): %v", tool, err)
		}
	}
	stock := filepath.Join(k.dir, "stock")
	if err := os.MkdirAll(stock, 0o755); err != nil {
		t.Fatal(err)
	}
	recipe := strings.TrimSpace(k.ok("saveset", "recipe", id).stdout)
	sh := exec.Command("sh", "-c", recipe+" && cat dumps/out.bin.kura-part-* >> dumps/out.bin && rm dumps/out.bin.kura-part-*")
	sh.Dir = stock
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the stock recipe: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(stock, "dumps", "out.bin")); !bytes.Equal(got, want) {
		t.Errorf("stock tools got %d bytes, want %d", len(got), len(want))
	}
}

// A command that exits non-zero fails the job with its standard error; the
// saveset is not complete, and an earlier one stays restorable. A restore
// command that fails fails the restore.
func TestBackupFromCommandFailure(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	good := k.backup("--from-command", "echo first")
	r := k.expect(exitFailure, "backup", "--from-command", "echo partial; echo 'disk on fire' >&2; exit 3")
	if !strings.Contains(r.stderr, "exit status 3") || !strings.Contains(r.stderr, "disk on fire") {
		t.Errorf("the error should give the exit status and the command's stderr:\n%s", r)
	}
	// Killed in the middle of its output (a database server stopped mid-dump).
	r = k.expect(exitFailure, "backup", "--from-command", "head -c 3000000 /dev/urandom; kill -9 $$", "--part-size", "1MiB")
	if !strings.Contains(r.stderr, "killed by") {
		t.Errorf("a command killed mid-output should fail saying so:\n%s", r)
	}
	var sets []struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	k.json(0, &sets, "savesets", "--json")
	if len(sets) != 3 {
		t.Errorf("%d savesets, want 3 (one complete, two failed)", len(sets))
	}
	for _, s := range sets {
		if s.ID != good.SavesetID && s.Status == "complete" {
			t.Errorf("saveset %d of the failed command is complete", s.ID)
		}
	}
	k.ok("restore", itoa64(good.SavesetID), "--to-command", "cat > first.txt")
	if b, _ := os.ReadFile(filepath.Join(k.dir, "first.txt")); string(b) != "first\n" {
		t.Errorf("the earlier saveset restores %q, want %q", b, "first\n")
	}
	r = k.expect(exitFailure, "restore", itoa64(good.SavesetID), "--to-command", "cat >/dev/null; echo nope >&2; exit 5")
	if !strings.Contains(r.stderr, "exit status 5") || !strings.Contains(r.stderr, "nope") {
		t.Errorf("a failed restore command should fail the restore with its stderr:\n%s", r)
	}
	// Bad input: a usage error, nothing run.
	k.expect(exitUsage, "backup", "--from-command", "true", "--name", "../x")
	k.expect(exitUsage, "backup", "--from-command", "true", "--level", "incr")
	k.expect(exitUsage, "backup", "--from-command", "true", "/etc")
	k.expect(exitUsage, "restore", itoa64(good.SavesetID), "--to-command", "cat", "--to", k.dir)
	// Its file has no original place, and no file on disk to compare with.
	if r := k.expect(exitUsage, "restore", itoa64(good.SavesetID), "--in-place"); !strings.Contains(r.stderr, "not --in-place") {
		t.Errorf("restore --in-place of a command's saveset:\n%s", r)
	}
	if r := k.expect(exitUsage, "verify", itoa64(good.SavesetID), "--level", "source"); !strings.Contains(r.stderr, "verify media or data") {
		t.Errorf("verify --level source of a command's saveset:\n%s", r)
	}
	k.ok("verify", itoa64(good.SavesetID), "--level", "data")
}

// An output of exactly two parts is two entries (no empty third), and an
// empty output is one empty file.
func TestBackupFromCommandPartEdges(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	want := randomFile(t, k.dir, "src.bin", 512<<10)
	f := k.backup("--from-command", "cat src.bin", "--name", "two", "--part-size", "256KiB")
	ls := k.ok("ls", itoa64(f.SavesetID))
	if n := strings.Count(ls.stdout, "two"); n != 2 || !strings.Contains(ls.stdout, "two.kura-part-000002") {
		t.Errorf("want two and two.kura-part-000002 only:\n%s", ls)
	}
	k.ok("restore", itoa64(f.SavesetID), "--to-command", "cat > two.out")
	if got, _ := os.ReadFile(filepath.Join(k.dir, "two.out")); !bytes.Equal(got, want) {
		t.Errorf("got %d bytes, want %d", len(got), len(want))
	}
	e := k.backup("--from-command", "true", "--name", "empty")
	to := filepath.Join(k.dir, "r")
	k.ok("restore", itoa64(e.SavesetID), "--to", to)
	if st, err := os.Stat(filepath.Join(to, "empty")); err != nil || st.Size() != 0 {
		t.Errorf("an empty output should restore as an empty file: %v %v", st, err)
	}
}

// A selection set can hold a command; a policy runs it like any other,
// and its incremental runs back up in full (a command's output has no
// "unchanged since"), saying so.
func TestSelectionAndPolicyWithCommand(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	k.ok("selection", "create", "ldap", "--from-command", "echo 'dn: o=kura'", "--name", "ldap.ldif")
	if r := k.ok("selection", "show", "ldap"); !strings.Contains(r.stdout, "command:ldap.ldif: echo 'dn: o=kura'") {
		t.Errorf("selection show should list the command:\n%s", r)
	}
	k.expect(exitUsage, "selection", "create", "mixed", "/etc", "--from-command", "true")
	k.ok("policy", "create", "nightly", "--selection", "ldap", "--full", "0 1 * * 0", "--incr", "0 1 * * 1-6", "--keep-generations", "2")
	var f figures
	k.json(0, &f, "policy", "run", "nightly", "--level", "incr", "--json")
	if f.Level != "full" || f.Files != 1 || !strings.Contains(f.Note, "full backup") {
		t.Errorf("an incremental run of a command's selection: level %q, %d files, note %q; want a full backup of 1 file and a note", f.Level, f.Files, f.Note)
	}
	k.ok("restore", itoa64(f.SavesetID), "--to-command", "cat > ldap.out")
	if b, _ := os.ReadFile(filepath.Join(k.dir, "ldap.out")); string(b) != "dn: o=kura\n" {
		t.Errorf("restored %q", b)
	}
}
