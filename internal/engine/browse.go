package engine

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
)

// List returns the immediate children of dir in a saveset ("" or "/" is the
// top). Unchanged files of incrementals are listed like the others: a
// saveset's index describes the whole tree at its moment. Entries of a
// damaged or hostile index that break the entry rules are left out and
// named in an error wrapping ErrWarnings, returned with the others.
func (e *Env) List(id int64, dir string) ([]index.Entry, error) {
	ss, err := EnvStore{Env: e}.Saveset(id) // a copy when its own tapes are offline
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("saveset", "no saveset %d", id)
	}
	if err != nil {
		return nil, fmt.Errorf("saveset %d: %w", id, err)
	}
	r, err := e.openIndex(ss, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	dir = strings.Trim(path.Clean("/"+dir), "/")
	var entries []index.Entry
	it := r.Children(dir)
	for it.Next() {
		entries = append(entries, *it.Entry())
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if bad := it.Invalid(); len(bad) > 0 {
		return entries, skippedError(id, bad)
	}
	if len(entries) > 0 || dir == "" {
		return entries, nil
	}
	// Nothing listed: an empty folder, or no such folder at all?
	en, ok, err := r.Lookup(dir)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("saveset %d holds no /%s", id, dir)
	case en.Type != index.TypeDir:
		return []index.Entry{en}, nil
	}
	return entries, nil
}

// Match is one version of a file found by Find.
type Match struct {
	SavesetID int64       `json:"saveset_id"`
	Created   string      `json:"created"`
	Level     string      `json:"level"`
	Entry     index.Entry `json:"entry"`
}

// Find searches every complete saveset for paths matching a glob (against
// the whole path or the base name) or containing the pattern as a substring
// when it has no glob characters.
func (e *Env) Find(pattern string, each func(Match) error) error {
	sets, err := e.Catalog.Savesets(catalog.SavesetFilter{Statuses: []string{"complete"}})
	if err != nil {
		return err
	}
	glob := strings.ContainsAny(pattern, "*?[")
	var skipped []error
	pat := strings.Trim(pattern, "/")
	for _, ss := range sets {
		r, err := e.openIndex(ss, nil)
		if err != nil {
			// Not cached and its index tape offline: a copy's index, if
			// one is online (checked only then: it reads the inventories).
			if c, _, cerr := e.readable(ss, true); cerr == nil && c != nil && c != ss {
				r, err = e.openIndex(c, nil)
			}
		}
		if err != nil {
			return err
		}
		match := func(p string) bool {
			if glob {
				ok, _ := path.Match(pat, p)
				if !ok {
					ok, _ = path.Match(pat, path.Base(p))
				}
				return ok
			}
			return strings.Contains(p, pat)
		}
		var bad []index.InvalidEntry
		it := r.Iter()
		for it.Next() {
			for _, b := range it.Invalid() {
				if match(b.Path) {
					bad = append(bad, b)
				}
			}
			en := it.Entry()
			if match(en.Path) {
				if err := each(Match{SavesetID: ss.ID, Created: ss.Created.Format("2006-01-02 15:04:05"), Level: ss.Level, Entry: *en}); err != nil {
					r.Close()
					return err
				}
			}
		}
		for _, b := range it.Invalid() {
			if match(b.Path) {
				bad = append(bad, b)
			}
		}
		err = it.Err()
		r.Close()
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			skipped = append(skipped, skippedError(ss.ID, bad))
		}
	}
	return errors.Join(skipped...)
}

// skippedError names the invalid entries of a saveset's index a listing
// left out; it wraps ErrWarnings.
func skippedError(id int64, bad []index.InvalidEntry) error {
	const show = 10
	var b strings.Builder
	for i, e := range bad[:min(len(bad), show)] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	if len(bad) > show {
		fmt.Fprintf(&b, "; and %d more", len(bad)-show)
	}
	return fmt.Errorf("saveset %d: %w: skipped %d invalid entries: %s", id, ErrWarnings, len(bad), b.String())
}

// Recipe prints the shell pipeline that restores a saveset with stock tools
// (cat, zstd, tar) into the current folder.
func (e *Env) Recipe(id int64) (string, error) {
	ss, err := e.Catalog.Saveset(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return "", Missing("saveset", "no saveset %d", id)
	}
	if err != nil {
		return "", fmt.Errorf("saveset %d: %w", id, err)
	}
	if ss.Status != catalog.StatusComplete || ss.Expired {
		return "", fmt.Errorf("saveset %d is %s: it cannot be restored", id, savesetState(ss))
	}
	var files []string
	for _, p := range ss.Parts {
		lib, err := e.LibraryOfTape(p.Barcode)
		if err != nil {
			return "", err
		}
		t, err := lib.OpenTape(p.Barcode)
		if err != nil {
			return "", err
		}
		files = append(files, t.DataPath(p.File))
		t.Close()
	}
	return stream.Recipe(files), nil
}

func savesetState(ss *catalog.Saveset) string {
	if ss.Expired {
		return "expired"
	}
	return ss.Status
}
