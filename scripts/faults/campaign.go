package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// campaign holds what every trial starts from: the binary, the source trees
// and a golden home with two savesets (1 full, 2 incremental of src) whose
// trees at backup time are tree1 and tree2.
type campaign struct {
	kura    string
	work    string
	timeout time.Duration
	rng     *rand.Rand

	src, big     string // backed-up trees: src (savesets 1, 2), big (what kill and tmpfs trials back up)
	live         string // the home every trial works in: the catalog names its library by absolute path, so the path stays the same
	golden       string // a pristine copy of the home after the two backups
	tree1, tree2 tree   // src as saveset 1 and saveset 2 saw it
	bigTree      tree
	files        map[string][]string // file class → paths relative to the golden home
	backupTime   time.Duration       // how long a backup of big takes, for kill moments
	trialNo      int
}

// trialDir is one trial's folder: home (a copy of the golden home), sent
// (the sentinel folder holding the restore targets), login (a login file
// path that never exists).
type trialDir struct {
	root, home, sent string
	target           func(name string) string
}

func (c *campaign) newTrial(kind string) (*trialDir, error) {
	c.trialNo++
	root := filepath.Join(c.work, "trials", fmt.Sprintf("%04d-%s", c.trialNo, kind))
	os.RemoveAll(root)
	// A tmpfs of an earlier trial may still be mounted (lazily unmounted).
	if err := os.RemoveAll(c.live); err != nil {
		return nil, err
	}
	d := &trialDir{root: root, home: c.live, sent: filepath.Join(root, "sent")}
	d.target = func(name string) string { return filepath.Join(d.sent, "t1", "t2", name) }
	if err := os.MkdirAll(filepath.Join(d.sent, "t1", "t2"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(d.sent, "canary"), []byte("canary\n"), 0o644); err != nil {
		return nil, err
	}
	return d, nil
}

// escaped lists what is in the sentinel folder besides the canary, t1, t1/t2
// and the restore targets under t1/t2, and whether the canary changed.
func (d *trialDir) escaped() []string {
	var out []string
	_ = filepath.WalkDir(d.sent, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(d.sent, p)
		switch {
		case rel == "." || rel == "t1" || rel == filepath.Join("t1", "t2"):
			return nil
		case filepath.Dir(rel) == filepath.Join("t1", "t2") && strings.HasPrefix(filepath.Base(rel), "target"):
			return filepath.SkipDir
		case rel == "canary":
			return nil
		}
		out = append(out, rel)
		return nil
	})
	var st syscall.Stat_t
	b, err := os.ReadFile(filepath.Join(d.sent, "canary"))
	if err != nil || string(b) != "canary\n" {
		out = append(out, "canary changed")
	} else if syscall.Lstat(filepath.Join(d.sent, "canary"), &st) == nil && (st.Nlink != 1 || st.Mode&0o777 != 0o644) {
		out = append(out, fmt.Sprintf("canary links %d mode %o", st.Nlink, st.Mode&0o777))
	}
	return out
}

// kuraCmd runs kura on a home with a timeout, in its own process group, and
// records it in the trial. The login file never exists, so no server is used
// unless env says so.
func (c *campaign) kuraCmd(t *Trial, home string, env []string, args ...string) Command {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kura, args...)
	cmd.Env = c.cmdEnv(home, env)
	var out, stdout lockedBuffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, &stdout), &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := Command{Args: args, Seconds: time.Since(start).Seconds(), Output: tail(out.String(), 600), stdout: stdout.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Exit = -1
	case err == nil:
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	default:
		r.Exit = -2
		r.Output += "\n" + err.Error()
	}
	if t != nil {
		t.Commands = append(t.Commands, r)
	}
	return r
}

// lockedBuffer is a buffer that stdout and stderr (two goroutines of
// os/exec) may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cmdEnv is baseEnv plus extra, except that a command sent to a server
// (KURA_SERVER in extra) gets no KURA_HOME: an explicit home means local.
func (c *campaign) cmdEnv(home string, extra []string) []string {
	for _, kv := range extra {
		if strings.HasPrefix(kv, "KURA_SERVER=") {
			return append(slices.DeleteFunc(c.baseEnv(home), func(kv string) bool { return strings.HasPrefix(kv, "KURA_HOME=") }), extra...)
		}
	}
	return append(c.baseEnv(home), extra...)
}

