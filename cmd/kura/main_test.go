package main

// The CLI is tested as a user meets it: the kura binary run as a subprocess
// with its own KURA_HOME, judged by its exit code, stdout and stderr. The
// binary is this test binary re-executed with runMainEnv set, which makes
// TestMain call run(os.Args[1:]) instead of the tests (no go build needed).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const runMainEnv = "KURA_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	code := m.Run()
	stopS3()
	stopPG()
	stopMariaDB()
	os.Exit(code)
}

// commandTimeout only stops a hung subprocess from hanging the suite; no
// test waits on it.
const commandTimeout = 2 * time.Minute

// kura runs the CLI against one home folder.
type kura struct {
	t    *testing.T
	bin  string // the executable; default: this test binary
	home string
	dir  string              // working folder of the subprocess
	cred *syscall.Credential // run as this user, if set
	env  []string            // extra NAME=value pairs (KURA_SERVER, KURA_LOGIN …)
}

// newKura returns a runner with a fresh, empty home (which does not exist
// yet: kura creates it).
func newKura(t *testing.T) *kura {
	t.Helper()
	base := t.TempDir()
	return &kura{t: t, home: filepath.Join(base, "home"), dir: base}
}

// result is one finished kura command.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return "kura " + strings.Join(r.args, " ") + "\nexit " + strconv.Itoa(r.code) +
		"\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr + "---"
}

// run runs kura with args and returns what it printed and its exit code.
func (k *kura) run(args ...string) result {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.t.Context(), commandTimeout)
	defer cancel()
	cmd := k.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		res.code = ee.ExitCode()
	default:
		k.t.Fatalf("kura %s: %v\n%s", strings.Join(args, " "), err, res)
	}
	return res
}

// command builds the kura subprocess for args, with the runner's home,
// folder and environment.
func (k *kura) command(ctx context.Context, args ...string) *exec.Cmd {
	k.t.Helper()
	bin := k.bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			k.t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = k.dir
	// Under -race the runtime sleeps 1 s before every exit unless told not
	// to; with ~150 subprocesses that would be most of the run time.
	gorace := "atexit_sleep_ms=0"
	if v := os.Getenv("GORACE"); v != "" {
		gorace = v + " " + gorace
	}
	env := []string{runMainEnv + "=1", "HOME=" + k.dir, "GORACE=" + gorace}
	if k.home != "" {
		// An admin of a server has no home of its own: KURA_HOME would make
		// every verb local.
		env = append(env, "KURA_HOME="+k.home)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case runMainEnv, "KURA_HOME", "HOME", "GORACE", "XDG_CONFIG_HOME", "KURA_SERVER", "KURA_TOKEN", "KURA_LOGIN", "KURA_CATALOG":
			// A developer's own login must never reach a test.
		default:
			env = append(env, kv)
		}
	}
	env = append(env, k.env...)
	cmd.Env = env
	if k.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: k.cred}
	}
	return cmd
}

// expect runs kura and fails the test unless it exits with code.
func (k *kura) expect(code int, args ...string) result {
	k.t.Helper()
	r := k.run(args...)
	if r.code != code {
		k.t.Fatalf("want exit %d, got:\n%s", code, r)
	}
	return r
}

// ok runs kura and fails the test unless it exits 0.
func (k *kura) ok(args ...string) result {
	k.t.Helper()
	return k.expect(0, args...)
}

// json runs kura (which must exit with code) and decodes its stdout, which
// must be exactly one JSON value, into v.
func (k *kura) json(code int, v any, args ...string) result {
	k.t.Helper()
	r := k.expect(code, args...)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(v); err != nil {
		k.t.Fatalf("stdout is not JSON: %v\n%s", err, r)
	}
	if dec.More() {
		k.t.Fatalf("stdout holds more than one JSON value:\n%s", r)
	}
	return r
}

// figures is `kura backup/restore --json`.
type figures struct {
	JobID          int64    `json:"job_id"`
	SavesetID      int64    `json:"saveset_id"`
	Level          string   `json:"level"`
	Files          int64    `json:"files"`
	SourceBytes    int64    `json:"source_bytes"`
	MediaBytes     int64    `json:"media_bytes"`
	AvgKBps        float64  `json:"avg_kbps"`
	PeakKBps       float64  `json:"peak_kbps"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Ratio          float64  `json:"ratio"`
	RatioText      string   `json:"ratio_text"`
	Tapes          []string `json:"tapes"`
	Warnings       int64    `json:"warnings"`
	WarningList    []string `json:"warning_list"`
	Kind           string   `json:"kind"`
	Status         string   `json:"status"`
	Note           string   `json:"note"`
	Phases         []struct {
		Name        string `json:"name"`
		Files       int64  `json:"files"`
		SourceBytes int64  `json:"source_bytes"`
	} `json:"phases"`
}

// backup runs `kura backup ARGS --json`, which must exit 0, and returns its
// figures.
func (k *kura) backup(args ...string) figures {
	k.t.Helper()
	var f figures
	k.json(0, &f, append(append([]string{"backup"}, args...), "--json")...)
	if f.SavesetID <= 0 {
		k.t.Fatalf("backup %v: no saveset_id in %+v", args, f)
	}
	return f
}

// tapeInfo is one row of `kura tape list --json`.
type tapeInfo struct {
	Barcode  string  `json:"barcode"`
	Library  string  `json:"library"`
	Location string  `json:"location"`
	State    string  `json:"state"`
	Capacity int64   `json:"capacity_bytes"`
	Files    int     `json:"files"`
	Savesets []int64 `json:"savesets"`
}

func (k *kura) tapes(args ...string) map[string]tapeInfo {
	k.t.Helper()
	var list []tapeInfo
	k.json(0, &list, append([]string{"tape", "list", "--json"}, args...)...)
	m := map[string]tapeInfo{}
	for _, t := range list {
		m[t.Barcode] = t
	}
	return m
}

// writeTree creates files (path relative to root → content); a path ending
// in / is an empty folder.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns the regular files below root (relative slash path →
// content) and the folders (relative path ending in /).
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out[rel+"/"] = ""
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		default:
			out[rel] = "<" + d.Type().String() + ">"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails unless the trees hold the same folders and files with the
// same contents.
func sameTree(t *testing.T, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("missing %s", p)
		case g != w:
			t.Errorf("%s: content %q, want %q", p, clip(g), clip(w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected %s", p)
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// indexPath is how a saveset names an absolute path: relative to /, with
// slashes (the form of `kura ls` and --include; warnings and PROBLEM lines
// name files by their absolute path).
func indexPath(abs string) string {
	return strings.TrimPrefix(filepath.ToSlash(abs), "/")
}

// restoredAt is where `kura restore --to dir` puts the file that was at abs.
func restoredAt(dir, abs string) string {
	return filepath.Join(dir, indexPath(abs))
}

var jobLine = regexp.MustCompile(`(?m)^Job (\d+) \(`)

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
