package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// The policies pages: the list; one policy with its next runs on a
// calendar and the retention preview (which of its savesets retention
// keeps or expires, and why, with its rules or with others tried in their
// place); the form that creates or edits one. A form with a mistake comes
// back with what was typed and the reason, so nothing typed is lost.

// calendarDays is how far ahead the calendar shows a policy's runs, and
// calendarRuns the most runs it reads for them (an hourly schedule fills
// about three weeks).
const (
	calendarDays = 28
	calendarRuns = 500
	dayRunsShown = 4
)

// policyRow is a policy in the list with its next run.
type policyRow struct {
	api.Policy
	Next *api.PolicySlot
}

// policies lists the policies.
func (c *Console) policies(w http.ResponseWriter, r *http.Request, s *session) error {
	ps, err := c.opts.Backend.Policies(r.Context())
	if err != nil {
		return err
	}
	rows := make([]policyRow, 0, len(ps))
	for _, p := range ps {
		row := policyRow{Policy: p}
		next, err := c.opts.Backend.NextRuns(r.Context(), p.Name, 1)
		if err != nil {
			return err
		}
		if len(next) == 1 {
			row.Next = &next[0]
		}
		rows = append(rows, row)
	}
	return c.render(w, "policies", s, map[string]any{"Policies": rows, "Admin": s.role == RoleAdmin})
}

// calDay is a day of the calendar with the runs that start on it.
type calDay struct {
	Date    time.Time
	Blank   bool // before the first day shown
	Today   bool
	Runs    []api.PolicySlot
	More    int // runs beyond dayRunsShown
	Weekend bool
}

// calendar lays the runs out on calendarDays days from now, in weeks that
// start on Monday, in loc.
func calendar(runs []api.PolicySlot, now time.Time, loc *time.Location) [][]calDay {
	now = now.In(loc)
	first := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	var days []calDay
	for i := range (int(first.Weekday()) + 6) % 7 { // Monday first
		days = append(days, calDay{Blank: true, Date: first.AddDate(0, 0, i-(int(first.Weekday())+6)%7)})
	}
	index := map[string]int{}
	for i := range calendarDays {
		d := first.AddDate(0, 0, i)
		index[d.Format(time.DateOnly)] = len(days)
		days = append(days, calDay{Date: d, Today: i == 0, Weekend: d.Weekday() == time.Saturday || d.Weekday() == time.Sunday})
	}
	for _, run := range runs {
		i, ok := index[run.Time.In(loc).Format(time.DateOnly)]
		if !ok {
			continue
		}
		if len(days[i].Runs) < dayRunsShown {
			days[i].Runs = append(days[i].Runs, api.PolicySlot{Time: run.Time.In(loc), Level: run.Level})
		} else {
			days[i].More++
		}
	}
	var weeks [][]calDay
	for len(days) > 0 {
		n := min(7, len(days))
		weeks = append(weeks, days[:n])
		days = days[n:]
	}
	return weeks
}

