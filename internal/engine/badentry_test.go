package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
)

// badNames are the four shapes of a bad entry the fault campaign found:
// each made the whole index unreadable (and tape scan refuse the saveset).
var badNames = map[string]struct{ name, find string }{
	"dotdot":   {"../escape", "escape"},
	"absolute": {"/etc/passwd-x", "passwd-x"},
	"nul":      {"bad\x00name", "name"},
	"70KB":     {strings.Repeat("n", 70<<10), "nnnnnnnn"},
}

func sortCrafted(es []crafted) {
	sort.Slice(es, func(i, j int) bool { return index.Less(es[i].Path, es[j].Path) })
}

// restoreHostile restores saveset id into a fresh target and checks that
// it ends with warnings (exit 3), one naming want, that every file of
// good restored with its content, and that nothing was written beside the
// target.
func restoreHostile(t *testing.T, env *engine.Env, id int64, want string, good map[string]string) {
	t.Helper()
	base := t.TempDir()
	to := filepath.Join(base, "a", "target")
	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if !errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("restore: %v; want it to finish with warnings (exit 3)", err)
	}
	named := false
	for _, w := range res.Warnings {
		named = named || (strings.Contains(w, want) && strings.Contains(w, "skipped"))
		if len(w) > 1000 {
			t.Errorf("warning of %d bytes", len(w))
		}
	}
	if !named || len(res.Warnings) != 1 {
		t.Errorf("warnings %q; want one naming %.40s… as skipped", res.Warnings, want)
	}
	for p, content := range good {
		if b, err := os.ReadFile(filepath.Join(to, p)); err != nil || string(b) != content {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	for _, d := range []string{base, filepath.Join(base, "a")} {
		ents, _ := os.ReadDir(d)
		if len(ents) != 1 {
			t.Errorf("restore wrote beside its target in %s: %v", d, ents)
		}
	}
}

// An index entry with a bad path costs that entry, not the saveset:
// restore skips it with a warning naming it and restores the rest (exit
// 3), find names it, and tape scan rebuilds the saveset from its index.
func TestBadIndexEntrySkipped(t *testing.T) {
	for shape, bad := range badNames {
		t.Run(shape, func(t *testing.T) {
			env := newEnv(t)
			now := time.Now().UnixNano()
			es := []crafted{
				{Entry: index.Entry{Path: bad.name, Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "evil"},
				{Entry: index.Entry{Path: "z/a", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "a"},
				{Entry: index.Entry{Path: "z/b", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "b"},
			}
			sortCrafted(es)
			if es[0].Path != bad.name {
				t.Fatalf("the bad entry must head the index (and its block directory): %q", es[0].Path)
			}
			id := craftSaveset(t, env, es, true)
			good := map[string]string{"z/a": "a", "z/b": "b"}
			restoreHostile(t, env, id, index.ShortPath(bad.name), good)

			// ls lists the rest; find names the bad entry as skipped.
			if l, err := env.List(id, "z"); err != nil || len(l) != 2 {
				t.Errorf("ls z: %v %v", l, err)
			}
			err := env.Find(bad.find, func(engine.Match) error { return nil })
			if !errors.Is(err, engine.ErrWarnings) || !strings.Contains(err.Error(), index.ShortPath(bad.name)) {
				t.Errorf("find %q: %.300v; want a warning naming the bad entry", bad.find, err)
			}

			// Tape scan rebuilds the record from the index tape file.
			ss, err := env.Catalog.Saveset(id)
			must(t, err)
			must(t, env.Catalog.DeleteSaveset(id))
			must(t, os.Remove(filepath.Join(home.IndexDir(env.Home), fmt.Sprintf("%d.idx", id))))
			found, err := env.Scan(ss.IndexPart.Barcode)
			must(t, err)
			ok := false
			for _, f := range found {
				ok = ok || (f.Kind == "index" && f.SavesetID == id && f.Added)
			}
			if !ok {
				t.Fatalf("scan: %+v; want the saveset's index added", found)
			}
			restoreHostile(t, env, id, index.ShortPath(bad.name), good)
		})
	}
}

// A stream entry with a bad name (its index entry is fine) costs that
// file: restore names it as skipped and restores the files after it.
func TestBadStreamEntrySkipped(t *testing.T) {
	for shape, bad := range badNames {
		t.Run(shape, func(t *testing.T) {
			env := newEnv(t)
			now := time.Now().UnixNano()
			id := craftSaveset(t, env, []crafted{
				{Entry: index.Entry{Path: "z/a", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "a"},
				{Entry: index.Entry{Path: "z/b", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "evil", tarPath: bad.name},
				{Entry: index.Entry{Path: "z/c", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "c"},
			}, true)
			restoreHostile(t, env, id, "z/b: ", map[string]string{"z/a": "a", "z/c": "c"})
		})
	}
}
