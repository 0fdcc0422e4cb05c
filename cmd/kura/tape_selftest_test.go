package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/sttape"
)

// selftest runs `kura tape selftest` in this process on emulated media (the
// hook openTapeDrive), with a temp home and login so nothing real is
// touched; it returns stdout, stderr and the exit code.
func selftest(t *testing.T, m *sttape.Media, args ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("KURA_HOME", dir+"/home")
	t.Setenv("KURA_LOGIN", dir+"/login")
	old := openTapeDrive
	t.Cleanup(func() { openTapeDrive = old })
	opened := ""
	openTapeDrive = func(path string, write bool) (sttape.Drive, error) {
		opened = path
		return m.Load(write)
	}
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append([]string{"tape", "selftest"}, args...))
	code := exitCode(root.Execute(), &errb)
	if code != exitUsage && opened != "/dev/nst0" {
		t.Fatalf("the drive opened was %q, want /dev/nst0", opened)
	}
	return out.String(), errb.String(), code
}

// TestTapeSelftestReadsOnly: without --write the check changes nothing on a
// labelled tape and reports its label and tape files; --write refuses it.
func TestTapeSelftestReadsOnly(t *testing.T) {
	m := sttape.NewMedia(64<<20, 80<<20)
	drv, err := m.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := sttape.Format(drv, tape.Label{Barcode: "LTO001L8", Library: "real", BlockSize: 64 << 10, Capacity: 32 << 20}, sttape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := dev.Append("saveset 1")
	w.Write(bytes.Repeat([]byte("kura"), 50000))
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	before := m.Records()
	written := m.Counts().BlocksWritten

	out, errs, code := selftest(t, m, "/dev/nst0")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"Tape loaded      yes", "Write-protected  no", "LTO001L8, library real, generation 1, block 64.0 KiB", "Tape files       1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if m.Records() != before || m.Counts().BlocksWritten != written {
		t.Errorf("a selftest without --write wrote on the tape")
	}

	_, errs, code = selftest(t, m, "/dev/nst0", "--write")
	if code != exitFailure || !strings.Contains(errs, "needs a blank, writable tape: it holds data") {
		t.Errorf("--write on a labelled tape: exit %d, %q; want 1 and a refusal", code, errs)
	}
	if m.Records() != before || m.Counts().BlocksWritten != written {
		t.Errorf("a refused --write wrote on the tape")
	}
	if files := reopen(t, m); len(files) != 1 || files[0].Tag != "saveset 1" {
		t.Errorf("tape files after the selftests: %+v", files)
	}

	m.SetWriteProtected(true)
	out, _, code = selftest(t, m, "/dev/nst0")
	if code != exitOK || !strings.Contains(out, "Write-protected  yes") {
		t.Errorf("write-protected tape: exit %d\n%s", code, out)
	}
}

func reopen(t *testing.T, m *sttape.Media) []tape.FileInfo {
	t.Helper()
	drv, err := m.Load(false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sttape.Open(drv, sttape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestTapeSelftestWrite: on a blank tape --write writes, reads back,
// reports the rates and leaves the tape blank.
func TestTapeSelftestWrite(t *testing.T) {
	m := sttape.NewMedia(64<<20, 80<<20)
	out, errs, code := selftest(t, m, "/dev/nst0", "--write", "--size", "3MiB", "--block-size", "64KiB", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep sttape.SelfTestReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !rep.Blank || rep.Wrote != 3<<20 || rep.WriteBlock != 64<<10 || !rep.Match || !rep.LeftBlank {
		t.Errorf("report %+v", rep)
	}
	if m.Counts().BlocksWritten < 48 {
		t.Errorf("%d blocks written, want the 48 of 3 MiB at least", m.Counts().BlocksWritten)
	}
	// Blank again: a second run finds a blank tape and may write again.
	out, _, code = selftest(t, m, "/dev/nst0")
	if code != exitOK || !strings.Contains(out, "none (blank tape)") {
		t.Errorf("after --write: exit %d\n%s", code, out)
	}

	m.SetWriteProtected(true)
	_, errs, code = selftest(t, m, "/dev/nst0", "--write")
	if code != exitFailure || !strings.Contains(errs, "read-only file system") {
		t.Errorf("--write on a write-protected tape: exit %d, %q", code, errs)
	}
}

func TestTapeSelftestHelp(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"tape", "selftest", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kura tape selftest DEVICE", "/dev/nst0", "Nothing is written unless --write", "--write", "--size", "--block-size", "Exit status: 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	_, _, code := selftest(t, sttape.NewMedia(1<<20, 2<<20))
	if code != exitUsage {
		t.Errorf("no DEVICE: exit %d, want 2", code)
	}
}

// TestTapeSelftestMismatchExits4: a drive that gives back other bytes than
// it was given fails the write check with exit 4, and says so.
func TestTapeSelftestMismatchExits4(t *testing.T) {
	m := sttape.NewMedia(64<<20, 80<<20)
	dir := t.TempDir()
	t.Setenv("KURA_HOME", dir+"/home")
	t.Setenv("KURA_LOGIN", dir+"/login")
	old := openTapeDrive
	t.Cleanup(func() { openTapeDrive = old })
	openTapeDrive = func(path string, write bool) (sttape.Drive, error) {
		e, err := m.Load(write)
		return corrupting{e, m}, err
	}
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"tape", "selftest", "/dev/nst0", "--write", "--size", "1MiB", "--block-size", "64KiB"})
	code := exitCode(root.Execute(), &errb)
	if code != exitVerify || !strings.Contains(errb.String(), "read back differs") || !strings.Contains(out.String(), "read back DIFFERENT") {
		t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// corrupting flips a bit in every 64 KiB block it writes.
type corrupting struct {
	*sttape.Emulation
	m *sttape.Media
}

func (c corrupting) Write(p []byte) (int, error) {
	n, err := c.Emulation.Write(p)
	if err == nil && len(p) == 64<<10 {
		c.m.FlipBit(c.m.Records()-1, 3)
	}
	return n, err
}