// policy shows one policy: its settings, next runs on a calendar and the
// retention preview.
func (c *Console) policy(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	b := c.opts.Backend
	p, err := b.Policy(ctx, r.PathValue("name"))
	if ae := (*api.Error)(nil); r.PathValue("name") == "new" && errors.As(err, &ae) && ae.Code == api.CodeNotFound {
		// A link to the create form from before it moved to /new/policy.
		http.Redirect(w, r, "/new/policy", http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	loc := time.Local
	if p.Zone != "" {
		if l, err := time.LoadLocation(p.Zone); err == nil {
			loc = l
		}
	}
	runs, err := b.NextRuns(ctx, p.Name, calendarRuns)
	if err != nil {
		return err
	}
	// The retention preview, with the policy's rules or those asked for.
	var req api.RetentionPreview
	q := r.URL.Query()
	for field, to := range map[string]**int{"keep_generations": &req.KeepGenerations, "keep_days": &req.KeepDays} {
		if v := strings.TrimSpace(q.Get(field)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return refuse(http.StatusBadRequest, "%s: %q is not a whole number", strings.ReplaceAll(field, "_", " "), v)
			}
			*to = &n
		}
	}
	decisions, err := b.PolicyRetention(ctx, p.Name, req)
	if err != nil {
		return err
	}
	kept := 0
	for _, d := range decisions {
		if d.Keep {
			kept++
		}
	}
	gens, days := p.KeepGenerations, p.KeepDays
	if req.KeepGenerations != nil {
		gens = *req.KeepGenerations
	}
	if req.KeepDays != nil {
		days = *req.KeepDays
	}
	whatIf := gens != p.KeepGenerations || days != p.KeepDays
	list := runs[:min(len(runs), 10)]
	for i := range list {
		list[i].Time = list[i].Time.In(loc)
	}
	return c.render(w, "policy", s, map[string]any{"Policy": p, "Runs": list, "Weeks": calendar(runs, c.opts.Now(), loc),
		"Zone": loc.String(), "Capped": len(runs) == calendarRuns && runs[len(runs)-1].Time.Before(c.opts.Now().AddDate(0, 0, calendarDays)), "Decisions": decisions, "Kept": kept,
		"Expired": len(decisions) - kept, "Gens": gens, "Days": days, "WhatIf": whatIf, "Admin": s.role == RoleAdmin})
}

// policyForm is what the create and edit form holds: the policy's fields
// as typed.
type policyForm struct {
	Name, Client, Selection, FullCron, DiffCron, IncrCron, Zone string
	KeepGenerations, KeepDays, BWLimitKBps                      string
	Library, Pool, Compress, CopyTo                             string
	Verify, Encrypt                                             bool
}

// formOf is a policy as the form shows it.
func formOf(p *api.Policy) policyForm {
	f := policyForm{Name: p.Name, Client: p.Client, Selection: p.Selection, FullCron: p.FullCron, DiffCron: p.DiffCron,
		IncrCron: p.IncrCron, Zone: p.Zone, Library: p.Library, Pool: p.Pool, Compress: p.Compress, CopyTo: p.CopyTo,
		Verify: p.Verify, Encrypt: p.Encrypt, KeepGenerations: strconv.Itoa(p.KeepGenerations), KeepDays: strconv.Itoa(p.KeepDays)}
	if p.BWLimitKBps > 0 {
		f.BWLimitKBps = strconv.FormatFloat(p.BWLimitKBps, 'f', -1, 64)
	}
	return f
}

// readPolicyForm reads the form of a request.
func readPolicyForm(r *http.Request) policyForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return policyForm{Name: v("name"), Client: v("client"), Selection: v("selection"), FullCron: v("full_cron"),
		DiffCron: v("diff_cron"), IncrCron: v("incr_cron"), Zone: v("zone"), KeepGenerations: v("keep_generations"),
		KeepDays: v("keep_days"), BWLimitKBps: v("bwlimit_kbps"), Library: v("library"), Pool: v("pool"),
		Compress: v("compress"), CopyTo: v("copy_to"), Verify: v("verify") == "on", Encrypt: v("encrypt") == "on"}
}

// numbers are the form's numbers: retention and the bandwidth limit
// (KB/s, 1 KB = 1024 bytes, into bytes/s).
func (f policyForm) numbers() (gens, days int, bps int64, err error) {
	num := func(what, v string) (int, error) {
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: %q is not a whole number of 0 or more", what, v)
		}
		return n, nil
	}
	if gens, err = num("generations to keep", f.KeepGenerations); err != nil {
		return
	}
	if days, err = num("days to keep", f.KeepDays); err != nil {
		return
	}
	if f.BWLimitKBps != "" {
		k, perr := strconv.ParseFloat(f.BWLimitKBps, 64)
		if perr != nil || k < 0 || k > 1<<40 {
			err = fmt.Errorf("bandwidth limit: %q is not a number of KB/s (empty or 0 for the client's own)", f.BWLimitKBps)
			return
		}
		bps = int64(k * 1024)
	}
	return
}

// policyEditPage renders the create or edit form, with an error when a
// submission was refused (its status then).
func (c *Console) policyEditPage(w http.ResponseWriter, r *http.Request, s *session, form policyForm, editing bool, status int, msg string) error {
	ctx := r.Context()
	b := c.opts.Backend
	cls, err := b.Clients(ctx)
	if err != nil {
		return err
	}
	libs, err := b.Libraries(ctx)
	if err != nil {
		return err
	}
	var sels []string
	seen := map[string]bool{}
	owners := []string{""}
	for _, cl := range cls {
		if cl.Revoked.IsZero() {
			owners = append(owners, cl.Name)
		}
	}
	for _, owner := range owners {
		ss, err := b.Selections(ctx, owner)
		if err != nil {
			continue // a client's selections that cannot be read: typed by hand
		}
		for _, sel := range ss {
			if !seen[sel.Name] {
				seen[sel.Name] = true
				sels = append(sels, sel.Name)
			}
		}
	}
	if status != 0 {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
	}
	return c.render(w, "policyedit", s, map[string]any{"Form": form, "Editing": editing, "Error": msg,
		"Clients": cls, "Libraries": libs, "Selections": sels})
}

// newPolicy is the empty create form.
func (c *Console) newPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.policyEditPage(w, r, s, policyForm{KeepGenerations: "2", FullCron: "0 1 * * 6", IncrCron: "0 1 * * *"}, false, 0, "")
}