func (c *campaign) baseEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KURA_") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KURA_HOME="+home, "KURA_LOGIN="+filepath.Join(c.work, "no-login", "login.json"),
		"XDG_CONFIG_HOME="+filepath.Join(c.work, "no-login"))
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// setup makes the source trees and the golden home.
func (c *campaign) setup() error {
	c.src = filepath.Join(c.work, "src")
	c.big = filepath.Join(c.work, "big")
	c.golden = filepath.Join(c.work, "golden")
	c.live = filepath.Join(c.work, "home")
	for _, p := range []string{c.src, c.big, c.golden, c.live} {
		os.RemoveAll(p)
	}
	if err := makeTree(c.src, 1, 40, 5); err != nil {
		return err
	}
	if err := makeTree(c.big, 2, 60, 40); err != nil {
		return err
	}
	var err error
	if c.bigTree, err = snapshot(c.big); err != nil {
		return err
	}
	if r := c.kuraCmd(nil, c.live, nil, "backup", c.src); r.Exit != 0 {
		return fmt.Errorf("full backup: exit %d: %s", r.Exit, r.Output)
	}
	if c.tree1, err = snapshot(c.src); err != nil {
		return err
	}
	// An incremental: one file changed, one deleted, one new.
	if err := os.WriteFile(filepath.Join(c.src, "d00", "f000.txt"), []byte("changed after the full\n"), 0o644); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(c.src, "d01", "f001.txt")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.src, "new.txt"), []byte("new in the incremental\n"), 0o600); err != nil {
		return err
	}
	mt := time.Unix(1700000000, 123456789)
	os.Chtimes(filepath.Join(c.src, "d00", "f000.txt"), mt, mt)
	os.Chtimes(filepath.Join(c.src, "new.txt"), mt, mt)
	if r := c.kuraCmd(nil, c.live, nil, "backup", "--level", "incr", c.src); r.Exit != 0 {
		return fmt.Errorf("incremental backup: exit %d: %s", r.Exit, r.Output)
	}
	if c.tree2, err = snapshot(c.src); err != nil {
		return err
	}
	if err := copyTree(c.live, c.golden); err != nil {
		return err
	}
	// How long a backup of big takes, for kill moments (the live home is
	// replaced by a copy of the golden one for every trial).
	start := time.Now()
	if r := c.kuraCmd(nil, c.live, nil, "backup", c.big); r.Exit != 0 {
		return fmt.Errorf("timing backup: exit %d: %s", r.Exit, r.Output)
	}
	c.backupTime = time.Since(start)
	// Sanity: the untouched golden home restores both savesets exactly.
	d, err := c.newTrial("baseline")
	if err != nil {
		return err
	}
	t := &Trial{Kind: "baseline"}
	if err := copyTree(c.golden, d.home); err != nil {
		return err
	}
	c.checkSavesets(t, d, "base")
	if t.Outcome != "" || t.Lost {
		return fmt.Errorf("the undamaged home does not restore exactly: %s %s", t.Detail, cmdsText(t))
	}
	os.RemoveAll(d.root)
	return c.classifyFiles()
}

