package console

import (
	"cmp"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-backup/kura/internal/api"
)

// browsePage is how many entries of a folder the browse view shows a page:
// a folder of 10,000 files is ten pages, each read with api.Service's
// Entries (the same paged index read as kura ls, resumed after the last
// entry of the page before), never the whole folder at once.
const browsePage = 1000

// savesetRow is a saveset on the savesets page with retention's verdict.
type savesetRow struct {
	api.SavesetInfo
	Keep   bool
	Rule   string
	Reason string
}

// savesets lists the savesets, newest first, with level, base, size,
// ratio and why retention keeps or expires each (client and status
// filters).
func (c *Console) savesets(w http.ResponseWriter, r *http.Request, s *session) error {
	q := api.SavesetQuery{Client: r.URL.Query().Get("client"), Status: r.URL.Query().Get("status")}
	sets, err := c.opts.Backend.Savesets(r.Context(), q)
	if err != nil {
		return err
	}
	decisions, err := c.opts.Backend.Retention(r.Context(), q)
	if err != nil {
		return err
	}
	why := map[int64]api.RetentionDecision{}
	for _, d := range decisions {
		why[d.ID] = d
	}
	rows := make([]savesetRow, 0, len(sets))
	for _, ss := range slices.Backward(sets) {
		row := savesetRow{SavesetInfo: ss}
		if d, ok := why[ss.ID]; ok {
			row.Keep, row.Rule, row.Reason = d.Keep, d.Rule, d.Reason
		} else if ss.Expired {
			row.Rule, row.Reason = "expired", ss.ExpireReason
		}
		rows = append(rows, row)
	}
	return c.render(w, "savesets", s, map[string]any{"Savesets": rows, "Query": q})
}

// crumb is one folder of the browse view's path.
type crumb struct{ Name, Path string }

// browse shows one page of a folder of a saveset: its folders link to
// their own listing, and an admin selects files and folders to restore.
// An incremental's listing is its whole tree, as kura ls shows it.
func (c *Console) browse(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := savesetID(r)
	if err != nil {
		return err
	}
	ss, err := c.opts.Backend.Saveset(r.Context(), id)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	dir := "/" + strings.Trim(path.Clean("/"+q.Get("path")), "/")
	page, err := c.opts.Backend.Entries(r.Context(), api.EntriesQuery{SavesetID: id, Path: dir, Cursor: q.Get("cursor"), Limit: browsePage})
	if err != nil {
		return err
	}
	crumbs := []crumb{{"/", "/"}}
	if dir != "/" {
		p := ""
		for _, name := range strings.Split(strings.Trim(dir, "/"), "/") {
			p += "/" + name
			crumbs = append(crumbs, crumb{name, p})
		}
	}
	type row struct {
		api.Entry
		Name string
		Dir  bool
	}
	rows := make([]row, 0, len(page.Entries))
	for _, e := range page.Entries {
		rows = append(rows, row{Entry: e, Name: path.Base(e.Path), Dir: e.Type == "dir"})
	}
	skipped := 0
	for _, k := range page.Skipped {
		skipped += k.Count
	}
	var clients []api.Client
	if s.role == RoleAdmin {
		if clients, err = c.opts.Backend.Clients(r.Context()); err != nil {
			return err
		}
	}
	return c.render(w, "saveset", s, map[string]any{"Saveset": ss, "Dir": dir, "Crumbs": crumbs, "Entries": rows,
		"Next": page.Next, "Paged": q.Get("cursor") != "", "Skipped": skipped, "Notices": page.Notices,
		"Clients": clients, "Admin": s.role == RoleAdmin})
}

// restore starts a restore job of the selected files and folders of a
// saveset to a client and folder (admins; CSRF-checked), and shows the
// job: the restore runs in the server's queue, not in this request. The
// ticks are exact paths (restore_paths), never patterns: a file named a*
// restores that file alone, and a top-level folder not its namesakes
// deeper down.
func (c *Console) restore(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := savesetID(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	sel := r.PostForm["select"]
	if len(sel) == 0 {
		return refuse(http.StatusBadRequest, "select the files and folders to restore")
	}
	ss, err := c.opts.Backend.Saveset(r.Context(), id)
	if err != nil {
		return err
	}
	req := api.JobRequest{Kind: api.KindRestore, Client: ss.Client, Saveset: id, To: strings.TrimSpace(r.PostFormValue("to")),
		RestorePaths: sel, Overwrite: r.PostFormValue("overwrite")}
	if to := r.PostFormValue("to_client"); to != "" && to != ss.Client {
		req.ToClient = to
	}
	job, err := c.submit(r, req, fmt.Sprintf("the restore of saveset %d", id))
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: restore started", "job", job, "saveset", id, "paths", len(sel), "to", req.To,
		"client", cmp.Or(req.ToClient, req.Client), "user", s.who())
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", job), http.StatusSeeOther)
	return nil
}

// submit validates and queues a one-job request from a form (what names
// it in the error) and returns the job's ID; invalid input is a 400.
func (c *Console) submit(r *http.Request, req api.JobRequest, what string) (int64, error) {
	if err := req.Validate(); err != nil {
		return 0, refuse(http.StatusBadRequest, "%v", err)
	}
	ids, err := c.opts.Backend.Submit(r.Context(), req)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("console: %s was queued without a job ID", what)
	}
	return ids[0], nil
}

func savesetID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, refuse(http.StatusNotFound, "no saveset %q", r.PathValue("id"))
	}
	return id, nil
}
