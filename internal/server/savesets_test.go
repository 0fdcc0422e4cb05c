package server_test

import (
	"errors"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// The saveset and selection resources refuse bad input with 400 naming
// the field, and a name or ID that names nothing with 404 naming its kind.
func TestSavesetAndSelectionRequestsValidated(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	ctx := t.Context()

	_, err := r.admin.Entries(ctx, api.EntriesQuery{SavesetID: 1, Limit: -1})
	wantField(t, "a negative page limit", err, "limit")
	_, err = r.admin.Entries(ctx, api.EntriesQuery{SavesetID: 1, Limit: api.MaxPageLimit + 1})
	wantField(t, "a page limit above the most", err, "limit")
	_, err = r.admin.Find(ctx, api.FindQuery{Pattern: "x", Limit: api.MaxPageLimit + 1})
	wantField(t, "a search page limit above the most", err, "limit")
	_, err = r.admin.Find(ctx, api.FindQuery{Pattern: "x", Client: "../c"})
	wantField(t, "a search of a client that cannot be", err, "client")
	for _, c := range []string{"x", "0:a", "-3:a", "7:", "7"} {
		_, err = r.admin.Find(ctx, api.FindQuery{Pattern: "x", Cursor: c})
		wantField(t, "the search cursor "+c, err, "cursor")
	}
	for _, q := range []api.SelectionCreate{
		{Paths: []string{"/srv"}},
		{Name: "s", Paths: nil},
		{Name: "s", Paths: []string{"srv"}},
		{Name: "s", Paths: []string{"/srv/../etc"}},
		{Name: "s", Paths: []string{"/srv"}, Excludes: []string{"a\x00b"}},
		{Name: "s", Client: "../c", Paths: []string{"/srv"}},
	} {
		_, err = r.admin.CreateSelection(ctx, q)
		want := map[bool]string{true: "name", false: ""}[q.Name == ""]
		if want == "" {
			switch {
			case q.Client != "":
				want = "client"
			case len(q.Excludes) > 0:
				want = "excludes"
			default:
				want = "paths"
			}
		}
		wantField(t, "selection "+want, err, want)
	}

	for what, call := range map[string]func() error{
		"saveset":      func() error { _, err := r.admin.Entries(ctx, api.EntriesQuery{SavesetID: 99}); return err },
		"recipe":       func() error { _, err := r.admin.Recipe(ctx, 99); return err },
		"saveset show": func() error { _, err := r.admin.Saveset(ctx, 99); return err },
		"show":         func() error { _, err := r.admin.Selection(ctx, "", "nosel"); return err },
		"rm":           func() error { return r.admin.RemoveSelection(ctx, "c1", "nosel") },
	} {
		err := call()
		wantCode(t, what, err, api.CodeNotFound)
		kind := map[bool]string{true: "saveset", false: "selection"}[what != "show" && what != "rm"]
		if ae := (*api.Error)(nil); !errors.As(err, &ae) || ae.Field != kind {
			t.Errorf("%s: %v does not name the kind %q", what, err, kind)
		}
	}

	// A selection is its client's: another client does not see it.
	if _, err := r.admin.CreateSelection(ctx, api.SelectionCreate{Name: "docs", Client: "c1", Paths: []string{"/srv"}}); err != nil {
		t.Fatal(err)
	}
	if sels, err := r.admin.Selections(ctx, "c2"); err != nil || len(sels) != 0 {
		t.Errorf("client c2 sees %v, %v", sels, err)
	}
	if s, err := r.admin.Selection(ctx, "c1", "docs"); err != nil || s.Client != "c1" || len(s.Paths) != 1 {
		t.Errorf("client c1's selection: %+v, %v", s, err)
	}
}
