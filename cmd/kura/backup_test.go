package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// sampleTree is a small source tree: text that compresses, bytes that do
// not, an empty file and an empty folder.
func sampleTree() (files map[string]string, size int64) {
	files = map[string]string{
		"notes.txt":        strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2000),
		"empty.txt":        "",
		"sub/data.bin":     pseudoRandom(50_000),
		"sub/deeper/a.txt": "alpha\n",
		"emptydir/":        "",
	}
	for _, c := range files {
		size += int64(len(c))
	}
	return files, size
}

// pseudoRandom returns n bytes that zstd cannot shrink.
func pseudoRandom(n int) string {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return string(b)
}

var ratioRE = regexp.MustCompile(`^\d+\.\d\d:1$`)

func TestBackupJSONOnFreshHome(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, size := sampleTree()
	writeTree(t, src, files)
	if _, err := os.Stat(k.home); !os.IsNotExist(err) {
		t.Fatalf("home %s should not exist before the first command (%v)", k.home, err)
	}

	r := k.ok("backup", src, "--json")

	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("backup --json is not a JSON object: %v\n%s", err, r)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"avg_kbps", "elapsed_seconds", "files", "job_id", "kind", "level",
		"media_bytes", "peak_kbps", "phases", "ratio", "ratio_text", "saveset_id", "source_bytes", "status", "tapes", "warning_list", "warnings"}
	if !slices.Equal(keys, want) {
		t.Errorf("JSON fields\n got %v\nwant %v", keys, want)
	}

	var f figures
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil {
		t.Fatal(err)
	}
	if f.JobID != 1 || f.SavesetID != 1 {
		t.Errorf("first backup of a fresh home: job_id %d saveset_id %d, want 1 and 1", f.JobID, f.SavesetID)
	}
	if f.Level != "full" || f.Kind != "backup" || f.Status != "completed" {
		t.Errorf("level %q kind %q status %q, want full, backup, completed", f.Level, f.Kind, f.Status)
	}
	if f.SourceBytes != size {
		t.Errorf("source_bytes %d, want %d (the sum of the file sizes)", f.SourceBytes, size)
	}
	// 4 files and 4 folders at least (src, sub, sub/deeper, emptydir); the
	// folders above src may be counted too.
	if f.Files < 8 {
		t.Errorf("files %d, want at least 8", f.Files)
	}
	if f.MediaBytes <= 0 || f.MediaBytes >= f.SourceBytes {
		t.Errorf("media_bytes %d: want >0 and less than the %d source bytes (the text compresses)", f.MediaBytes, f.SourceBytes)
	}
	if f.AvgKBps <= 0 || f.PeakKBps < f.AvgKBps*0.999 {
		t.Errorf("avg_kbps %v peak_kbps %v: want avg > 0 and peak >= avg", f.AvgKBps, f.PeakKBps)
	}
	if f.ElapsedSeconds <= 0 || f.ElapsedSeconds > 120 {
		t.Errorf("elapsed_seconds %v", f.ElapsedSeconds)
	}
	if !ratioRE.MatchString(f.RatioText) {
		t.Errorf("ratio_text %q does not match %s", f.RatioText, ratioRE)
	}
	if want := float64(f.SourceBytes) / float64(f.MediaBytes); f.Ratio != want {
		t.Errorf("ratio %v, want the number %v (source_bytes / media_bytes)", f.Ratio, want)
	}
	if len(f.Tapes) == 0 || !regexp.MustCompile(`^KUR\d{3}$`).MatchString(f.Tapes[0]) {
		t.Errorf("tapes %v: want the default library's KURnnn barcodes", f.Tapes)
	}
	if f.Warnings != 0 || f.WarningList == nil || len(f.WarningList) != 0 {
		t.Errorf("warnings %d warning_list %#v, want 0 and []", f.Warnings, f.WarningList)
	}
	if len(f.Phases) != 1 || f.Phases[0].Name != "backup" || f.Phases[0].SourceBytes != size {
		t.Errorf("phases %+v: want one backup phase of %d bytes", f.Phases, size)
	}

	// The default library was created on first use.
	var libs []struct {
		Name   string `json:"name"`
		Dir    string `json:"dir"`
		Tapes  int    `json:"tapes"`
		Error  string `json:"error"`
		Config struct {
			Slots  int `json:"slots"`
			Drives int `json:"drives"`
		} `json:"config"`
	}
	k.json(0, &libs, "vtl", "list", "--json")
	if len(libs) != 1 || libs[0].Name != "default" || libs[0].Error != "" {
		t.Fatalf("vtl list: %+v, want the default library alone", libs)
	}
	if libs[0].Config.Slots != 8 || libs[0].Config.Drives != 2 || libs[0].Tapes != 8 {
		t.Errorf("default library: %+v, want 8 slots, 2 drives, 8 tapes", libs[0])
	}
	if !strings.HasPrefix(libs[0].Dir, k.home+string(filepath.Separator)) {
		t.Errorf("default library in %s, want inside the home %s", libs[0].Dir, k.home)
	}
	// And the tape it names holds the saveset.
	tp, ok := k.tapes()[f.Tapes[0]]
	if !ok || !slices.Contains(tp.Savesets, f.SavesetID) {
		t.Errorf("tape list: %s = %+v, want it to hold saveset %d", f.Tapes[0], tp, f.SavesetID)
	}
}

