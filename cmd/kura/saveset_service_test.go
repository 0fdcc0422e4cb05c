package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
)

// The saveset and selection verbs print the same and exit the same through
// a server as locally on the server's home: the listings and their --json
// forms, a folder and a search of more entries than a page (read page by
// page), the warnings of a damaged index, and the errors.
func TestSavesetVerbsSameThroughServerAndLocally(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)
	src := filepath.Join(local.dir, "src")
	files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "bee\n"}
	const many = 2*api.DefaultPageLimit + 500 // three pages
	for i := range many {
		files[fmt.Sprintf("many/f%04d", i)] = ""
	}
	writeTree(t, src, files)
	id := itoa64(local.backup(src).SavesetID)
	dir := "/" + indexPath(src)

	// A change through the server is seen locally, and the reverse.
	admin.ok("selection", "create", "docs", src, "--exclude", "*.tmp")
	local.ok("selection", "create", "more", filepath.Join(src, "sub"))
	if r := local.ok("selection", "show", "docs"); !strings.Contains(r.stdout, "- *.tmp") {
		t.Errorf("a selection created through the server is not shown locally:\n%s", r)
	}

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"savesets"}, 0},
		{[]string{"savesets", "--json"}, 0},
		{[]string{"savesets", "--status", "complete", "--selection", "nothing"}, 0},
		{[]string{"savesets", "--why"}, 0},
		{[]string{"savesets", "--why", "--json"}, 0},
		{[]string{"saveset", "show", id}, 0},
		{[]string{"saveset", "show", "--json", id}, 0},
		{[]string{"saveset", "show", "999"}, exitUsage},
		{[]string{"saveset", "recipe", id}, 0},
		{[]string{"saveset", "recipe", "--json", id}, 0},
		{[]string{"saveset", "recipe", "999"}, exitUsage},
		{[]string{"ls", id}, 0},
		{[]string{"ls", id, dir}, 0},
		{[]string{"ls", "--json", id, dir + "/sub"}, 0},
		{[]string{"ls", id, dir + "/a.txt"}, 0},
		{[]string{"ls", "999"}, exitUsage},
		{[]string{"ls", id, dir + "/nothing"}, exitFailure},
		{[]string{"find", "f0012"}, 0},
		{[]string{"find", "--newest-first", "a.txt"}, 0},
		{[]string{"find", "--json", "b.txt"}, 0},
		{[]string{"find", "no-such-name"}, 0},
		{[]string{"selection", "list"}, 0},
		{[]string{"selection", "list", "--json"}, 0},
		{[]string{"selection", "show", "--json", "more"}, 0},
		{[]string{"selection", "show", "nosel"}, exitUsage},
		{[]string{"selection", "rm", "nosel"}, exitUsage},
		{[]string{"selection", "create", "docs", src}, exitFailure},
		{[]string{"selection", "create", "", src}, exitUsage},
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	if r := admin.expect(exitUsage, "selection", "show", "nosel"); !strings.Contains(r.stderr, "(see `kura selection list`)") {
		t.Errorf("no hint where to look:\n%s", r)
	}
	var shown api.SavesetInfo
	if admin.json(0, &shown, "saveset", "show", "--json", id); itoa64(shown.ID) != id || shown.Status != "complete" || len(shown.Tapes) != 1 {
		t.Errorf("saveset show --json: %+v", shown)
	}
	if r := admin.ok("saveset", "show", id); !strings.Contains(r.stdout, "Status     complete") || !strings.Contains(r.stdout, "Path       "+src) {
		t.Errorf("saveset show:\n%s", r)
	}
	admin.ok("selection", "rm", "more")
	if r := local.ok("selection", "list"); strings.Contains(r.stdout, "more") {
		t.Errorf("a selection removed through the server is still listed locally:\n%s", r)
	}
	// --client is a field of the request: another client's savesets.
	if r := admin.ok("savesets", "--client", "nobody", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("savesets of a client with none:\n%s", r)
	}

	// A folder and a search larger than a page come whole, each entry
	// once, in order, the same both ways.
	ls := sameBothWays(t, local, admin, "ls", id, dir+"/many")
	if lines := strings.Split(strings.TrimSuffix(ls.stdout, "\n"), "\n"); len(lines) != many ||
		!strings.HasSuffix(lines[0], " f0000") || !strings.HasSuffix(lines[many-1], fmt.Sprintf(" f%04d", many-1)) {
		t.Errorf("ls of %d entries printed %d lines:\n%.500s", many, len(lines), ls.stdout)
	}
	var entries []api.Entry
	if err := json.Unmarshal([]byte(sameBothWays(t, local, admin, "ls", "--json", id, dir+"/many").stdout), &entries); err != nil || len(entries) != many {
		t.Errorf("ls --json: %d entries, %v", len(entries), err)
	}
	var matches []api.Match
	find := sameBothWays(t, local, admin, "find", "--json", "f*")
	if err := json.Unmarshal([]byte(find.stdout), &matches); err != nil || len(matches) != many {
		t.Fatalf("find --json: %d matches, %v", len(matches), err)
	}
	for i, m := range matches {
		if want := fmt.Sprintf("%s/many/f%04d", dir, i); m.Entry.Path != want || itoa64(m.SavesetID) != id {
			t.Fatalf("match %d: %+v, want %s", i, m, want)
		}
	}

	// An invalid entry in the index: left out and named, exit 3, the same
	// both ways.
	cache := filepath.Join(home.IndexDir(local.home), id+".idx")
	addBadEntry(t, cache, indexPath(src)+"/bad\x00name")
	for _, args := range [][]string{{"ls", id, dir}, {"find", "name"}, {"find", "--json", "bad"}} {
		r := sameBothWays(t, local, admin, args...)
		if r.code != exitWarnings || !strings.Contains(r.stderr, `bad\x00name`) {
			t.Errorf("want exit 3 naming the bad entry:\n%s", r)
		}
	}

	// A damaged cached index is rebuilt from tape; the notice that says so
	// comes back from the server and is printed as locally.
	var got []result
	for _, k := range []*kura{admin, local} {
		damage(t, cache)
		got = append(got, k.ok("ls", id, dir))
	}
	if !strings.Contains(got[0].stderr, "warning: the cached index of saveset "+id+" was damaged") ||
		got[0].stdout != got[1].stdout || got[0].stderr != got[1].stderr {
		t.Errorf("the notice of a rebuilt index differs:\n%s\n%s", got[0], got[1])
	}
}

