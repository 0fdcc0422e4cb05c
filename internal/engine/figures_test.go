package engine_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
)

// The summary line and the phase line of a job say the same thing: a
// job of one phase shows the same files and media bytes in both, a copy
// job's phase counts the files it copied, and the saveset's media bytes
// (labels included) are the figure everywhere.
func TestSummaryAndPhaseFiguresAgree(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	for i, name := range []string{"a", "b", "sub/c"} {
		must(t, os.WriteFile(filepath.Join(src, name), []byte(strings.Repeat(name, 10000*(i+1))), 0o644))
	}
	agree := func(what string, f monitor.Figures) {
		t.Helper()
		if len(f.Phases) == 0 {
			t.Fatalf("%s: no phases in %+v", what, f)
		}
		p := f.Phases[0]
		if p.MediaBytes != f.MediaBytes || p.Files != f.Files || p.SourceBytes != f.SourceBytes {
			t.Errorf("%s: summary Files %d Source %d Media %d, phase %s Files %d Source %d Media %d",
				what, f.Files, f.SourceBytes, f.MediaBytes, p.Name, p.Files, p.SourceBytes, p.MediaBytes)
		}
		if p.CompressionRatio != f.CompressionRatio {
			t.Errorf("%s: summary ratio %s, phase ratio %s", what, f.CompressionRatio, p.CompressionRatio)
		}
		if f.Files == 0 || f.MediaBytes == 0 {
			t.Errorf("%s: nothing counted: %+v", what, f)
		}
	}
	full := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures
	agree("backup", full)
	if ss := saveset(t, env, full.SavesetID); ss.MediaBytes != full.MediaBytes {
		t.Errorf("saveset has %d media bytes, the job says %d", ss.MediaBytes, full.MediaBytes)
	}
	incr := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}).Figures
	agree("incremental", incr)

	cp := copySaveset(t, env, full.SavesetID, engine.CopyOptions{Library: "offsite"}).Figures
	if cp.Files != full.Files {
		t.Errorf("copy of a saveset of %d files says %d files", full.Files, cp.Files)
	}
	// A copy reads what it writes: its phase's source is the compressed
	// frames, so only files and media must agree with the summary.
	if p := cp.Phases[0]; p.Files != cp.Files || p.MediaBytes != cp.MediaBytes {
		t.Errorf("copy: summary Files %d Media %d, phase Files %d Media %d", cp.Files, cp.MediaBytes, p.Files, p.MediaBytes)
	}
}

// Warnings and problems name a file one way, absolute, whether the walk
// found it (a socket skipped), the restore (a directory in the way) or the
// verify (a file gone from disk), which know it by its index path.
func TestWarningPathsAreAbsolute(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "ok"), []byte("ok"), 0o644))
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	res, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}})
	if !errors.Is(err, engine.ErrWarnings) || len(res.Warnings) != 1 {
		t.Fatalf("backup: %v %q", err, res.Warnings)
	}
	if want := filepath.Join(src, "sock") + ": "; !strings.HasPrefix(res.Warnings[0], want) {
		t.Errorf("backup warning %q, want it to start %q", res.Warnings[0], want)
	}

	to := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(restored(to, src), "ok"), 0o755)) // in the way
	rr, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	if !errors.Is(err, engine.ErrWarnings) || len(rr.Warnings) != 1 {
		t.Fatalf("restore: %v %q", err, rr.Warnings)
	}
	if want := filepath.Join(src, "ok") + ": "; !strings.HasPrefix(rr.Warnings[0], want) {
		t.Errorf("restore warning %q, want it to start %q", rr.Warnings[0], want)
	}

	must(t, os.Remove(filepath.Join(src, "ok")))
	vr, err := env.Verify(context.Background(), res.Figures.SavesetID, engine.VerifyOptions{Level: engine.VerifySource})
	if !errors.Is(err, engine.ErrVerify) || len(vr.Problems) != 1 {
		t.Fatalf("verify: %v %+v", err, vr)
	}
	if got, want := vr.Problems[0].Path, filepath.Join(src, "ok"); got != want {
		t.Errorf("verify problem names %q, want %q", got, want)
	}
}

// "Files" means the saveset's files everywhere: the backup, kura
// savesets, a copy and a verify at every level (not the tape files a
// media verify read, nor only the regular files a data verify re-hashed).
func TestVerifyAndCopyCountTheSavesetsFiles(t *testing.T) {
	env := newEnv(t)
	createLibrary(t, env, library.Config{Name: "offsite"})
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub", "deeper"), 0o755))
	for _, name := range []string{"a", "b", "sub/c", "sub/deeper/d"} {
		must(t, os.WriteFile(filepath.Join(src, name), []byte(strings.Repeat(name, 5000)), 0o644))
	}
	must(t, os.Symlink("a", filepath.Join(src, "link")))
	full := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures
	id := full.SavesetID
	want := saveset(t, env, id).Files
	if want != full.Files || want < 8 {
		t.Fatalf("saveset of %d files, its backup says %d", want, full.Files)
	}
	for _, level := range []string{engine.VerifyMedia, engine.VerifyData, engine.VerifySource} {
		vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: level})
		if err != nil {
			t.Fatalf("verify %s: %v", level, err)
		}
		if vr.Checked != want || vr.Figures.Files != want || vr.Figures.Phases[0].Files != want {
			t.Errorf("verify %s of a saveset of %d files: %d checked, summary %d files, phase %d files",
				level, want, vr.Checked, vr.Figures.Files, vr.Figures.Phases[0].Files)
		}
	}
	cp := copySaveset(t, env, id, engine.CopyOptions{Library: "offsite", Verify: true}).Figures
	for _, p := range cp.Phases {
		if cp.Files != want || p.Files != want {
			t.Errorf("copy --verify of a saveset of %d files: summary %d, phase %s %d", want, cp.Files, p.Name, p.Files)
		}
	}
}
