package restorer_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/restorer"
)

// The paths of a saveset whose names an include pattern misreads: a top-level
// folder etc with a namesake deeper down, and names holding '*', '?' and '['.
var trickyIndex = []string{
	"etc", "etc/hosts",
	"srv", "srv/etc", "srv/etc/app.conf",
	"srv/data", "srv/data/a*", "srv/data/ab", "srv/data/a?", "srv/data/a[1]", "srv/data/a1",
}

func selected(sel restorer.Selection) []string {
	var out []string
	for _, p := range trickyIndex {
		if sel.Selects(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestExactPathsSelectWhatWasTicked: an exact path selects itself and what is
// below it, and nothing else; the same names as include patterns select more
// (the console's old bug: it sent ticks as includes).
func TestExactPathsSelectWhatWasTicked(t *testing.T) {
	for _, c := range []struct {
		tick        string
		exact, glob []string // selected by Paths, by Includes
	}{
		{"/etc", []string{"etc", "etc/hosts"},
			[]string{"etc", "etc/hosts", "srv/etc"}}, // the folder srv/etc, by its base name
		{"/srv/data/a*", []string{"srv/data/a*"},
			[]string{"srv/data/a*", "srv/data/ab", "srv/data/a?", "srv/data/a[1]", "srv/data/a1"}},
		{"/srv/data/a?", []string{"srv/data/a?"},
			[]string{"srv/data/a*", "srv/data/ab", "srv/data/a?", "srv/data/a1"}},
		{"/srv/data/a[1]", []string{"srv/data/a[1]"},
			[]string{"srv/data/a[1]", "srv/data/a1"}},
		{"srv/etc/", []string{"srv/etc", "srv/etc/app.conf"},
			[]string{"srv/etc", "srv/etc/app.conf"}},
	} {
		if got := selected(restorer.Selection{Paths: []string{c.tick}}); !slices.Equal(got, c.exact) {
			t.Errorf("--path %s selects %q; want %q", c.tick, got, c.exact)
		}
		if got := selected(restorer.Selection{Includes: []string{c.tick}}); !slices.Equal(got, c.glob) {
			t.Errorf("--include %s selects %q; want %q", c.tick, got, c.glob)
		}
	}
	if got := selected(restorer.Selection{}); !slices.Equal(got, trickyIndex) {
		t.Errorf("an empty selection selects %q; want everything", got)
	}
	// Both kinds: a path either selects is selected.
	both := restorer.Selection{Includes: []string{"app.conf"}, Paths: []string{"/srv/data/a*"}}
	if got, want := selected(both), []string{"srv/etc/app.conf", "srv/data/a*"}; !slices.Equal(got, want) {
		t.Errorf("--include app.conf --path /srv/data/a* selects %q; want %q", got, want)
	}
}

// TestTallyNamesThePicksThatSelectNothing: a restore warns of each include
// and path that selects nothing, by the flag a user gave.
func TestTallyNamesThePicksThatSelectNothing(t *testing.T) {
	sel := restorer.Selection{Includes: []string{"*.nope", "hosts"}, Paths: []string{"/srv/data/a*", "/srv/data/a", "/etc/hosts/x"}}
	tally := sel.Tally()
	var in []string
	for _, p := range trickyIndex {
		if tally.Add(p, !slices.Contains([]string{"etc", "srv", "srv/etc", "srv/data"}, p)) {
			in = append(in, p)
		}
	}
	if want := []string{"etc/hosts", "srv/data/a*"}; !slices.Equal(in, want) {
		t.Errorf("the tally selects %q; want %q", in, want)
	}
	var un []string
	for _, k := range tally.Unmatched() {
		un = append(un, k.String())
	}
	if want := []string{"--include *.nope", "--path /srv/data/a", "--path /etc/hosts/x"}; !slices.Equal(un, want) {
		t.Errorf("unmatched %q; want %q", un, want)
	}
}

// TestRestoreExactPaths restores through the restorer the files a console
// user ticks: the file named a* alone, not its glob's matches, and a
// folder with its subtree.
func TestRestoreExactPaths(t *testing.T) {
	src := t.TempDir()
	for _, name := range []string{"a*", "ab", "a[1]", "a1", "etc/x", "sub/etc/y"} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := &memStore{sets: map[int64]*memSaveset{7: produce(t, src)}}
	rel := strings.TrimPrefix(src, "/")
	for _, c := range []struct {
		opts restorer.Options
		want []string
	}{
		{restorer.Options{Paths: []string{"/" + rel + "/a*", rel + "/a[1]"}}, []string{"a*", "a[1]"}},
		{restorer.Options{Paths: []string{"/" + rel + "/etc/"}}, []string{"etc/x"}},
		{restorer.Options{Includes: []string{rel + "/a*"}}, []string{"a*", "a1", "a[1]", "ab"}},
	} {
		to := t.TempDir()
		c.opts.To = to
		if _, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7}, c.opts, restorer.Job{ID: 1}); err != nil {
			t.Fatal(err)
		}
		var got []string
		root := filepath.Join(to, src)
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				r, _ := filepath.Rel(root, p)
				got = append(got, r)
			}
			return nil
		})
		if !slices.Equal(got, c.want) {
			t.Errorf("restore of includes %q paths %q wrote %q; want %q", c.opts.Includes, c.opts.Paths, got, c.want)
		}
	}
}
