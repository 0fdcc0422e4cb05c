package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/units"
)

func part(p catalog.Part) api.Part { return api.Part{Barcode: p.Barcode, File: p.File, Bytes: p.Bytes} }

func parts(ps []catalog.Part) []api.Part {
	out := []api.Part{}
	for _, p := range ps {
		out = append(out, part(p))
	}
	return out
}

// indexPart is nil for a saveset without an index tape file (yet).
func indexPart(p catalog.Part) *api.Part {
	if p.Barcode == "" {
		return nil
	}
	x := part(p)
	return &x
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ratio is a ratio as a number (0 when there is nothing to divide) and as
// the text the tables show ("5.26:1", "-").
func ratio(source, media int64) (float64, string) {
	if units.Ratio(source, media) == "-" {
		return 0, "-"
	}
	return units.RatioValue(source, media), units.Ratio(source, media)
}

// SavesetInfo converts a saveset record.
func SavesetInfo(s *catalog.Saveset) api.SavesetInfo {
	out := api.SavesetInfo{
		ID: s.ID, JobID: s.JobID, Client: s.Client, Selection: s.Selection, Policy: s.Policy, Level: s.Level,
		BaseID: s.BaseID, Status: s.Status, Created: s.Created, Finished: timeOrNil(s.Finished),
		Paths: nonNil(s.Paths), Label: s.Label, Files: s.Files, SourceBytes: s.SourceBytes, MediaBytes: s.MediaBytes,
		Codec: s.Codec, Library: s.Library, Tapes: []string{}, Parts: parts(s.Parts), IndexPart: indexPart(s.IndexPart),
		IndexBytes: s.IndexBytes, IndexEntries: s.IndexEntries, Expired: s.Expired, ExpireReason: s.ExpireReason,
		Copies: []api.SavesetCopy{}, Encryption: s.Encryption,
	}
	out.Ratio, out.RatioText = ratio(s.SourceBytes, s.MediaBytes)
	seen := map[string]bool{}
	for _, p := range s.Parts {
		if !seen[p.Barcode] {
			seen[p.Barcode] = true
			out.Tapes = append(out.Tapes, p.Barcode)
		}
	}
	for _, c := range s.Copies {
		out.Copies = append(out.Copies, api.SavesetCopy{Copy: c.Copy, Library: c.Library, Created: c.Created,
			Parts: parts(c.Parts), IndexPart: indexPart(c.IndexPart)})
	}
	return out
}

// Decision converts retention's verdict on a saveset.
func Decision(d engine.SavesetDecision) api.RetentionDecision {
	return api.RetentionDecision{ID: d.ID, Keep: d.Keep, Rule: d.Rule, Reason: d.Reason, Generation: d.Generation,
		Policy: d.Policy, Client: d.Client, Level: d.Level, Status: d.Status, Created: d.Created}
}

// Entry converts an index entry.
func Entry(e *index.Entry) api.Entry {
	j := api.Entry{Type: e.Type.String(), Mode: fmt.Sprintf("%04o", e.Mode), UID: e.UID, GID: e.GID,
		Size: e.Size, MTime: time.Unix(0, e.MTime).UTC().Format(time.RFC3339Nano), Sparse: e.Flags&index.FlagSparse != 0}
	j.SetNames("/"+e.Path, e.Link)
	if e.Flags&index.FlagUnchanged != 0 {
		j.Source = int64(e.Source)
	}
	if e.Type == index.TypeFile {
		j.Digest = fmt.Sprintf("%x", e.Digest)
	}
	return j
}

func skipped(in []engine.Skipped) []api.Skipped {
	out := []api.Skipped{}
	for _, s := range in {
		out = append(out, api.Skipped{SavesetID: s.SavesetID, Count: s.Count, Examples: nonNil(s.Examples)})
	}
	return out
}

func (l *Local) savesets(q api.SavesetQuery) ([]*catalog.Saveset, error) {
	f := catalog.SavesetFilter{Barcode: q.Tape}
	if q.Client != "" {
		f.Clients = []string{q.Client}
	}
	if q.Selection != "" {
		f.Selections = []string{q.Selection}
	}
	if q.Status != "" {
		f.Statuses = []string{q.Status}
	}
	return l.env.Catalog.Savesets(f)
}

func (l *Local) Savesets(ctx context.Context, q api.SavesetQuery) ([]api.SavesetInfo, error) {
	sets, err := l.savesets(q)
	if err != nil {
		return nil, Err(err)
	}
	out := []api.SavesetInfo{}
	for _, s := range sets {
		out = append(out, SavesetInfo(s))
	}
	return out, nil
}

func (l *Local) Saveset(ctx context.Context, id int64) (*api.SavesetInfo, error) {
	s, err := l.env.Catalog.Saveset(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Err(engine.Missing("saveset", "no saveset %d", id))
	}
	if err != nil {
		return nil, Err(err)
	}
	out := SavesetInfo(s)
	return &out, nil
}

func (l *Local) Retention(ctx context.Context, q api.SavesetQuery) ([]api.RetentionDecision, error) {
	sets, err := l.savesets(q)
	if err != nil {
		return nil, Err(err)
	}
	decisions, err := l.env.Retention(time.Now())
	if err != nil {
		return nil, Err(err)
	}
	byID := map[int64]engine.SavesetDecision{}
	for _, d := range decisions {
		byID[d.ID] = d
	}
	out := []api.RetentionDecision{}
	for _, s := range sets {
		if d, ok := byID[s.ID]; ok {
			out = append(out, Decision(d))
		}
	}
	return out, nil
}

func (l *Local) Recipe(ctx context.Context, id int64) (*api.Recipe, error) {
	r, err := l.env.Recipe(id)
	if err != nil {
		return nil, Err(err)
	}
	return &api.Recipe{SavesetID: id, Recipe: r}, nil
}

func limit(n int) int {
	if n == 0 {
		return api.DefaultPageLimit
	}
	return n
}

func (l *Local) Entries(ctx context.Context, q api.EntriesQuery) (*api.EntryPage, error) {
	if err := q.Validate(); err != nil {
		return nil, Err(err)
	}
	out := &api.EntryPage{Entries: []api.Entry{}, Notices: []string{}}
	page, err := l.env.ListPage(q.SavesetID, q.Path, q.Cursor, limit(q.Limit), func(msg string) {
		out.Notices = append(out.Notices, msg)
	})
	if err != nil {
		return nil, Err(err)
	}
	for i := range page.Entries {
		out.Entries = append(out.Entries, Entry(&page.Entries[i]))
	}
	out.Next, out.Skipped = page.Next, skipped(page.Skipped)
	return out, nil
}

// A search's cursor is "ID:PATH": go on after PATH of saveset ID.
func findCursor(c engine.FindCursor) string { return fmt.Sprintf("%d:%s", c.SavesetID, c.Path) }

func parseFindCursor(s string) (engine.FindCursor, error) {
	if s == "" {
		return engine.FindCursor{}, nil
	}
	id, p, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 || p == "" {
		return engine.FindCursor{}, &api.FieldError{Field: "cursor", Problem: fmt.Sprintf("%q is not the next of a page of this search", s)}
	}
	return engine.FindCursor{SavesetID: n, Path: p}, nil
}

func (l *Local) Find(ctx context.Context, q api.FindQuery) (*api.MatchPage, error) {
	if err := q.Validate(); err != nil {
		return nil, Err(err)
	}
	after, err := parseFindCursor(q.Cursor)
	if err != nil {
		return nil, Err(err)
	}
	out := &api.MatchPage{Matches: []api.Match{}, Notices: []string{}}
	page, err := l.env.FindPage(engine.FindSpec{Pattern: q.Pattern, Client: q.Client, NewestFirst: q.NewestFirst}, after, limit(q.Limit), func(msg string) {
		out.Notices = append(out.Notices, msg)
	})
	if err != nil {
		return nil, Err(err)
	}
	for i := range page.Matches {
		m := &page.Matches[i]
		out.Matches = append(out.Matches, api.Match{SavesetID: m.SavesetID, Created: m.Created, Level: m.Level, Entry: Entry(&m.Entry)})
	}
	if page.Next != nil {
		out.Next = findCursor(*page.Next)
	}
	out.Skipped = skipped(page.Skipped)
	return out, nil
}
