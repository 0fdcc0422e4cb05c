package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// resticAptInstall is how a missing restic is installed (Debian's package)
// when the benchmark runs as root.
const resticAptInstall = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq restic"

// resticVersion is restic's version from the first line of `restic version`,
// e.g. "restic 0.14.0 compiled with go1.19.8 on linux/amd64".
type resticVersion struct{ Major, Minor, Patch int }

func parseResticVersion(s string) (resticVersion, bool) {
	f := strings.Fields(s)
	if len(f) < 2 || f[0] != "restic" {
		return resticVersion{}, false
	}
	v := strings.TrimPrefix(f[1], "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return resticVersion{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return resticVersion{}, false
		}
		n[i] = x
	}
	return resticVersion{n[0], n[1], n[2]}, true
}

// compression reports whether this restic has --compression (0.14 and
// later, repository format 2).
func (v resticVersion) compression() bool { return v.Major > 0 || v.Minor >= 14 }

// resticCmd builds restic command lines for one repository.
type resticCmd struct {
	Repo, PasswordFile, CacheDir string
	Compression                  bool // pass --compression auto to backup
}

func (c resticCmd) global() []string {
	return []string{"restic", "--repo", c.Repo, "--password-file", c.PasswordFile, "--cache-dir", c.CacheDir, "--quiet"}
}

func (c resticCmd) init() []string { return append(c.global(), "init") }

func (c resticCmd) backup(src string) []string {
	argv := c.global()
	if c.Compression {
		argv = append(argv, "--compression", "auto")
	}
	return append(argv, "backup", src)
}

func (c resticCmd) restore(target string) []string {
	return append(c.global(), "restore", "latest", "--target", target)
}

// level is the compression asked of restic, for Run.Level.
func (c resticCmd) level() string {
	if c.Compression {
		return "auto"
	}
	return "none (restic < 0.14)"
}

// findRestic looks for restic and, when it is missing and the benchmark
// runs as root, installs Debian's package.
func (rn *runner) findRestic(ctx context.Context) Peer {
	p := lookPeer("restic", "version")
	if !p.Missing {
		return p
	}
	if os.Geteuid() != 0 {
		rn.res.Notes = append(rn.res.Notes, "restic not installed (not running as root, so not installed: apt-get install -y restic): its rows are missing")
		return p
	}
	rn.logf("restic not found: installing it (%s)", resticAptInstall)
	cmd := exec.CommandContext(ctx, "sh", "-c", resticAptInstall)
	if out, err := cmd.CombinedOutput(); err != nil {
		rn.res.Notes = append(rn.res.Notes, fmt.Sprintf("restic not installed (`%s` failed: %v: %s): its rows are missing", resticAptInstall, err, cell(tail(string(out)))))
		return p
	}
	if p = lookPeer("restic", "version"); p.Missing {
		rn.res.Notes = append(rn.res.Notes, "restic not installed (apt-get installed it, but it is not in PATH): its rows are missing")
		return p
	}
	rn.res.Notes = append(rn.res.Notes, "restic was not installed: installed Debian's package for this run (`"+resticAptInstall+"`)")
	return p
}

func (rn *runner) resticVersion() resticVersion {
	for _, p := range rn.res.Peers {
		if p.Name == ToolRestic && !p.Missing {
			v, _ := parseResticVersion(p.Version)
			return v
		}
	}
	return resticVersion{}
}

// resticCycle backs the set up into a fresh repository on the scratch disk
// and restores it: restic fsyncs its repository (durable), restic restore
// does not fsync the files it writes (a sync is timed after it).
func (rn *runner) resticCycle(ctx context.Context, si SetInfo, rep int) {
	base := Run{Test: TestPeers, Set: si.Name, Tool: ToolRestic, Rep: rep, Files: int64(si.Files), Bytes: si.Bytes}
	repo := filepath.Join(rn.o.Scratch, fmt.Sprintf("restic-%s-r%d", si.Name, rep))
	rc := resticCmd{Repo: repo, PasswordFile: repo + ".password", CacheDir: repo + ".cache", Compression: rn.resticVersion().compression()}
	defer func() {
		for _, p := range []string{repo, rc.PasswordFile, rc.CacheDir} {
			if err := os.RemoveAll(p); err != nil {
				rn.logf("removing %s: %v", p, err)
			}
		}
	}()
	b := base
	b.Phase, b.Level, b.Durable = PhaseBackup, rc.level(), true
	b.Command = rc.backup(filepath.Join(rn.o.Data, si.Name))
	for _, p := range []string{repo, rc.CacheDir} {
		_ = os.RemoveAll(p)
	}
	if err := os.WriteFile(rc.PasswordFile, []byte("kura-bench\n"), 0o600); err != nil {
		b.Error, b.ExitCode = "writing the password file: "+err.Error(), -1
		rn.add(b)
		return
	}
	// restic init: not timed.
	if p := rn.execute(ctx, rc.init(), nil, nil, nil); p.err != nil {
		b.Error, b.ExitCode = fmt.Sprintf("restic init: %v: %s", p.err, p.stderr), max(p.exit, 1)
		rn.add(b)
		return
	}
	b.ColdCache = rn.cold()
	p := rn.execute(ctx, b.Command, nil, nil, nil)
	p.apply(&b)
	b.OutBytes = dirSize(repo)
	if b.OutBytes > 0 {
		b.Ratio = fmt.Sprintf("%.2f:1", float64(b.Bytes)/float64(b.OutBytes))
	}
	b.setRates()
	rn.add(b)
	if !b.OK() {
		return
	}

	target := filepath.Join(rn.o.Scratch, fmt.Sprintf("restore-restic-%s-r%d", si.Name, rep))
	_ = os.RemoveAll(target)
	x := base
	x.Phase = PhaseRestore
	x.Command = rc.restore(target)
	x.ColdCache = rn.cold()
	p = rn.execute(ctx, x.Command, nil, nil, nil)
	p.apply(&x)
	x.SyncSeconds = timeSync()
	x.setRates()
	rn.add(x)
	rn.remove(si, ToolRestic, rep, target)
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
