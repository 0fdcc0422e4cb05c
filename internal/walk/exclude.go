package walk

import (
	"path/filepath"
	"strings"

	"github.com/kura-backup/kura/internal/rules"
)

// ValidatePattern reports whether p is a usable exclude pattern:
//
//   - a pattern without '/' ("*.tmp", ".cache") is matched with
//     filepath.Match against the base name of every path component, so it
//     excludes a matching file or directory (and its subtree) anywhere;
//   - a pattern with '/' must be absolute and clean ("/home/*/.cache") and is
//     matched against the whole absolute path, '*' never crossing a '/';
//   - an absolute pattern may end in "/**" ("/var/tmp/**"): it excludes
//     everything below the directories it names, which are themselves kept
//     (as empty directories). "**" is allowed nowhere else.
func ValidatePattern(p string) error { return rules.ExcludePattern(p) }

// excluder holds validated patterns split by kind.
type excluder struct {
	base  []string // matched against a base name
	path  []string // matched against an absolute path
	below []string // "X/**" as X, matched against the parent's absolute path
}

func newExcluder(patterns []string) (*excluder, error) {
	x := &excluder{}
	for _, p := range patterns {
		if err := ValidatePattern(p); err != nil {
			return nil, err
		}
		switch {
		case !strings.Contains(p, "/"):
			x.base = append(x.base, p)
		case strings.HasSuffix(p, "/**"):
			core := strings.TrimSuffix(p, "/**")
			if core == "" {
				core = "/"
			}
			x.below = append(x.below, core)
		default:
			x.path = append(x.path, p)
		}
	}
	return x, nil
}

// match reports whether the entry name at absolute path abs is excluded.
// The walk evaluates a path only after all its ancestors passed, so "X/**"
// needs to look at the parent alone.
func (x *excluder) match(name, abs string) bool {
	for _, p := range x.base {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	for _, p := range x.path {
		if ok, _ := filepath.Match(p, abs); ok {
			return true
		}
	}
	if len(x.below) > 0 {
		parent := filepath.Dir(abs)
		for _, p := range x.below {
			if ok, _ := filepath.Match(p, parent); ok {
				return true
			}
		}
	}
	return false
}