// classifyFiles lists the golden home's files by class.
func (c *campaign) classifyFiles() error {
	var ss []struct {
		ID        int64 `json:"id"`
		IndexPart struct {
			Barcode string `json:"barcode"`
			File    int    `json:"file"`
		} `json:"index_part"`
	}
	r := c.kuraCmd(nil, c.live, nil, "savesets", "--json")
	if r.Exit != 0 {
		return fmt.Errorf("savesets --json: %s", r.Output)
	}
	if err := json.Unmarshal([]byte(r.stdout), &ss); err != nil {
		return fmt.Errorf("savesets --json: %w", err)
	}
	indexFiles := map[string]bool{}
	for _, s := range ss {
		indexFiles[fmt.Sprintf("%s/%06d", s.IndexPart.Barcode, s.IndexPart.File)] = true
	}
	c.files = map[string][]string{}
	err := filepath.WalkDir(c.golden, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(c.golden, p)
		base := filepath.Base(p)
		ext := filepath.Ext(base)
		class := ""
		switch {
		case strings.HasSuffix(rel, ".lock") || base == "lock" || base == ".lock" || strings.HasPrefix(rel, "run/"):
			return nil // lock files hold no data
		case base == "label":
			class = "label"
		case ext == ".crc":
			class = "crc"
		case ext == ".mark":
			class = "mark"
		case ext == ".data":
			tf := filepath.Base(filepath.Dir(p)) + "/" + strings.TrimSuffix(base, ext)
			if indexFiles[tf] {
				class = "index-tape"
			} else {
				class = "tape-data"
			}
		case ext == ".idx":
			class = "index-cache"
		case base == "inventory.json":
			class = "inventory"
		case base == "library.json":
			class = "library-json"
		case strings.HasPrefix(base, "catalog.db"):
			class = "catalog"
		default:
			class = "other"
		}
		c.files[class] = append(c.files[class], rel)
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range []string{"tape-data", "crc", "mark", "label", "index-tape", "index-cache", "inventory", "catalog"} {
		if len(c.files[k]) == 0 {
			return fmt.Errorf("the golden home has no %s file", k)
		}
	}
	return nil
}

// checkSavesets restores savesets 1 and 2 into fresh targets, compares them
// with the trees they saw, and verifies both. It sets t.Outcome to silent
// (a restore said OK, the tree differs) or hang, appends details, and
// returns whether every restore was exact and every command exited 0.
func (c *campaign) checkSavesets(t *Trial, d *trialDir, tag string) (allOK bool) {
	allOK = true
	for _, s := range []struct {
		id   string
		want tree
	}{{"1", c.tree1}, {"2", c.tree2}} {
		to := d.target("target-" + tag + "-" + s.id)
		r := c.kuraCmd(t, d.home, nil, "restore", s.id, "--to", to)
		if r.Exit == -1 {
			t.Outcome = Hang
			return false
		}
		got, err := snapshot(filepath.Join(to, strings.TrimPrefix(c.src, "/")))
		diff := ""
		if err != nil {
			diff = err.Error()
		} else {
			diff = s.want.diff(got)
		}
		if diff != "" {
			allOK = false
			if r.Exit == 0 {
				t.Outcome = Silent
				t.Detail += fmt.Sprintf("restore %s exited 0 but differs: %s; ", s.id, diff)
			}
		}
		if r.Exit != 0 {
			allOK = false
		}
		os.RemoveAll(to)
	}
	for _, args := range [][]string{{"verify", "1"}, {"verify", "2"}, {"verify", "1", "--level", "media"}, {"verify", "2", "--level", "media"}} {
		r := c.kuraCmd(t, d.home, nil, args...)
		if r.Exit == -1 {
			t.Outcome = Hang
			return false
		}
		if r.Exit != 0 {
			allOK = false
		}
	}
	return allOK
}

func cmdsText(t *Trial) string {
	var b strings.Builder
	for _, c := range t.Commands {
		fmt.Fprintf(&b, "\n  kura %s → %d: %s", strings.Join(c.Args, " "), c.Exit, c.Output)
	}
	return b.String()
}

// run runs one trial of a kind and classifies it.
func (c *campaign) run(kind string, i int) Trial {
	t := Trial{Kind: kind}
	d, err := c.newTrial(kind)
	if err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return t
	}
	switch kind {
	case "flip", "truncate", "delete":
		c.fileFault(&t, d, kind)
	case "kill":
		c.killFault(&t, d)
	case "tmpfs-home", "tmpfs-library":
		c.tmpfsFault(&t, d, kind)
	case "hostile":
		c.hostileFault(&t, d, hostileCases[i%len(hostileCases)])
	case "revoke":
		c.revokeFault(&t, d, i)
	}
	if t.Outcome != Skipped && t.Outcome != Hang {
		if e := d.escaped(); len(e) > 0 {
			t.Outcome = Escape
			t.Detail += fmt.Sprintf("written outside the target: %q; ", e)
		}
	}
	if t.Outcome == Silent || t.Outcome == Escape || t.Outcome == Hang || t.Lost {
		// Keep the home as the trial left it, beside the targets.
		if err := copyTree(d.home, filepath.Join(d.root, "home-after")); err == nil {
			t.Detail += "trial folder kept: " + d.root + " (home-after: the home as the trial left it; the home lives at " + c.live + " when used)"
		}
		return t
	}
	os.RemoveAll(d.root)
	return t
}

// fileFault flips bits in, truncates or deletes one file of the home or the
// library, then restores and verifies both savesets.
func (c *campaign) fileFault(t *Trial, d *trialDir, kind string) {
	if err := copyTree(c.golden, d.home); err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	classes := []string{"tape-data", "crc", "mark", "label", "index-tape", "index-cache", "inventory", "library-json", "catalog"}
	class := classes[c.rng.IntN(len(classes))]
	files := c.files[class]
	rel := files[c.rng.IntN(len(files))]
	p := filepath.Join(d.home, rel)
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		t.Outcome, t.Detail = Skipped, fmt.Sprintf("%s: %v", rel, err)
		return
	}
	switch kind {
	case "flip":
		n := 1 + c.rng.IntN(3)
		var offs []string
		for range n {
			off := c.rng.IntN(len(b))
			bit := byte(1) << c.rng.IntN(8)
			b[off] ^= bit
			offs = append(offs, fmt.Sprintf("%d^0x%02x", off, bit))
		}
		t.Fault = fmt.Sprintf("%s: flip %s of %s (%d bytes)", class, strings.Join(offs, ","), rel, len(b))
		err = os.WriteFile(p, b, 0o644)
	case "truncate":
		n := c.rng.IntN(len(b))
		t.Fault = fmt.Sprintf("%s: truncate %s from %d to %d bytes", class, rel, len(b), n)
		err = os.Truncate(p, int64(n))
	case "delete":
		t.Fault = fmt.Sprintf("%s: delete %s", class, rel)
		err = os.Remove(p)
	}
	if err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	ok := c.checkSavesets(t, d, "f")
	switch {
	case t.Outcome != "":
	case ok:
		t.Outcome = Harmless
	default:
		t.Outcome = Detected
	}
}