// addBadEntry rewrites the index file at p with an entry at bad, a path
// that breaks the entry rules.
func addBadEntry(t *testing.T, p, bad string) {
	t.Helper()
	r, err := index.OpenFile(p)
	must(t, err)
	defer r.Close()
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
	must(t, os.WriteFile(p, buf.Bytes(), 0o600))
}

// damage flips a byte in the middle of a file.
func damage(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	b[len(b)/2] ^= 0xff
	must(t, os.WriteFile(p, b, 0o600))
}

// A name that is not valid UTF-8 is listed with its own bytes through a
// server as locally (JSON alone would turn them into U+FFFD), in text and
// in --json (path_bytes, link_bytes); a file with holes is listed sparse.
func TestListingKeepsNonUTF8NamesAndSparse(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)
	src := filepath.Join(local.dir, "src")
	writeTree(t, src, map[string]string{"caf\xe9": "coffee\n"})
	if err := os.Symlink("caf\xe9", filepath.Join(src, "to-cafe")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(src, "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("boot"), 32<<20)
	f.Close()
	var fig figures
	local.json(exitWarnings, &fig, "backup", src, "--json") // the name is not UTF-8: one warning
	id := itoa64(fig.SavesetID)
	dir := "/" + indexPath(src)

	r := sameBothWays(t, local, admin, "ls", id, dir)
	if !strings.Contains(r.stdout, "caf\xe9\n") || !strings.Contains(r.stdout, "to-cafe -> caf\xe9\n") {
		t.Errorf("ls does not name the file by its bytes:\n%s", r.stdout)
	}
	var entries []api.Entry
	if err := json.Unmarshal([]byte(sameBothWays(t, local, admin, "ls", "--json", id, dir).stdout), &entries); err != nil {
		t.Fatal(err)
	}
	got := map[string]api.Entry{}
	for _, e := range entries {
		got[e.FilePath()] = e
	}
	if _, ok := got[dir+"/caf\xe9"]; !ok {
		t.Errorf("ls --json: no entry whose path_bytes give caf\\xe9: %+v", entries)
	}
	if l := got[dir+"/to-cafe"]; l.LinkTarget() != "caf\xe9" {
		t.Errorf("ls --json: the symlink's target reads %q", l.LinkTarget())
	}
	if img := got[dir+"/disk.img"]; !img.Sparse || img.Size != 64<<20 {
		t.Errorf("ls --json: disk.img %+v, want sparse, 64 MiB", img)
	}
}