func TestBackupHumanOutputIsTheJobMonitor(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)

	r := k.ok("backup", src)
	for _, re := range []string{
		`(?m)^Job 1 \(backup, full\)\s+saveset 1\s+completed$`,
		`(?m)^Files [\d,]+\s+Source \S+ \S+\s+Media \S+ \S+\s+Ratio \d+\.\d\d:1$`,
		`(?m)^Average [\d,]+ KB/s\s+Peak [\d,]+ KB/s\s+Elapsed .+\s+Tapes KUR\d{3}\s+Warnings 0$`,
		`(?m)^\s+backup\s+Files [\d,]+\s+Source .*Average [\d,]+ KB/s\s+Peak [\d,]+ KB/s$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("stdout does not match %s\n%s", re, r)
		}
	}
	// Not a terminal: no progress line, no escape codes, nothing on stderr.
	if r.stderr != "" {
		t.Errorf("stderr should be empty when nothing went wrong:\n%s", r)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})

	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"backup", "--no-such-flag", src}, "unknown flag: --no-such-flag"},
		{[]string{"backup"}, "give one or more paths"},
		{[]string{"backup", "--compress", "bogus", src}, "bogus"},
		{[]string{"backup", "--level", "weekly", src}, "weekly"},
		{[]string{"backup", "--exclude", "[", src}, "["},
		{[]string{"backup", "--frame-size", "lots", src}, "--frame-size"},
		// The server's limit on a label (api.MaxLabelLen) holds locally.
		{[]string{"backup", "--label", strings.Repeat("x", 1025), src}, "--label: a label must be UTF-8 of at most 1024 bytes"},
		{[]string{"backup", "--label", "bad\xff", src}, "--label"},
		{[]string{"restore"}, "say which saveset"},
		{[]string{"restore", "abc", "--to", k.dir}, `"abc"`},
		{[]string{"restore", "1", "2"}, "received 2"},
		{[]string{"restore", "--at", "yesterday", "--to", k.dir}, "yesterday"},
		{[]string{"restore", "1", "--overwrite", "sometimes", "--to", k.dir}, "sometimes"},
		{[]string{"verify"}, "received 0"},
		{[]string{"verify", "1", "--level", "deep"}, "deep"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"jobs", "list", "extra"}, `"extra"`},
		{[]string{"vtl", "create", "x", "--tape-size", "12zz"}, "--tape-size"},
		{[]string{"drive", "set", "nolib", "--buffer", "1MiB"}, "LIBRARY/NUMBER"},
		{[]string{"tape", "add", "--count", "0"}, "--count"},
	} {
		r := k.run(tc.args...)
		if r.code != exitUsage {
			t.Errorf("want exit 2:\n%s", r)
			continue
		}
		if !strings.HasPrefix(r.stderr, "kura: ") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("stderr should say %q:\n%s", tc.want, r)
		}
		if r.stdout != "" {
			t.Errorf("a usage error should print nothing on stdout:\n%s", r)
		}
	}
	// None of them ran a job.
	var jobs []json.RawMessage
	k.json(0, &jobs, "jobs", "list", "--json")
	if len(jobs) != 0 {
		t.Errorf("usage errors ran %d jobs", len(jobs))
	}
}

// TestUnreadableFileIsAWarningNamingItsPath: a file kura cannot read does
// not fail the backup; it exits 3 and names the file, on stderr and in the
// job record. Root reads anything, so as root kura runs as nobody.
func TestUnreadableFileIsAWarningNamingItsPath(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	if os.Geteuid() == 0 {
		k = nobodyKura(t)
	}
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"ok.txt": "readable\n", "sub/locked.txt": "secret\n"})
	locked := filepath.Join(src, "sub", "locked.txt")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	if k.cred == nil {
		if f, err := os.Open(locked); err == nil {
			f.Close()
			t.Fatal("this user can read a mode 000 file (CAP_DAC_OVERRIDE?): the test cannot make a file unreadable")
		}
	}

	r := k.expect(exitWarnings, "backup", src)
	warnRE := regexp.MustCompile(`(?m)^warning: ` + regexp.QuoteMeta(locked) + `: .*permission denied`)
	if !warnRE.MatchString(r.stderr) {
		t.Errorf("stderr should warn about %s (permission denied):\n%s", locked, r)
	}
	if strings.Contains(r.stderr, "ok.txt") {
		t.Errorf("only the unreadable file should be named:\n%s", r)
	}
	if !strings.Contains(r.stdout, "completed with warnings") || !regexp.MustCompile(`Warnings 1\b`).MatchString(r.stdout) {
		t.Errorf("the job monitor should say completed with warnings, Warnings 1:\n%s", r)
	}
	m := jobLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no job number in:\n%s", r)
	}
	show := k.ok("jobs", "show", m[1])
	if !regexp.MustCompile(`Warnings\s+1\n`).MatchString(show.stdout) || !strings.Contains(show.stdout, " "+locked+":") {
		t.Errorf("jobs show should list the warning with its path:\n%s", show)
	}
	// The readable file was backed up.
	ssID := regexp.MustCompile(`saveset (\d+)`).FindStringSubmatch(r.stdout)
	if ssID == nil {
		t.Fatalf("no saveset number in:\n%s", r)
	}
	var entries []struct {
		Path string `json:"path"`
	}
	k.json(0, &entries, "ls", ssID[1], indexPath(src), "--json")
	if !slices.ContainsFunc(entries, func(e struct {
		Path string `json:"path"`
	}) bool {
		return e.Path == "/"+indexPath(filepath.Join(src, "ok.txt"))
	}) {
		t.Errorf("ls %s: %+v, want ok.txt", src, entries)
	}

	// The --json form carries the same warning and the same exit code.
	var f figures
	k.json(exitWarnings, &f, "backup", src, "--json")
	if f.Warnings != 1 || len(f.WarningList) != 1 || !strings.HasPrefix(f.WarningList[0], locked+": ") ||
		f.Status != "completed with warnings" {
		t.Errorf("backup --json: warnings %d %q status %q, want 1 warning naming %s", f.Warnings, f.WarningList, f.Status, locked)
	}
}

// nobodyKura returns a runner that runs kura as user nobody, with its home,
// working folder and a copy of the test binary in a folder nobody can use
// (t.TempDir's parents may be closed to others).
func nobodyKura(t *testing.T) *kura {
	t.Helper()
	dir, err := os.MkdirTemp(os.TempDir(), "kura-cli-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kura")
	copyFile(t, exe, bin, 0o755)
	return &kura{t: t, bin: bin, home: filepath.Join(dir, "home"), dir: dir,
		cred: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBackupAndRestoreOfNothingAreNotSuccesses: `backup GOOD /missing`
// backs up GOOD, warns about /missing and exits 3; a backup of missing
// paths only fails (exit 1) and its job is recorded as failed; a restore
// whose --include matches nothing exits 1 and says so.
func TestBackupAndRestoreOfNothingAreNotSuccesses(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	good := filepath.Join(k.dir, "good")
	writeTree(t, good, map[string]string{"f.txt": "kept\n"})
	missing := filepath.Join(k.dir, "missing")

	var f figures
	r := k.json(exitWarnings, &f, "backup", "--json", good, missing)
	if f.SavesetID == 0 || f.Files < 1 || len(f.WarningList) != 1 || !strings.Contains(f.WarningList[0], missing) {
		t.Fatalf("backup GOOD MISSING: want GOOD backed up and one warning naming %s:\n%s", missing, r)
	}
	out := filepath.Join(k.dir, "out")
	k.ok("restore", itoa64(f.SavesetID), "--to", out)
	sameTree(t, readTree(t, good), readTree(t, restoredAt(out, good)))

	r = k.expect(exitFailure, "backup", missing, missing+"2")
	if !strings.Contains(r.stderr, "nothing to back up") || !strings.Contains(r.stderr, missing) {
		t.Errorf("a backup of missing paths only should say there is nothing to back up, naming them:\n%s", r)
	}
	var jobs []struct {
		Kind  string `json:"kind"`
		State string `json:"state"`
	}
	k.json(0, &jobs, "jobs", "list", "--limit", "1", "--json")
	if len(jobs) != 1 || jobs[0].Kind != "backup" || jobs[0].State != "failed" {
		t.Errorf("the backup of nothing should be recorded as a failed job: %+v", jobs)
	}

	empty := filepath.Join(k.dir, "empty")
	r = k.expect(exitFailure, "restore", itoa64(f.SavesetID), "--to", empty, "--include", "no/such/file")
	if !strings.Contains(r.stderr, "nothing to restore") || !strings.Contains(r.stderr, "no/such/file") {
		t.Errorf("a restore of nothing should say so, naming the pattern:\n%s", r)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a restore of nothing wrote %d entries", len(ents))
	}
}
