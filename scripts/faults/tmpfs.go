package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// tmpfsFault puts the home (tmpfs-home) or the library (tmpfs-library) on a
// tmpfs with little room beyond what the golden home uses, backs up big
// (which does not fit, or only just), then checks the earlier savesets;
// then grows the tmpfs and checks that a new backup works. Root only.
func (c *campaign) tmpfsFault(t *Trial, d *trialDir, kind string) {
	if os.Geteuid() != 0 {
		t.Outcome, t.Detail = Skipped, "needs root to mount a tmpfs"
		return
	}
	mnt := d.home
	if kind == "tmpfs-library" {
		mnt = filepath.Join(d.home, "vtl", "default")
		// The home outside the library is an ordinary copy.
		if err := copyTree(c.golden, d.home); err != nil {
			t.Outcome, t.Detail = Skipped, err.Error()
			return
		}
		os.RemoveAll(mnt)
	}
	used := diskUse(filepath.Join(c.golden, mustRel(d.home, mnt)))
	bigSize := diskUse(c.big)
	room := 64<<10 + c.rng.Int64N(bigSize/2)
	size := (used + room + 4095) &^ 4095
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Outcome, t.Detail = Skipped, fmt.Sprintf("mount tmpfs: %v: %s", err, out)
		return
	}
	defer exec.Command("umount", "-l", mnt).Run()
	if err := copyTree(filepath.Join(c.golden, mustRel(d.home, mnt)), mnt); err != nil {
		t.Outcome, t.Detail = Skipped, "copy into the tmpfs: "+err.Error()
		return
	}
	t.Fault = fmt.Sprintf("%s: a tmpfs of %d bytes (%d free) under %s, then `kura backup` of %d bytes", kind, size, size-used, mustRel(d.root, mnt), bigSize)
	r := c.kuraCmd(t, d.home, nil, "backup", c.big)
	if r.Exit == -1 {
		t.Outcome = Hang
		return
	}
	// With the disk still full a restore may refuse (it records a job), but
	// it must never say OK about a wrong tree; the strict checks follow
	// once there is room again.
	if !c.checkSavesets(t, d, "full") {
		if t.Outcome != "" {
			return
		}
		t.Detail += "with the disk still full, a restore or verify of an earlier saveset failed; "
	}
	if out, err := exec.Command("mount", "-o", "remount,size=1g", mnt).CombinedOutput(); err != nil {
		t.Outcome, t.Detail = Skipped, fmt.Sprintf("remount: %v: %s", err, out)
		return
	}
	c.afterDisaster(t, d, r.Exit != 0)
}

func mustRel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		panic(err)
	}
	return r
}

// diskUse is the bytes a tree takes on a file system with 4 KiB pages.
func diskUse(root string) int64 {
	var n int64
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := de.Info(); err == nil {
			n += (info.Size() + 4095) &^ 4095
		}
		return nil
	})
	return n
}
