package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
)

// A listing and a search read page by page, any page size, give exactly
// what one pass gives, each entry once and in order, across the savesets
// a search goes through.
func TestPagesGiveTheWholeListing(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	for i := range 25 {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), []byte("x"), 0o644))
	}
	id1 := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	must(t, os.WriteFile(filepath.Join(src, "f03"), []byte("changed"), 0o644))
	backup(t, env, engine.BackupOptions{Paths: []string{src}})

	all, err := env.List(id1, src)
	if err != nil || len(all) != 25 {
		t.Fatalf("List: %d entries, %v", len(all), err)
	}
	var found []engine.Match
	must(t, env.Find("f[0-9][0-9]", func(m engine.Match) error { found = append(found, m); return nil }))
	if len(found) != 50 {
		t.Fatalf("Find: %d matches, want 50", len(found))
	}
	for _, limit := range []int{1, 2, 7, 25, 26} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			p, err := env.ListPage(id1, src, after, limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) > limit || pages > 30 {
				t.Fatalf("limit %d: a page of %d entries, page %d", limit, len(p.Entries), pages)
			}
			for _, e := range p.Entries {
				got = append(got, e.Path)
			}
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		if len(got) != len(all) {
			t.Fatalf("limit %d: %d entries, want %d", limit, len(got), len(all))
		}
		for i := range all {
			if got[i] != all[i].Path {
				t.Fatalf("limit %d: entry %d is %s, want %s", limit, i, got[i], all[i].Path)
			}
		}

		var matches []engine.Match
		var cur engine.FindCursor
		for pages := 0; ; pages++ {
			p, err := env.FindPage("f[0-9][0-9]", cur, limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Matches) > limit || pages > 60 {
				t.Fatalf("limit %d: a page of %d matches, page %d", limit, len(p.Matches), pages)
			}
			matches = append(matches, p.Matches...)
			if p.Next == nil {
				break
			}
			cur = *p.Next
		}
		if len(matches) != len(found) {
			t.Fatalf("limit %d: %d matches, want %d", limit, len(matches), len(found))
		}
		for i := range found {
			if matches[i].SavesetID != found[i].SavesetID || matches[i].Entry.Path != found[i].Entry.Path {
				t.Fatalf("limit %d: match %d is %d %s, want %d %s", limit, i, matches[i].SavesetID, matches[i].Entry.Path,
					found[i].SavesetID, found[i].Entry.Path)
			}
		}
	}
}
