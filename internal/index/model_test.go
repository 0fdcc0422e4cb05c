package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// modelTree returns about n entries of a tree with a few huge directories,
// many small ones, deep chains and names that test the '/'-sorts-first rule
// ("x", "x-1", "x.y", "x/…"), in index order.
func modelTree(rng *rand.Rand, n int) []Entry {
	seen := map[string]bool{}
	dirs := []string{""}
	var out []Entry
	add := func(parent string, typ Type) string {
		for {
			name := fmt.Sprintf("%c%s%d", "abx"[rng.IntN(3)], []string{"", "-1", ".y", "-", "0"}[rng.IntN(5)], rng.IntN(n))
			if rng.IntN(4) == 0 {
				name = name[:1+rng.IntN(len(name))]
			}
			p := name
			if parent != "" {
				p = parent + "/" + name
			}
			if seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, Entry{Path: p, Type: typ, Size: int64(len(out)), Inode: uint64(len(out))})
			return p
		}
	}
	for range n / 100 {
		parent := dirs[rng.IntN(len(dirs))]
		if last := dirs[len(dirs)-1]; rng.IntN(3) == 0 && strings.Count(last, "/") < 40 {
			parent = last // deep chains
		}
		dirs = append(dirs, add(parent, TypeDir))
	}
	big := dirs[:6]
	for len(out) < n {
		parent := dirs[rng.IntN(len(dirs))]
		if rng.IntN(2) == 0 {
			parent = big[rng.IntN(len(big))]
		}
		add(parent, TypeFile)
	}
	slices.SortFunc(out, func(a, b Entry) int { return Compare(a.Path, b.Path) })
	return out
}

func paths(es []Entry) []string {
	var p []string
	for _, e := range es {
		p = append(p, e.Path)
	}
	return p
}

// TestModel checks List, Lookup and Subtree of a 200k-entry index against a
// brute-force model.
func TestModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	all := modelTree(rng, 200_000)
	r := open(t, build(t, nil, nil, all))

	children := map[string][]string{}
	var dirs []string
	parents := make([]string, len(all))
	for i, e := range all {
		d, _ := split(e.Path)
		parents[i] = d
		children[d] = append(children[d], e.Path)
		if e.Type == TypeDir {
			dirs = append(dirs, e.Path)
		}
	}
	// Directories to ask about: the root, the biggest, a random sample,
	// files (no children), absent ones and ones that share a prefix.
	ask := []string{"", "zz", "a/nothing", "a", "b", "x"}
	for d, c := range children {
		if len(c) > 3000 {
			ask = append(ask, d)
		}
	}
	for range 100 {
		d := dirs[rng.IntN(len(dirs))]
		ask = append(ask, d, d+"-1", d+"0", all[rng.IntN(len(all))].Path)
	}
	for _, d := range ask {
		got, err := r.List(d)
		if err != nil {
			t.Fatalf("List(%q): %v", d, err)
		}
		if g, w := paths(got), children[d]; !slices.Equal(g, w) {
			t.Fatalf("List(%q): %d entries, want %d\n got %.5q\nwant %.5q", d, len(g), len(w), g, w)
		}
	}

	for i := range 25 {
		d := dirs[rng.IntN(len(dirs))]
		if i == 0 {
			d = ""
		}
		var want []string
		for i, e := range all {
			parent := parents[i]
			if d == "" || parent == d || strings.HasPrefix(parent, d+"/") {
				want = append(want, e.Path)
			}
		}
		var got []string
		it := r.Subtree(d)
		for it.Next() {
			got = append(got, it.Entry().Path)
		}
		if it.Err() != nil {
			t.Fatalf("Subtree(%q): %v", d, it.Err())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Subtree(%q): %d entries, want %d", d, len(got), len(want))
		}
	}

	for range 250 {
		e := all[rng.IntN(len(all))]
		g, ok, err := r.Lookup(e.Path)
		if err != nil || !ok || !equalEntry(g, e) {
			t.Fatalf("Lookup(%q) = %+v, %v, %v", e.Path, g, ok, err)
		}
		for _, absent := range []string{e.Path + "0", e.Path + "/x", e.Path[:len(e.Path)-1] + "~"} {
			if _, ok, err := r.Lookup(absent); err != nil || (ok != slices.Contains(children[func() string { d, _ := split(absent); return d }()], absent)) {
				t.Fatalf("Lookup(%q) = %v, %v", absent, ok, err)
			}
		}
	}
	for _, bad := range []string{"/", "a//b", "a/"} {
		if _, err := r.List(bad); err == nil {
			t.Errorf("List(%q) = nil error", bad)
		}
	}
}
