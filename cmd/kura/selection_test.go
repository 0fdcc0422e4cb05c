package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type selectionOut struct {
	Name     string    `json:"name"`
	Client   string    `json:"client"`
	Paths    []string  `json:"paths"`
	Excludes []string  `json:"excludes"`
	Created  time.Time `json:"created"`
}

type lsEntry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size_bytes"`
}

// lsNames lists a saveset folder and returns the base names in it.
func (k *kura) lsNames(id int64, dir string) []string {
	k.t.Helper()
	var entries []lsEntry
	k.json(0, &entries, "ls", itoa64(id), dir, "--json")
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Base(e.Path))
	}
	slices.Sort(names)
	return names
}

func TestSelectionSets(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{
		"keep.txt": "keep\n", "junk.tmp": "junk\n",
		"sub/keep2.txt": "keep too\n", "sub/also.tmp": "junk too\n",
	})

	r := k.ok("selection", "create", "nightly", src, "--exclude", "*.tmp")
	if !strings.Contains(r.stdout, "nightly") || !strings.Contains(r.stdout, src) {
		t.Errorf("create should confirm the name and the paths:\n%s", r)
	}
	// A second set of the same name is refused, and the first stays.
	k.expect(exitFailure, "selection", "create", "nightly", k.dir)

	var list []selectionOut
	k.json(0, &list, "selection", "list", "--json")
	if len(list) != 1 || list[0].Name != "nightly" || !slices.Equal(list[0].Paths, []string{src}) ||
		!slices.Equal(list[0].Excludes, []string{"*.tmp"}) || list[0].Created.IsZero() {
		t.Fatalf("selection list --json: %+v", list)
	}
	var one selectionOut
	k.json(0, &one, "selection", "show", "nightly", "--json")
	if one.Name != "nightly" || !slices.Equal(one.Paths, []string{src}) || !slices.Equal(one.Excludes, []string{"*.tmp"}) {
		t.Errorf("selection show --json: %+v", one)
	}
	show := k.ok("selection", "show", "nightly")
	if !strings.Contains(show.stdout, "+ "+src) || !strings.Contains(show.stdout, "- *.tmp") {
		t.Errorf("selection show should list + path and - exclude:\n%s", show)
	}

	f := k.backup("--selection", "nightly")
	if got, want := k.lsNames(f.SavesetID, indexPath(src)), []string{"keep.txt", "sub"}; !slices.Equal(got, want) {
		t.Errorf("ls of the backed-up folder: %v, want %v (no *.tmp)", got, want)
	}
	if got, want := k.lsNames(f.SavesetID, indexPath(src)+"/sub"), []string{"keep2.txt"}; !slices.Equal(got, want) {
		t.Errorf("ls of sub: %v, want %v (no *.tmp)", got, want)
	}
	if f.SourceBytes != int64(len("keep\n")+len("keep too\n")) {
		t.Errorf("source_bytes %d: the excluded files were read", f.SourceBytes)
	}

	k.ok("selection", "rm", "nightly")
	k.json(0, &list, "selection", "list", "--json")
	if len(list) != 0 {
		t.Errorf("after rm, selection list --json: %+v, want []", list)
	}
	k.expect(exitUsage, "selection", "show", "nightly") // gone: no such selection
	k.expect(exitUsage, "backup", "--selection", "nightly")
	// Its saveset stays.
	if got := k.lsNames(f.SavesetID, indexPath(src)); !slices.Contains(got, "keep.txt") {
		t.Errorf("the saveset of a removed selection should stay: ls %v", got)
	}
}
