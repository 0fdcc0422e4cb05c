package engine

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// List returns the immediate children of dir in a saveset ("" or "/" is the
// top). Unchanged files of incrementals are listed like the others: a
// saveset's index describes the whole tree at its moment. Entries of a
// damaged or hostile index that break the entry rules are left out and
// named in an error wrapping ErrWarnings, returned with the others.
func (e *Env) List(id int64, dir string) ([]index.Entry, error) {
	p, err := e.ListPage(id, dir, "", 0, nil)
	if err != nil {
		return nil, err
	}
	return p.Entries, SkippedErr(p.Skipped)
}

// ListPage is one page of a listing read in pieces (kura ls through the
// service layer): the children of dir in saveset id, in index order, that
// come after the path after ("" = from the first), at most limit of them
// (0 = all). Next is the path to give as after for the next page, "" when
// the listing is complete.
type ListPage struct {
	Entries []index.Entry
	Next    string
	Skipped []Skipped // invalid entries this page passed over
}

// ListPage returns one page of the listing of dir in saveset id (see
// List). The first page (after "") checks the whole cached index, as List
// does, and rebuilds a damaged one from tape, telling warn (nil: Notice);
// the pages after it open the cache as it is, so reading a listing of n
// entries page by page costs about one pass over its index, not one per
// page (index.Iter.After).
func (e *Env) ListPage(id int64, dir, after string, limit int, warn func(string)) (*ListPage, error) {
	var r *index.Reader
	var err error
	if after != "" {
		// A later page: the cache the first page checked, as it is. Not
		// through EnvStore.Saveset, whose choice of a copy checks the whole
		// cache again (tapesOffline): that made each page cost a pass over
		// the index, so a folder read in pages cost pages × index.
		if r, err = e.cachedIndex(id); err != nil {
			return nil, err
		}
	}
	if r == nil {
		ss, err := EnvStore{Env: e}.Saveset(id) // a copy when its own tapes are offline
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, Missing("saveset", "no saveset %d", id)
		}
		if err != nil {
			return nil, fmt.Errorf("saveset %d: %w", id, err)
		}
		if after == "" {
			r, err = e.openIndex(ss, warn)
		} else {
			r, err = e.resumeIndex(ss, warn)
		}
		if err != nil {
			return nil, err
		}
	}
	defer r.Close()
	dir = strings.Trim(path.Clean("/"+dir), "/")
	page := &ListPage{}
	it := r.Children(dir)
	if after != "" {
		it.After(after)
	}
	for (limit <= 0 || len(page.Entries) < limit) && it.Next() {
		page.Entries = append(page.Entries, *it.Entry())
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if bad := it.Invalid(); len(bad) > 0 {
		page.Skipped = []Skipped{newSkipped(id, bad)}
	}
	if limit > 0 && len(page.Entries) == limit {
		page.Next = page.Entries[limit-1].Path
	}
	if len(page.Entries) > 0 || dir == "" || after != "" {
		return page, nil
	}
	// Nothing listed: an empty folder, or no such folder at all?
	en, ok, err := r.Lookup(dir)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("saveset %d holds no /%s", id, dir)
	case en.Type != index.TypeDir:
		page.Entries = []index.Entry{en}
	}
	return page, nil
}

// cachedIndex opens, as it is, the cached index of saveset id or of one of
// its copies (they list the same entries), for a listing that goes on
// where a checked first page left it; nil when none is cached (or the
// saveset is encrypted: its cache is not an index this process opens).
func (e *Env) cachedIndex(id int64) (*index.Reader, error) {
	ss, err := e.Catalog.Saveset(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("saveset", "no saveset %d", id)
	}
	if err != nil {
		return nil, fmt.Errorf("saveset %d: %w", id, err)
	}
	if ss.Encryption != "" {
		return nil, nil
	}
	views := []*catalog.Saveset{ss}
	for _, c := range ss.Copies {
		views = append(views, copyView(ss, c))
	}
	for _, v := range views {
		if r, err := index.OpenFile(e.indexCachePath(v)); err == nil {
			return r, nil
		}
	}
	return nil, nil
}

