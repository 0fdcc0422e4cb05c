package restorer

import (
	"path"
	"strings"

	"github.com/kura-backup/kura/internal/index"
)

// Selection says which entries of a saveset a restore writes: every entry
// an include pattern selects and every entry an exact path names. With
// neither, everything.
//
// The two differ in how they read a name. An include ("--include") is a
// convenience for a person typing: a path, or a glob matched against the
// whole path and against the base name, so "*.txt" finds text files at any
// depth and "etc" also selects a folder named etc deeper down. An exact
// path ("--path", and what the console's ticks send) is taken literally:
// "srv/a*" is the file named "a*" and nothing else, and "etc" is the
// top-level etc alone; a folder means its whole subtree.
type Selection struct {
	Includes []string // --include: paths or globs
	Paths    []string // --path: exact paths, relative as in the index (rules.RestorePath)
}

// All reports whether the selection is everything.
func (s Selection) All() bool { return len(s.Includes) == 0 && len(s.Paths) == 0 }

// Selects reports whether index path p is selected.
func (s Selection) Selects(p string) bool {
	if s.All() {
		return true
	}
	for _, pat := range s.Includes {
		if IncludedBy(p, pat) {
			return true
		}
	}
	for _, lit := range s.Paths {
		if PathSelects(p, lit) {
			return true
		}
	}
	return false
}

// matcher is a Selection made ready for a walk over an index: the exact
// paths in a set, so that a console restore of a thousand ticked files
// costs each entry a look-up per level of its path, not a thousand
// comparisons.
type matcher struct {
	all      bool
	includes []string
	paths    map[string]bool
}

func (s Selection) matcher() *matcher {
	m := &matcher{all: s.All(), includes: s.Includes, paths: map[string]bool{}}
	for _, lit := range s.Paths {
		lit = strings.Trim(lit, "/")
		if lit == "" {
			m.all = true
		}
		m.paths[lit] = true
	}
	return m
}

// selects is Selection.Selects.
func (m *matcher) selects(p string) bool {
	if m.all {
		return true
	}
	for _, pat := range m.includes {
		if IncludedBy(p, pat) {
			return true
		}
	}
	if len(m.paths) == 0 {
		return false
	}
	for q := p; ; {
		if m.paths[q] {
			return true
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			return false
		}
		q = q[:i]
	}
}

// A Pick is one include pattern or one exact path of a selection.
type Pick struct {
	Value   string
	Literal bool // an exact path (--path), not an include pattern
}

// Selects reports whether the pick selects index path p.
func (k Pick) Selects(p string) bool {
	if k.Literal {
		return PathSelects(p, k.Value)
	}
	return IncludedBy(p, k.Value)
}

// String is the pick as a user gives it: "--include PAT" or "--path /P".
func (k Pick) String() string {
	if k.Literal {
		return "--path " + index.DisplayPath(strings.Trim(k.Value, "/"))
	}
	return "--include " + k.Value
}

// Picks lists the includes, then the exact paths.
func (s Selection) Picks() []Pick {
	out := make([]Pick, 0, len(s.Includes)+len(s.Paths))
	for _, p := range s.Includes {
		out = append(out, Pick{Value: p})
	}
	for _, p := range s.Paths {
		out = append(out, Pick{Value: p, Literal: true})
	}
	return out
}

// PathSelects reports whether the exact path lit names index path p: p is
// lit or lies below it. Nothing in lit is a pattern; a leading or trailing
// '/' is ignored.
func PathSelects(p, lit string) bool {
	lit = strings.Trim(lit, "/")
	return lit == "" || p == lit || strings.HasPrefix(p, lit+"/")
}

// IncludedBy reports whether one --include pattern selects index path p:
// a pattern selects a path equal to it or below it, or matching it as a
// glob (against the whole path or the base name).
func IncludedBy(p, pat string) bool {
	pat = strings.Trim(pat, "/")
	if pat == "" || p == pat || strings.HasPrefix(p, pat+"/") {
		return true
	}
	if ok, _ := path.Match(pat, p); ok {
		return true
	}
	ok, _ := path.Match(pat, path.Base(p))
	return ok
}

// A Tally walks an index with a selection and notes which of its picks
// select something, so that a restore can say which select nothing.
type Tally struct {
	sel    Selection
	m      *matcher
	incHit []bool
	litHit map[string]bool
}

// Tally starts a count of what the selection's picks select.
func (s Selection) Tally() *Tally {
	t := &Tally{sel: s, m: s.matcher(), incHit: make([]bool, len(s.Includes)), litHit: map[string]bool{}}
	for lit := range t.m.paths {
		t.litHit[lit] = false
	}
	return t
}

// Add reports whether index path p is selected and notes the picks that
// select it. Only a file's answer needs every pick: for other entries an
// include that has already selected something is not tried again.
func (t *Tally) Add(p string, file bool) bool {
	in := t.m.all
	for i, pat := range t.sel.Includes {
		if (!t.incHit[i] || (!in && file)) && IncludedBy(p, pat) {
			t.incHit[i], in = true, true
		}
	}
	if len(t.litHit) > 0 {
		for q := p; ; {
			if _, ok := t.litHit[q]; ok {
				t.litHit[q], in = true, true
			}
			i := strings.LastIndexByte(q, '/')
			if i < 0 {
				break
			}
			q = q[:i]
		}
	}
	return in
}

// Unmatched lists the picks that have selected nothing, includes first.
func (t *Tally) Unmatched() []Pick {
	var out []Pick
	for i, pat := range t.sel.Includes {
		if !t.incHit[i] {
			out = append(out, Pick{Value: pat})
		}
	}
	for _, lit := range t.sel.Paths {
		if !t.litHit[strings.Trim(lit, "/")] {
			out = append(out, Pick{Value: lit, Literal: true})
		}
	}
	return out
}