// editPolicy is the edit form of a policy.
func (c *Console) editPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := c.opts.Backend.Policy(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return c.policyEditPage(w, r, s, formOf(p), true, 0, "")
}

// formError is a refused submission's status and words: bad input is
// shown on the form (400, 404 for a client, selection or library that is
// not there, 409 for a name taken); anything else is the error page.
func formError(err error) (int, string, bool) {
	var se *statusError
	var ae *api.Error
	switch {
	case errors.As(err, &se):
		return se.status, se.msg, se.status < 500
	case errors.As(err, &ae) && (ae.Code == api.CodeBadRequest || ae.Code == api.CodeNotFound || ae.Code == api.CodeConflict):
		return api.HTTPStatus(ae.Code), ae.Message, true
	}
	return 0, "", false
}

// createPolicy records a new policy from the form.
func (c *Console) createPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	form := readPolicyForm(r)
	p, err := c.savePolicy(r, form, false)
	if err != nil {
		if status, msg, ok := formError(err); ok {
			return c.policyEditPage(w, r, s, form, false, status, msg)
		}
		return err
	}
	c.opts.Log.Info("console: policy created", "policy", p.Name, "user", s.who())
	http.Redirect(w, r, "/policies/"+url.PathEscape(p.Name), http.StatusSeeOther)
	return nil
}

// updatePolicy changes a policy to the form's values.
func (c *Console) updatePolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	form := readPolicyForm(r)
	form.Name = r.PathValue("name")
	p, err := c.savePolicy(r, form, true)
	if err != nil {
		if status, msg, ok := formError(err); ok {
			return c.policyEditPage(w, r, s, form, true, status, msg)
		}
		return err
	}
	c.opts.Log.Info("console: policy changed", "policy", p.Name, "user", s.who())
	http.Redirect(w, r, "/policies/"+url.PathEscape(p.Name), http.StatusSeeOther)
	return nil
}

// savePolicy creates or edits the policy of the form.
func (c *Console) savePolicy(r *http.Request, f policyForm, editing bool) (*api.Policy, error) {
	gens, days, bps, err := f.numbers()
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "%v", err)
	}
	if editing {
		pool := cmp.Or(f.Pool, f.Name) // empty: the policy's name, as when created
		return c.opts.Backend.EditPolicy(r.Context(), f.Name, api.PolicyEdit{Selection: &f.Selection, FullCron: &f.FullCron,
			DiffCron: &f.DiffCron, IncrCron: &f.IncrCron, Zone: &f.Zone, KeepGenerations: &gens, KeepDays: &days,
			Library: &f.Library, Pool: &pool, Verify: &f.Verify, BWLimit: &bps, Compress: &f.Compress, CopyTo: &f.CopyTo,
			Encrypt: &f.Encrypt})
	}
	req := api.PolicyCreate{Name: f.Name, Client: f.Client, Selection: f.Selection, FullCron: f.FullCron, DiffCron: f.DiffCron,
		IncrCron: f.IncrCron, Zone: f.Zone, KeepGenerations: gens, KeepDays: days, Library: f.Library, Pool: f.Pool,
		Verify: f.Verify, BWLimit: bps, Compress: f.Compress, CopyTo: f.CopyTo, Encrypt: f.Encrypt}
	if err := req.Validate(); err != nil {
		return nil, refuse(http.StatusBadRequest, "%v", err)
	}
	return c.opts.Backend.CreatePolicy(r.Context(), req)
}

func init() {
	funcs["weekday"] = func(t time.Time) string { return t.Weekday().String()[:3] }
	funcs["hhmm"] = func(t time.Time) string { return t.Format("15:04") }
	funcs["daytitle"] = func(t time.Time) string { return t.Format("Mon 2 Jan") }
	funcs["crons"] = crons
	funcs["keeps"] = keeps
}

// crons is a policy's schedules in words.
func crons(p api.Policy) string {
	var parts []string
	for _, c := range []struct{ level, cron string }{{"full", p.FullCron}, {"diff", p.DiffCron}, {"incr", p.IncrCron}} {
		if c.cron != "" {
			parts = append(parts, c.level+" "+c.cron)
		}
	}
	if len(parts) == 0 {
		return "none (run by hand)"
	}
	s := strings.Join(parts, " · ")
	if p.Zone != "" {
		s += " (" + p.Zone + ")"
	}
	return s
}

// keeps is retention rules in words.
func keeps(gens, days int) string {
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	switch {
	case gens > 0 && days > 0:
		return plural(gens, "generation") + " or " + plural(days, "day")
	case gens > 0:
		return plural(gens, "generation")
	case days > 0:
		return plural(days, "day")
	}
	return "nothing (invalid: nothing would expire)"
}