// resumeIndex opens a saveset's cached index to go on with a listing that
// began with openIndex (which checked all of it): as it is, without
// checking every block again; each block read is still checked. Without a
// cache it is openIndex.
func (e *Env) resumeIndex(ss *catalog.Saveset, warn func(string)) (*index.Reader, error) {
	if r, err := index.OpenFile(e.indexCachePath(ss)); err == nil {
		return r, nil
	}
	return e.openIndex(ss, warn)
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
	skipped, err := e.find(FindSpec{Pattern: pattern}, FindCursor{}, nil, func(m Match) (bool, error) { return true, each(m) })
	if err != nil {
		return err
	}
	return SkippedErr(skipped)
}

// PathMatcher is how kura find matches an index path: a pattern with * ?
// or [ is a glob matched against the whole path and the base name;
// otherwise any path that contains it matches. Leading and trailing
// slashes of the pattern do not count.
func PathMatcher(pattern string) func(p string) bool {
	glob := strings.ContainsAny(pattern, "*?[")
	pat := strings.Trim(pattern, "/")
	return func(p string) bool {
		if glob {
			ok, _ := path.Match(pat, p)
			if !ok {
				ok, _ = path.Match(pat, path.Base(p))
			}
			return ok
		}
		return strings.Contains(p, pat)
	}
}

// FindSpec says what a search looks for and where: the pattern (see
// PathMatcher), only one client's savesets (Client; "" for every
// client's), and in which order the savesets are searched: oldest first,
// or with NewestFirst the newest first (by ID, the order they were made
// in), as a "which backups hold this file" view wants.
type FindSpec struct {
	Pattern     string
	Client      string
	NewestFirst bool
}

// FindCursor is where a search read in pages goes on: after the entry at
// Path of saveset SavesetID.
type FindCursor struct {
	SavesetID int64
	Path      string
}

// FindPage is one page of a search read in pieces (kura find through the
// service layer).
type FindPage struct {
	Matches []Match
	Next    *FindCursor // nil when the search is complete
	Skipped []Skipped   // invalid matching entries this page passed over
}

// FindPage returns up to limit matches (0 = all) of Find that come after
// the cursor (the zero cursor: from the first). As with ListPage, each
// index is checked whole when the search enters it (a damaged cache is
// rebuilt from tape and reported to warn, nil: Notice) and opened as it
// is when a page resumes inside it.
func (e *Env) FindPage(spec FindSpec, after FindCursor, limit int, warn func(string)) (*FindPage, error) {
	page := &FindPage{}
	skipped, err := e.find(spec, after, warn, func(m Match) (bool, error) {
		page.Matches = append(page.Matches, m)
		if limit > 0 && len(page.Matches) == limit {
			page.Next = &FindCursor{SavesetID: m.SavesetID, Path: m.Entry.Path}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	page.Skipped = skipped
	return page, nil
}

// find calls each with the matches after the cursor until it returns
// false or an error, and returns the invalid matching entries it passed
// over.
func (e *Env) find(spec FindSpec, after FindCursor, warn func(string), each func(Match) (bool, error)) ([]Skipped, error) {
	f := catalog.SavesetFilter{Statuses: []string{"complete"}}
	if spec.Client != "" {
		f.Clients = []string{spec.Client}
	}
	sets, err := e.Catalog.Savesets(f)
	if err != nil {
		return nil, err
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].ID < sets[j].ID })
	if spec.NewestFirst {
		slices.Reverse(sets)
	}
	var skipped []Skipped
	match := PathMatcher(spec.Pattern)
	for _, ss := range sets {
		if after.SavesetID != 0 && (!spec.NewestFirst && ss.ID < after.SavesetID || spec.NewestFirst && ss.ID > after.SavesetID) {
			continue
		}
		if ss.Encryption != "" {
			// Its index opens only on its client's agent: the search goes
			// on without it, and says so.
			w := warn
			if w == nil {
				w = e.notice
			}
			w(fmt.Sprintf("saveset %d not searched: encrypted by client %s (its index opens only on an agent holding its key)", ss.ID, ss.Client))
			continue
		}
		resume := ss.ID == after.SavesetID && after.Path != ""
		open := e.openIndex
		if resume {
			open = e.resumeIndex
		}
		r, err := open(ss, warn)
		if err != nil {
			// Not cached and its index tape offline: a copy's index, if
			// one is online (checked only then: it reads the inventories).
			if c, _, cerr := e.readable(ss, true); cerr == nil && c != nil && c != ss {
				r, err = open(c, warn)
			}
		}
		if err != nil {
			return nil, err
		}
		var bad []index.InvalidEntry
		invalid := func(it *index.Iter) {
			for _, b := range it.Invalid() {
				if match(b.Path) {
					bad = append(bad, b)
				}
			}
		}
		it := r.Iter()
		if resume {
			it.After(after.Path)
		}
		more := true
		for more && it.Next() {
			invalid(it)
			en := it.Entry()
			if match(en.Path) {
				more, err = each(Match{SavesetID: ss.ID, Created: ss.Created.Format("2006-01-02 15:04:05"), Level: ss.Level, Entry: *en})
				if err != nil {
					r.Close()
					return nil, err
				}
			}
		}
		invalid(it)
		err = it.Err()
		r.Close()
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			skipped = append(skipped, newSkipped(ss.ID, bad))
		}
		if !more {
			break
		}
	}
	return skipped, nil
}

