package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
)

// A saveset whose index holds one bad entry (here a name with a NUL byte,
// slipped into the cached index of a real backup) still lists and
// restores: the bad entry is named on stderr, everything else is there,
// and the command exits 3.
func TestBadIndexEntryListsAndRestoresTheRest(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "bee\n"}
	writeTree(t, src, files)
	id := k.backup(src).SavesetID

	// Rewrite the cached index with the bad entry added beside a.txt.
	idxFile := filepath.Join(home.IndexDir(k.home), fmt.Sprintf("%d.idx", id))
	r, err := index.OpenFile(idxFile)
	if err != nil {
		t.Fatal(err)
	}
	bad := indexPath(src) + "/bad\x00name"
	var buf bytes.Buffer
	w := index.NewWriter(&buf, nil)
	it := r.Iter()
	added := false
	for it.Next() {
		e := *it.Entry()
		if !added && index.Less(bad, e.Path) {
			must(t, w.AddUnchecked(&index.Entry{Path: bad, Type: index.TypeFile, Mode: 0o644}))
			added = true
		}
		must(t, w.AddUnchecked(&e))
	}
	must(t, it.Err())
	w.SetFrames(r.Frames())
	must(t, w.SetMeta(r.Meta()))
	must(t, w.Close())
	r.Close()
	must(t, os.WriteFile(idxFile, buf.Bytes(), 0o600))

	ls := k.expect(exitWarnings, "ls", itoa64(id), "/"+indexPath(src))
	if !strings.Contains(ls.stdout, "a.txt") || !strings.Contains(ls.stdout, "sub") ||
		!strings.Contains(ls.stderr, `bad\x00name`) {
		t.Errorf("ls: %s", ls)
	}
	to := filepath.Join(k.dir, "to")
	res := k.expect(exitWarnings, "restore", itoa64(id), "--to", to)
	if !strings.Contains(res.stdout+res.stderr, `bad\x00name`) {
		t.Errorf("restore names no bad entry: %s", res)
	}
	for name, content := range files {
		if b, err := os.ReadFile(filepath.Join(restoredAt(to, src), name)); err != nil || string(b) != content {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
