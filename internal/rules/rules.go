// Package rules holds the values and checks that both sides of Kura's API
// agree on: backup levels, overwrite policies, frame size limits, client
// names and exclude patterns. It is a leaf: it imports nothing of Kura, so
// the wire types (internal/api) and the agent can check requests without
// the catalog, the engine or the stream code, and those packages define
// their own names from these.
package rules

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Levels of a backup.
const (
	LevelFull = "full"
	LevelIncr = "incr" // relative to the newest complete saveset of any level
	LevelDiff = "diff" // relative to the newest complete full
)

// Overwrite policies of a restore.
const (
	OverwriteNever  = "never"
	OverwriteOlder  = "older"
	OverwriteAlways = "always"
)

// Frame size limits: frames are at least 64 KiB (smaller ones cost ratio
// and per-frame overhead) and at most 32 MiB (the reader's memory bound).
const (
	MinFrameSize = 64 << 10
	MaxFrameSize = 32 << 20
)

// MaxClientNameLen is the longest client name ClientName accepts.
const MaxClientNameLen = 64

// ClientName checks a client name: 1 to MaxClientNameLen characters, each
// a letter, digit, '.', '_' or '-', not starting with '.' or '-'.
func ClientName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("client name %q %s", name, why)
	}
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > MaxClientNameLen:
		return bad(fmt.Sprintf("is longer than %d characters", MaxClientNameLen))
	case name[0] == '.' || name[0] == '-':
		return bad(fmt.Sprintf("starts with %q", name[0]))
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-' {
			continue
		}
		return bad("may hold only letters, digits, '.', '_' and '-'")
	}
	return nil
}

// ExcludePattern reports whether p is a usable exclude pattern:
//
//   - a pattern without '/' ("*.tmp", ".cache") is matched with
//     filepath.Match against the base name of every path component, so it
//     excludes a matching file or directory (and its subtree) anywhere;
//   - a pattern with '/' must be absolute and clean ("/home/*/.cache") and is
//     matched against the whole absolute path, '*' never crossing a '/';
//   - an absolute pattern may end in "/**" ("/var/tmp/**"): it excludes
//     everything below the directories it names, which are themselves kept
//     (as empty directories). "**" is allowed nowhere else.
func ExcludePattern(p string) error {
	if p == "" {
		return errors.New("empty exclude pattern")
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("exclude pattern %q: contains a NUL byte", p)
	}
	core := p
	if strings.Contains(p, "/") {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("exclude pattern %q: a pattern with '/' must be an absolute path (or a base name without '/')", p)
		}
		core = strings.TrimSuffix(p, "/**")
		if core == "" {
			core = "/"
		}
		if path.Clean(core) != core {
			return fmt.Errorf("exclude pattern %q: not a clean path (no trailing '/', '//', '.' or '..')", p)
		}
	}
	if strings.Contains(core, "**") {
		return fmt.Errorf("exclude pattern %q: '**' is only allowed as a trailing \"/**\"", p)
	}
	if _, err := filepath.Match(core, ""); err != nil {
		return fmt.Errorf("exclude pattern %q: %w", p, err)
	}
	return nil
}

// MaxLabelLen is the longest saveset label, in bytes: it is stored in the
// stream's label frame, the index and the catalog.
const MaxLabelLen = 1024

// ErrLabel: a saveset label that is too long, holds a NUL or is not UTF-8.
var ErrLabel = errors.New("a label must be UTF-8 of at most 1024 bytes, without NUL")

// Label checks a saveset label, for a local backup and a server's request
// alike.
func Label(label string) error {
	if len(label) > MaxLabelLen || strings.IndexByte(label, 0) >= 0 || !utf8.ValidString(label) {
		return fmt.Errorf("%w (it has %d bytes)", ErrLabel, len(label))
	}
	return nil
}

// FrameSize checks a stream frame size (0: the default).
func FrameSize(n int) error {
	if n != 0 && (n < MinFrameSize || n > MaxFrameSize) {
		return fmt.Errorf("frame size %d is not between %d and %d", n, MinFrameSize, MaxFrameSize)
	}
	return nil
}

// RestorePath checks a literal path a restore selects (--path) and returns
// it as the index writes paths: relative, without a leading or trailing
// '/' ("/srv/a*/" is "srv/a*", the folder named "a*" under srv). It is
// taken literally — '*', '?' and '[' are characters of a name — so it
// must be clean: not empty or "/", no "//", "." or "..", no NUL.
func RestorePath(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("restore path %q: contains a NUL byte", p)
	}
	rel := strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
	if rel == "" {
		return "", fmt.Errorf("restore path %q: names no file or folder (leave it out to restore everything)", p)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return "", fmt.Errorf("restore path %q: not a clean path (no '//', '.' or '..')", p)
		}
	}
	return rel, nil
}