// SkippedExamples is how many invalid entries of one saveset a warning
// names; it counts the rest.
const SkippedExamples = 10

// Skipped is the invalid entries of a saveset's index that a listing left
// out: how many, and the first SkippedExamples of them (index.InvalidEntry
// texts).
type Skipped struct {
	SavesetID int64
	Count     int
	Examples  []string
}

func newSkipped(id int64, bad []index.InvalidEntry) Skipped {
	s := Skipped{SavesetID: id, Count: len(bad)}
	for _, b := range bad[:min(len(bad), SkippedExamples)] {
		s.Examples = append(s.Examples, b.Error())
	}
	return s
}

// Merge adds the entries a later page of the same listing skipped in the
// same saveset.
func (s *Skipped) Merge(o Skipped) {
	s.Count += o.Count
	for _, x := range o.Examples {
		if len(s.Examples) < SkippedExamples {
			s.Examples = append(s.Examples, x)
		}
	}
}

// Err is the warning that names them; it wraps ErrWarnings.
func (s Skipped) Err() error {
	var b strings.Builder
	for i, x := range s.Examples {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x)
	}
	if s.Count > len(s.Examples) {
		fmt.Fprintf(&b, "; and %d more", s.Count-len(s.Examples))
	}
	return fmt.Errorf("saveset %d: %w: skipped %d invalid entries: %s", s.SavesetID, ErrWarnings, s.Count, b.String())
}

// SkippedErr is the warnings of a listing's skipped entries, one per
// saveset, joined; nil when there are none.
func SkippedErr(skipped []Skipped) error {
	var errs []error
	for _, s := range skipped {
		errs = append(errs, s.Err())
	}
	return errors.Join(errs...)
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
	files, urls, region, err := recipeSources(id, ss.Parts, func(barcode string) (tape.Device, error) {
		lib, err := e.ChangerOfTape(barcode)
		if err != nil {
			return nil, err
		}
		return lib.OpenTape(barcode)
	})
	if err != nil {
		return "", err
	}
	r := stream.Recipe(files)
	if len(urls) > 0 {
		r = stream.RecipeS3(urls, region)
	}
	if ss.Encryption != "" {
		r = stream.Sealed(r)
	}
	return r, nil
}

// recipeSources returns where stock tools read every part of saveset id,
// in order: the data path of each part on a tape kept in files
// (tape.DataPather), or the URLs of its objects on a tape in an object
// store (tape.DataURLer) and their signing region. A tape with neither
// fails with ErrNoDataPath.
func recipeSources(id int64, parts []catalog.Part, open func(barcode string) (tape.Device, error)) (files, urls []string, region string, err error) {
	for _, p := range parts {
		t, err := open(p.Barcode)
		if err != nil {
			return nil, nil, "", err
		}
		switch d := t.(type) {
		case tape.DataPather:
			files = append(files, d.DataPath(p.File))
		case tape.DataURLer:
			u, r, err := d.DataURLs(p.File)
			if err != nil {
				t.Close()
				return nil, nil, "", fmt.Errorf("saveset %d: tape %s: %w", id, p.Barcode, err)
			}
			urls, region = append(urls, u...), r
		default:
			t.Close()
			return nil, nil, "", sayf(ErrNoDataPath, "saveset %d: tape %s is neither files on this machine nor objects in a store, so stock tools cannot read it: restore the saveset with kura restore", id, p.Barcode)
		}
		t.Close()
	}
	if len(files) > 0 && len(urls) > 0 {
		return nil, nil, "", sayf(ErrNoDataPath, "saveset %d: its parts are partly files and partly objects: restore the saveset with kura restore", id)
	}
	return files, urls, region, nil
}

func savesetState(ss *catalog.Saveset) string {
	if ss.Expired {
		return "expired"
	}
	return ss.Status
}
