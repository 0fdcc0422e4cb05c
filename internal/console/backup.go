package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-backup/kura/internal/api"
)

// Starting backups by hand: a policy's Run now (the job its scheduler
// would start, at a level asked for or at its schedule's), and a client's
// Back up now, an ad-hoc backup of one of its selection sets or of paths
// typed one per line. Both are queued jobs of the server (the request
// returns at once) and the page goes to the job's monitor. A form with a
// mistake comes back with what was typed and the reason (400).

// backupLevels are the levels the forms offer, in their order.
var backupLevels = []string{"full", "incr", "diff"}

// compressions are the compression levels the backup form offers; auto
// (the default) probes the data.
var compressions = []string{"auto", "none", "low", "medium", "high"}

// runPolicy queues a run of a policy now and shows its job.
func (c *Console) runPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	level := strings.TrimSpace(r.PostFormValue("level"))
	run := api.PolicyRun{Level: level}
	if err := run.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	ids, err := c.opts.Backend.RunPolicy(r.Context(), name, level)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("console: the run of policy %s was queued without a job ID", name)
	}
	c.opts.Log.Info("console: policy run started", "policy", name, "level", level, "jobs", ids, "user", s.who())
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", ids[0]), http.StatusSeeOther)
	return nil
}

// backupForm is what the ad-hoc backup form holds, as typed.
type backupForm struct {
	Client, Selection, Paths, Level, Compress, BWLimitKBps, Library string
	Verify                                                          bool
}

// readBackupForm reads the form of a request.
func readBackupForm(r *http.Request) backupForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return backupForm{Client: r.PathValue("name"), Selection: v("selection"), Paths: v("paths"), Level: v("level"),
		Compress: v("compress"), BWLimitKBps: v("bwlimit_kbps"), Library: v("library"), Verify: v("verify") == "on"}
}

// request is the job the form asks for, or why it cannot be one. sels
// are the client's selection sets.
func (f backupForm) request(sels []string) (api.JobRequest, error) {
	req := api.JobRequest{Kind: api.KindBackup, Client: f.Client, Level: f.Level, Library: f.Library, Verify: f.Verify}
	var paths []string
	for _, line := range strings.Split(f.Paths, "\n") {
		if p := strings.TrimSpace(line); p != "" {
			paths = append(paths, p)
		}
	}
	switch {
	case f.Selection != "" && len(paths) > 0:
		return req, fmt.Errorf("choose a selection set or type paths, not both")
	case f.Selection == "" && len(paths) == 0:
		return req, fmt.Errorf("choose a selection set of %s or type the paths to back up, one per line", f.Client)
	case f.Selection != "" && !slices.Contains(sels, f.Selection):
		return req, fmt.Errorf("%s has no selection set %q", f.Client, f.Selection)
	}
	req.Selection, req.Paths = f.Selection, paths
	if !slices.Contains(backupLevels, f.Level) {
		return req, fmt.Errorf("level: %q is not one of full, incr or diff", f.Level)
	}
	if !slices.Contains(compressions, f.Compress) {
		return req, fmt.Errorf("compression: %q is not one of %s", f.Compress, strings.Join(compressions, ", "))
	}
	if f.Compress != "auto" {
		req.Compress = f.Compress
	}
	if f.BWLimitKBps != "" {
		k, err := strconv.ParseFloat(f.BWLimitKBps, 64)
		if err != nil || k < 0 || k > 1<<40 {
			return req, fmt.Errorf("bandwidth limit: %q is not a number of KB/s (empty or 0 for the client's own)", f.BWLimitKBps)
		}
		req.BWLimit = int64(k * 1024)
	}
	return req, req.Validate()
}

// backupPage renders the ad-hoc backup form of a client, with an error
// when a submission was refused (its status then). A client that is not
// enrolled, or revoked, is 404.
func (c *Console) backupPage(w http.ResponseWriter, r *http.Request, s *session, form backupForm, status int, msg string) error {
	ctx := r.Context()
	b := c.opts.Backend
	cl, sels, err := c.backupClient(r, form.Client)
	if err != nil {
		return err
	}
	libs, err := b.Libraries(ctx)
	if err != nil {
		return err
	}
	if status != 0 {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
	}
	return c.render(w, "backup", s, map[string]any{"Form": form, "Client": cl, "Selections": sels, "Error": msg,
		"Libraries": libs, "Levels": backupLevels, "Compressions": compressions})
}

// backupClient is the client a backup form is for, with its selection
// sets' names.
func (c *Console) backupClient(r *http.Request, name string) (*api.Client, []string, error) {
	cls, err := c.opts.Backend.Clients(r.Context())
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(cls, func(cl api.Client) bool { return cl.Name == name })
	switch {
	case i < 0:
		return nil, nil, refuse(http.StatusNotFound, "no client named %q is enrolled", name)
	case !cls[i].Revoked.IsZero():
		return nil, nil, refuse(http.StatusNotFound, "client %s is revoked: it backs up nothing", name)
	}
	ss, err := c.opts.Backend.Selections(r.Context(), name)
	if err != nil {
		return nil, nil, err
	}
	var sels []string
	for _, sel := range ss {
		sels = append(sels, sel.Name)
	}
	return &cls[i], sels, nil
}

// newBackup is a client's empty backup form: its first selection set, a
// full backup, compression auto.
func (c *Console) newBackup(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.backupPage(w, r, s, backupForm{Client: r.PathValue("name"), Level: "full", Compress: "auto"}, 0, "")
}

// startBackup queues the backup the form asks for and shows its job.
func (c *Console) startBackup(w http.ResponseWriter, r *http.Request, s *session) error {
	form := readBackupForm(r)
	_, sels, err := c.backupClient(r, form.Client)
	if err != nil {
		return err
	}
	req, err := form.request(sels)
	if err != nil {
		return c.backupPage(w, r, s, form, http.StatusBadRequest, err.Error())
	}
	ids, err := c.opts.Backend.Submit(r.Context(), req)
	if err != nil {
		if status, msg, ok := formError(err); ok {
			return c.backupPage(w, r, s, form, status, msg)
		}
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("console: the backup of %s was queued without a job ID", form.Client)
	}
	c.opts.Log.Info("console: backup started", "job", ids[0], "client", req.Client, "selection", req.Selection,
		"paths", len(req.Paths), "level", req.Level, "user", s.who())
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", ids[0]), http.StatusSeeOther)
	return nil
}

// backupPath is the backup form of a client.
func backupPath(client string) string { return "/clients/" + url.PathEscape(client) + "/backup" }

func init() {
	funcs["backuppath"] = backupPath
}
