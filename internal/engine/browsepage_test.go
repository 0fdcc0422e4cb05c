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

		// Newest first: the second saveset's matches, then the first's,
		// each in index order.
		newest := append(append([]engine.Match{}, found[25:]...), found[:25]...)
		for _, c := range []struct {
			spec engine.FindSpec
			want []engine.Match
		}{
			{engine.FindSpec{Pattern: "f[0-9][0-9]"}, found},
			{engine.FindSpec{Pattern: "f[0-9][0-9]", NewestFirst: true}, newest},
		} {
			var matches []engine.Match
			var cur engine.FindCursor
			for pages := 0; ; pages++ {
				p, err := env.FindPage(c.spec, cur, limit, nil)
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
			if len(matches) != len(c.want) {
				t.Fatalf("%+v limit %d: %d matches, want %d", c.spec, limit, len(matches), len(c.want))
			}
			for i := range c.want {
				if matches[i].SavesetID != c.want[i].SavesetID || matches[i].Entry.Path != c.want[i].Entry.Path {
					t.Fatalf("%+v limit %d: match %d is %d %s, want %d %s", c.spec, limit, i, matches[i].SavesetID, matches[i].Entry.Path,
						c.want[i].SavesetID, c.want[i].Entry.Path)
				}
			}
		}
	}
}

// A search of one client's savesets reads only theirs.
func TestFindOneClient(t *testing.T) {
	env := newEnv(t)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "report.odt"), []byte("x"), 0o644))
	mine := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	env.Client = "c2"
	theirs := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	env.Client = ""
	for _, c := range []struct {
		client string
		want   []int64
	}{{"", []int64{theirs, mine}}, {"c2", []int64{theirs}}, {"c3", nil}} {
		p, err := env.FindPage(engine.FindSpec{Pattern: "report", Client: c.client, NewestFirst: true}, engine.FindCursor{}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, m := range p.Matches {
			if filepath.Base(m.Entry.Path) == "report.odt" {
				got = append(got, m.SavesetID)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("find report in client %q's savesets: savesets %v; want %v", c.client, got, c.want)
		}
	}
}
