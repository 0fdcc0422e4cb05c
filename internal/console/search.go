package console

import (
	"cmp"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/kura-backup/kura/internal/api"
)

// searchPage is how many matches the search view shows a page: each page
// is one Find call that reads indexes, newest saveset first, until it has
// this many (BenchmarkFind1M: a name one file of a million holds reads the
// whole index, about 0.2 s of CPU).
const searchPage = 100

// searchRow is one match of the search view: the version of a path in a
// saveset, with the folder to browse it in.
type searchRow struct {
	api.Match
	Path, Dir string
}

// search finds the versions of a name in a client's savesets, newest
// first, a page at a time: the same paged index read as kura find
// --newest-first, never the whole answer at once. Without a name it is
// the form alone.
func (c *Console) search(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	fq := api.FindQuery{Pattern: strings.TrimSpace(q.Get("name")), Client: q.Get("client"), NewestFirst: true,
		Cursor: q.Get("cursor"), Limit: searchPage}
	if err := fq.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	clients, err := c.opts.Backend.Clients(r.Context())
	if err != nil {
		return err
	}
	data := map[string]any{"Query": fq, "Clients": clients, "Paged": fq.Cursor != "", "PageSize": searchPage}
	if fq.Pattern == "" {
		return c.render(w, "search", s, data)
	}
	page, err := c.opts.Backend.Find(r.Context(), fq)
	if err != nil {
		return err
	}
	rows := make([]searchRow, 0, len(page.Matches))
	for _, m := range page.Matches {
		p := m.Entry.FilePath()
		dir := p
		if m.Entry.Type != "dir" {
			dir = path.Dir(p)
		}
		rows = append(rows, searchRow{Match: m, Path: p, Dir: cmp.Or(dir, "/")})
	}
	skipped := 0
	for _, k := range page.Skipped {
		skipped += k.Count
	}
	data["Matches"], data["Next"], data["Notices"], data["Skipped"] = rows, page.Next, page.Notices, skipped
	data["Searched"] = true
	return c.render(w, "search", s, data)
}

// verifyLevels are the verify levels the console offers: what the server
// can check alone (source needs the client's files).
var verifyLevels = []string{"media", "data"}

// verify starts a verify job of a saveset at the chosen level (admins;
// CSRF-checked) and shows it in the job monitor: the verify runs in the
// server's queue, not in this request.
func (c *Console) verify(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := savesetID(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	req := api.JobRequest{Kind: api.KindVerify, Saveset: id, Level: r.PostFormValue("level")}
	job, err := c.submit(r, req, fmt.Sprintf("the verify of saveset %d", id))
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: verify started", "job", job, "saveset", id, "level", cmp.Or(req.Level, "media"), "user", s.who())
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", job), http.StatusSeeOther)
	return nil
}

// recipe shows the stock-tool recipe of a saveset: the shell pipeline
// (cat or curl, zstd, tar; age for an encrypted one) that restores it
// without Kura, as kura saveset recipe prints it.
func (c *Console) recipe(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := savesetID(r)
	if err != nil {
		return err
	}
	ss, err := c.opts.Backend.Saveset(r.Context(), id)
	if err != nil {
		return err
	}
	rc, err := c.opts.Backend.Recipe(r.Context(), id)
	if err != nil {
		return err
	}
	return c.render(w, "recipe", s, map[string]any{"Saveset": ss, "Recipe": rc.Recipe})
}