// killFault starts a backup of big, kills it (and its process group) with
// SIGKILL at a random moment, then checks that savesets 1 and 2 still
// restore exactly and that a new backup works and restores exactly.
func (c *campaign) killFault(t *Trial, d *trialDir) {
	if err := copyTree(c.golden, d.home); err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	delay := time.Duration(c.rng.Int64N(int64(c.backupTime)*12/10 + 1))
	t.Fault = fmt.Sprintf("kill -9 of `kura backup %s` after %v (an undisturbed backup takes %v)", c.big, delay.Round(time.Millisecond), c.backupTime.Round(time.Millisecond))
	cmd := exec.Command(c.kura, "backup", c.big)
	cmd.Env = c.baseEnv(d.home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	time.Sleep(delay) // the fault's moment, not synchronisation
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	err := cmd.Wait()
	exit := exitCode(err)
	if exit == -1 {
		exit = -9 // killed by the signal
	}
	t.Commands = append(t.Commands, Command{Args: []string{"backup", c.big, "(kill -9)"}, Exit: exit, Seconds: delay.Seconds()})
	// The kill is not a report: all must be well afterwards (harmless),
	// anything else is detected and counted as lost.
	c.afterDisaster(t, d, false)
}

// afterDisaster checks what must hold after a crash or a full disk: the
// earlier savesets restore exactly and a new backup of big works and restores
// exactly. reported says whether the disaster itself was reported (the
// killed or failing command exited non-zero).
func (c *campaign) afterDisaster(t *Trial, d *trialDir, reported bool) {
	ok := c.checkSavesets(t, d, "k")
	if t.Outcome != "" {
		return
	}
	if !ok {
		t.Lost = true
		t.Detail += "an earlier saveset no longer restores exactly or verifies; "
	}
	r := c.kuraCmd(t, d.home, nil, "backup", "--json", c.big)
	if r.Exit == -1 {
		t.Outcome = Hang
		return
	}
	if r.Exit != 0 {
		t.Lost = true
		t.Detail += "a new backup fails; "
	} else {
		var res struct {
			SavesetID int64 `json:"saveset_id"`
		}
		json.Unmarshal([]byte(r.stdout), &res)
		to := d.target("target-new")
		rr := c.kuraCmd(t, d.home, nil, "restore", fmt.Sprint(res.SavesetID), "--to", to)
		if rr.Exit == -1 {
			t.Outcome = Hang
			return
		}
		got, err := snapshot(filepath.Join(to, strings.TrimPrefix(c.big, "/")))
		diff := ""
		if err != nil {
			diff = err.Error()
		} else {
			diff = c.bigTree.diff(got)
		}
		os.RemoveAll(to)
		switch {
		case diff != "" && rr.Exit == 0:
			t.Outcome = Silent
			t.Detail += "the new backup's restore exited 0 but differs: " + diff + "; "
			return
		case diff != "" || rr.Exit != 0:
			t.Lost = true
			t.Detail += "the new backup does not restore; "
		}
	}
	switch {
	case t.Lost || reported:
		t.Outcome = Detected
	default:
		t.Outcome = Harmless
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -2
}

// copyTree copies a folder (files, folders, symlinks; modes and the
// modification times of files and folders kept).
func copyTree(from, to string) error {
	type dirTime struct {
		path string
		mt   time.Time
	}
	var dirs []dirTime
	err := filepath.WalkDir(from, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		info, err := de.Info()
		if err != nil {
			return err
		}
		switch {
		case de.IsDir():
			dirs = append(dirs, dirTime{dst, info.ModTime()})
			return os.MkdirAll(dst, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, dst)
		case info.Mode().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
			return os.Chtimes(dst, info.ModTime(), info.ModTime())
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].mt, dirs[i].mt); err != nil {
			return err
		}
	}
	return nil
}
