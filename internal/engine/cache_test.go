package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
)

func cachePath(env *engine.Env, id int64) string {
	return filepath.Join(home.IndexDir(env.Home), fmt.Sprintf("%d.idx", id))
}

// damageCache flips one byte of a saveset's cached index where the index
// still opens (its header, footer and block directory are good) but one of
// its blocks is damaged: the damage only an iteration would meet.
func damageCache(t *testing.T, env *engine.Env, id int64) {
	t.Helper()
	p := cachePath(env, id)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for off := len(good) / 3; off < len(good); off++ {
		c := bytes.Clone(good)
		c[off] ^= 0x10
		must(t, os.WriteFile(p, c, 0o644))
		r, err := index.OpenFile(p)
		if err != nil {
			continue
		}
		cerr := r.Check()
		r.Close()
		if cerr != nil {
			return
		}
	}
	t.Fatal("found no byte of the cached index that damages a block only")
}

func oneWarning(t *testing.T, what string, err error, warnings []string, want string) {
	t.Helper()
	if !errors.Is(err, engine.ErrWarnings) {
		t.Errorf("%s: err %v, want ErrWarnings", what, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], want) {
		t.Errorf("%s: warnings %q, want one containing %q", what, warnings, want)
	}
}

// TestDamagedIndexCacheFallsBackToTape: a damaged cached index (HOME/index/
// N.idx) with an intact index tape file costs nothing: restore, verify,
// ls, find, copy and an incremental's base read the tape's index, rewrite the
// cache and say so with a warning. A missing cache is read back quietly.
func TestDamagedIndexCacheFallsBackToTape(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for i := range 3000 {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("file-%04d.txt", i)), []byte(strings.Repeat(fmt.Sprint(i), 50)), 0o644))
	}
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	good, err := os.ReadFile(cachePath(env, id))
	if err != nil {
		t.Fatal(err)
	}
	healed := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(cachePath(env, id)); err != nil || !bytes.Equal(b, good) {
			t.Errorf("%s: the cache was not rewritten from the tape (%v)", what, err)
		}
	}
	const want = "cached index of saveset"

	damageCache(t, env, id)
	to := t.TempDir()
	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if res == nil {
		t.Fatalf("restore with a damaged cache: %v", err)
	}
	oneWarning(t, "restore", err, res.Warnings, want)
	if res.Figures.Files < 3000 {
		t.Errorf("restore: %d files, want all 3000", res.Figures.Files)
	}
	for _, i := range []int{0, 1234, 2999} {
		name := fmt.Sprintf("file-%04d.txt", i)
		b, err := os.ReadFile(filepath.Join(restored(to, src), name))
		if err != nil || string(b) != strings.Repeat(fmt.Sprint(i), 50) {
			t.Errorf("restored %s: %q, %v", name, b, err)
		}
	}
	healed("restore")

	damageCache(t, env, id)
	vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifyData})
	if vr == nil {
		t.Fatalf("verify with a damaged cache: %v", err)
	}
	oneWarning(t, "verify data", err, vr.Warnings, want)
	if len(vr.Problems) != 0 || vr.Checked != saveset(t, env, id).Files {
		t.Errorf("verify data: %d checked, problems %v", vr.Checked, vr.Problems)
	}
	healed("verify data")

	var notices []string
	env.Notice = func(m string) { notices = append(notices, m) }
	damageCache(t, env, id)
	if entries, err := env.List(id, src); err != nil || len(entries) != 3000 {
		t.Errorf("ls: %d entries, %v", len(entries), err)
	}
	damageCache(t, env, id)
	n := 0
	err = env.Find("file-12", func(engine.Match) error { n++; return nil })
	if err != nil || n != 100 {
		t.Errorf("find: %d matches, %v", n, err)
	}
	if len(notices) != 2 || !strings.Contains(notices[0], want) || !strings.Contains(notices[1], want) {
		t.Errorf("ls and find: notices %q, want one each", notices)
	}
	healed("find")

	// An incremental reads its base's index.
	damageCache(t, env, id)
	must(t, os.WriteFile(filepath.Join(src, "new.txt"), []byte("new"), 0o644))
	ires, err := env.Backup(context.Background(), engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr})
	if ires == nil {
		t.Fatalf("incremental with a damaged base cache: %v", err)
	}
	oneWarning(t, "incremental", err, ires.Warnings, want)
	healed("incremental")

	// A copy reads the saveset's index.
	createLibrary(t, env, library.Config{Name: "offsite"})
	damageCache(t, env, id)
	cres, err := env.Copy(context.Background(), id, engine.CopyOptions{Library: "offsite"})
	if cres == nil {
		t.Fatalf("copy: %v", err)
	}
	oneWarning(t, "copy", err, cres.Warnings, want)
	healed("copy")

	// A missing cache is read back without a warning.
	must(t, os.Remove(cachePath(env, id)))
	if _, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: t.TempDir()}); err != nil {
		t.Errorf("restore without a cache: %v", err)
	}
	healed("restore without a cache")

	// Media verify compares the cache with the tape: a cache that is a
	// good index, but not this saveset's, is replaced.
	must(t, os.WriteFile(cachePath(env, id), mustRead(t, cachePath(env, ires.Figures.SavesetID)), 0o644))
	vr, err = env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifyMedia})
	oneWarning(t, "verify media", err, vr.Warnings, "differs from the index tape file")
	if len(vr.Problems) != 0 {
		t.Errorf("verify media: problems %v", vr.Problems)
	}
	healed("verify media")
	vr, err = env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifyMedia})
	if err != nil || len(vr.Warnings) != 0 {
		t.Errorf("verify media of a healed cache: %v, warnings %q", err, vr.Warnings)
	}

	// With the index tape offline the damaged cache cannot be replaced: it
	// stays as it is (find reads the copy's index meanwhile).
	damageCache(t, env, id)
	damaged := mustRead(t, cachePath(env, id))
	own := saveset(t, env, id)
	exportAll(t, env, ownParts(own)...)
	n = 0
	if err := env.Find("file-12", func(engine.Match) error { n++; return nil }); err != nil || n < 100 {
		t.Errorf("find with the index tape exported: %d matches, %v", n, err)
	}
	if b, err := os.ReadFile(cachePath(env, id)); err != nil || !bytes.Equal(b, damaged) {
		t.Errorf("the damaged cache was touched although the tape could not replace it: %v", err)
	}
	importAll(t, env, ownParts(own)...)
	if _, err := env.List(id, src); err != nil {
		t.Errorf("ls with the tape back: %v", err)
	}
	healed("ls with the tape back")
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDamagedTapeLabel: one flipped bit in a tape's label leaves every
// saveset on it restorable (the label's copy stands in, or with both
// damaged the library's settings); verify reports the damage as a problem
// at every level, and the next backup to the tape rewrites the label.
func TestDamagedTapeLabel(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), []byte(strings.Repeat("x", 1000*i)), 0o644))
	}
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	ss, err := env.Catalog.Saveset(id)
	if err != nil {
		t.Fatal(err)
	}
	bc := ss.Parts[0].Barcode
	lib, err := env.LibraryOfTape(bc)
	if err != nil {
		t.Fatal(err)
	}
	label := filepath.Join(lib.Config().Dir, "tapes", bc, "label")
	good := mustRead(t, label)
	b := bytes.Clone(good)
	b[len(b)/2] ^= 0x01
	must(t, os.WriteFile(label, b, 0o644))

	readable := func(what, advice string) {
		t.Helper()
		for _, level := range []string{engine.VerifyMedia, engine.VerifyData} {
			vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: level})
			if !errors.Is(err, engine.ErrVerify) || vr == nil || len(vr.Problems) != 1 ||
				vr.Problems[0].Path != "tape "+bc || !strings.Contains(vr.Problems[0].Problem, advice) {
				t.Errorf("%s: verify %s: %v, %+v", what, level, err, vr)
			}
		}
		to := t.TempDir()
		restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
		if b, err := os.ReadFile(filepath.Join(restored(to, src), "f19")); err != nil || len(b) != 19000 {
			t.Errorf("%s: restored f19: %d bytes, %v", what, len(b), err)
		}
		if _, err := env.Recipe(id); err != nil {
			t.Errorf("%s: recipe: %v", what, err)
		}
	}
	readable("label damaged", "the next append to the tape rewrites it")
	// Both copies damaged: the library's own settings stand in.
	must(t, os.WriteFile(label+".copy", b, 0o644))
	readable("label and its copy damaged", "takes no more backups")
	must(t, os.WriteFile(label+".copy", good, 0o644))
	// The next backup appends to the tape and heals the label.
	must(t, os.WriteFile(filepath.Join(src, "new"), []byte("new"), 0o644))
	backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr})
	if vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifyMedia}); err != nil {
		t.Errorf("verify after the label was rewritten: %v %+v", err, vr.Problems)
	}
}
