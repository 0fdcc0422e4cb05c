package index

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// hostilePaths are the four shapes of a bad entry a damaged or hostile
// index may hold, each at the head of a block (so the block directory names
// it) and inside one.
var hostilePaths = map[string]string{
	"dotdot":   "../escape",
	"absolute": "/etc/passwd",
	"nul":      "a\x00b",
	"70KB":     strings.Repeat("n", 70<<10),
}

// buildHostile writes entries with AddUnchecked and returns the file.
func buildHostile(t *testing.T, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, []byte("meta"))
	for i := range entries {
		if err := w.AddUnchecked(&entries[i]); err != nil {
			t.Fatalf("AddUnchecked(%.20q): %v", entries[i].Path, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// One bad entry costs that entry: the index opens, every other entry
// reads, the bad one is reported by Invalid (naming it, shortened), and
// Lookup, List and Subtree pass over it.
func TestInvalidEntrySkipped(t *testing.T) {
	defer func(n int) { blockEntries = n }(blockEntries)
	blockEntries = 2 // blocks of two entries: the bad one heads a block or not
	for name, bad := range hostilePaths {
		// With and without one more entry in front, the bad one heads a
		// block in one case and not in the other.
		for _, extra := range [][]string{nil, {"0"}} {
			t.Run(name, func(t *testing.T) {
				good := append(extra, "a", "b", "z", "c/d", "c/e")
				var all []Entry
				for _, p := range good {
					all = append(all, Entry{Path: p, Type: TypeFile})
				}
				all = append(all, Entry{Path: bad, Type: TypeFile})
				sortEntries(all)
				r := open(t, buildHostile(t, all))
				it := r.Iter()
				var got []string
				var invalid []InvalidEntry
				for it.Next() {
					got = append(got, it.Entry().Path)
					invalid = append(invalid, it.Invalid()...)
				}
				invalid = append(invalid, it.Invalid()...)
				if err := it.Err(); err != nil {
					t.Fatalf("reading an index with one bad entry: %v", err)
				}
				if strings.Join(got, ",") != strings.Join(good, ",") {
					t.Errorf("read %q, want %q", got, good)
				}
				if len(invalid) != 1 || invalid[0].Path != bad || !errors.Is(invalid[0], ErrInvalid) {
					t.Fatalf("Invalid() = %v, want the bad entry", invalid)
				}
				if msg := invalid[0].Error(); len(msg) > 400 || !strings.Contains(msg, ShortPath(bad)) {
					t.Errorf("message %.500q does not name the entry briefly", msg)
				}
				if _, ok, err := r.Lookup(bad); ok || err != nil {
					t.Errorf("Lookup of the bad entry: %v %v", ok, err)
				}
				for _, p := range good {
					if _, ok, err := r.Lookup(p); !ok || err != nil {
						t.Errorf("Lookup(%q): %v %v", p, ok, err)
					}
				}
				if l, err := r.List("c"); err != nil || len(l) != 2 {
					t.Errorf("List(c) = %v, %v", l, err)
				}
				if l, err := r.List(""); err != nil || len(l) != 3+len(extra) {
					t.Errorf("List() = %v, %v", l, err)
				}
			})
		}
	}
}

// A link longer than MaxPath makes its entry invalid, not the block.
func TestInvalidLinkSkipped(t *testing.T) {
	long := strings.Repeat("l", MaxPath+1)
	r := open(t, buildHostile(t, []Entry{
		{Path: "a", Type: TypeFile},
		{Path: "b", Type: TypeSymlink, Link: long},
		{Path: "c", Type: TypeFile},
	}))
	got, err := readAll(r)
	if err != nil || len(got) != 2 || got[0].Path != "a" || got[1].Path != "c" {
		t.Fatalf("read %v, %v", got, err)
	}
}

func sortEntries(es []Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && Compare(es[j-1].Path, es[j].Path) > 0; j-- {
			es[j-1], es[j] = es[j], es[j-1]
		}
	}
}
