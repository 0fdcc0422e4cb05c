package console

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/units"
)

var funcs = template.FuncMap{
	"size": func(n int64) string { return units.FormatSize(n) },
	"kbps": func(bps float64) string { return fmt.Sprintf("%.0f", bps/1024) },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"rfc3339": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339Nano)
	},
	"dur": func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() {
			return "–"
		}
		return b.Sub(a).Round(time.Second).String()
	},
	"secs": func(s float64) string {
		return time.Duration(s * float64(time.Second)).Round(10 * time.Millisecond).String()
	},
	"ratio": func(src, media int64) string {
		if media <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f:1", float64(src)/float64(media))
	},
	"ended": jobEnded,
	"list":  func(s ...string) []string { return s },
	"has":   func(list []string, s string) bool { return slices.Contains(list, s) },
}

// jobEnded reports whether a job state is final.
func jobEnded(state string) bool {
	return state != "queued" && state != "waiting" && state != "running"
}

// clientRow is a client on the dashboard with the age of its newest
// successful backup.
type clientRow struct {
	Name      string
	Connected bool
	Revoked   bool
	Last      time.Time // zero: never
	Age       string
	Stale     bool
}

// dashboard: running jobs, the last 24 hours by result, drives, tapes,
// clients and the next scheduled runs.
func (c *Console) dashboard(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	b := c.opts.Backend
	now := c.opts.Now()
	running, err := b.Jobs(ctx, api.JobFilter{State: "running", Limit: api.MaxJobLimit})
	if err != nil {
		return err
	}
	queued, err := b.Jobs(ctx, api.JobFilter{State: "queued", Limit: api.MaxJobLimit})
	if err != nil {
		return err
	}
	waiting, err := b.Jobs(ctx, api.JobFilter{State: "waiting", Limit: api.MaxJobLimit})
	if err != nil {
		return err
	}
	// The last 24 hours by result: per result, the newest dayScan jobs
	// (newest first), counted while they ended within the day; a result
	// with more than that in a day shows "dayScan+", and the page's cost
	// stays bounded however many jobs the catalog holds.
	type count struct {
		Name string
		N    int
		More bool
	}
	var results []count
	for _, st := range []string{"succeeded", "warnings", "failed", "canceled", "interrupted"} {
		js, err := b.Jobs(ctx, api.JobFilter{State: st, Limit: dayScan})
		if err != nil {
			return err
		}
		n := 0
		for _, j := range js {
			if !j.Finished.IsZero() && now.Sub(j.Finished) <= 24*time.Hour {
				n++
			}
		}
		results = append(results, count{st, n, n == dayScan})
	}

	drives, err := b.Drives(ctx, "")
	if err != nil {
		return err
	}
	type libDrives struct {
		Library    string
		Busy, Free int
	}
	var dl []libDrives
	for _, d := range drives {
		if len(dl) == 0 || dl[len(dl)-1].Library != d.Library {
			dl = append(dl, libDrives{Library: d.Library})
		}
		if d.Busy {
			dl[len(dl)-1].Busy++
		} else {
			dl[len(dl)-1].Free++
		}
	}

	tapes, err := b.Tapes(ctx, api.TapeQuery{})
	if err != nil {
		return err
	}
	type tapeGroup struct {
		Library, Pool, State string
		N                    int
	}
	tg := map[[3]string]int{}
	for _, t := range tapes {
		pool := cmp.Or(t.Pool, "scratch")
		tg[[3]string{t.Library, pool, t.State}]++
	}
	var tgs []tapeGroup
	for k, n := range tg {
		tgs = append(tgs, tapeGroup{k[0], k[1], k[2], n})
	}
	slices.SortFunc(tgs, func(a, b tapeGroup) int {
		return cmp.Or(cmp.Compare(a.Library, b.Library), cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.State, b.State))
	})

	cls, err := b.Clients(ctx)
	if err != nil {
		return err
	}
	var rows []clientRow
	for _, cl := range cls {
		row := clientRow{Name: cl.Name, Connected: cl.Connected, Revoked: !cl.Revoked.IsZero()}
		for _, st := range []string{"succeeded", "warnings"} {
			js, err := b.Jobs(ctx, api.JobFilter{Kind: api.KindBackup, State: st, Client: cl.Name, Limit: 1})
			if err != nil {
				return err
			}
			if len(js) == 1 && js[0].Finished.After(row.Last) {
				row.Last = js[0].Finished
			}
		}
		if row.Last.IsZero() {
			row.Age, row.Stale = "never", !row.Revoked
		} else {
			age := now.Sub(row.Last)
			row.Age, row.Stale = ageText(age), age > c.opts.StaleAfter && !row.Revoked
		}
		rows = append(rows, row)
	}

	type nextRun struct {
		Policy, Client, Level string
		Time                  time.Time
	}
	var next []nextRun
	pols, err := b.Policies(ctx)
	if err != nil {
		return err
	}
	for _, p := range pols {
		slots, err := b.NextRuns(ctx, p.Name, 1)
		if err != nil || len(slots) == 0 {
			continue // a policy without a schedule
		}
		next = append(next, nextRun{p.Name, p.Client, slots[0].Level, slots[0].Time})
	}
	slices.SortFunc(next, func(a, b nextRun) int { return a.Time.Compare(b.Time) })

	return c.render(w, "dashboard", s, map[string]any{
		"Running": running, "Queued": len(queued) + len(waiting), "Results": results, "Drives": dl,
		"Tapes": tgs, "Clients": rows, "Next": next, "StaleAfter": ageText(c.opts.StaleAfter)})
}

// dayScan bounds the jobs of one result the dashboard reads for its day.
const dayScan = 500

// ageText is an age as the dashboard shows it: "3 h 20 min", "2 d 4 h".
func ageText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d %d h", int(d.Hours())/24, int(d.Hours())%24)
}

// jobs is the job history with filters (kind, state, client, limit).
func (c *Console) jobs(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	f := api.JobFilter{Kind: q.Get("kind"), State: q.Get("state"), Client: q.Get("client")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return refuse(http.StatusBadRequest, "limit: %q is not a number", l)
		}
		f.Limit = n
	}
	if err := f.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	js, err := c.opts.Backend.Jobs(r.Context(), f)
	if err != nil {
		return err
	}
	return c.render(w, "jobs", s, map[string]any{"Jobs": js, "Filter": f, "States": api.JobStates,
		"Kinds": []string{api.KindBackup, api.KindRestore, api.KindVerify, "copy", "prune", "catalog", "scan", "erase"}})
}

// job is the job monitor of one job.
func (c *Console) job(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	j, err := c.opts.Backend.Job(r.Context(), id)
	if err != nil {
		return err
	}
	return c.render(w, "job", s, map[string]any{"Job": j})
}

// jobEvents streams a job's events to the browser as server-sent events
// (each data line an api.Event in JSON), ending after job_ended.
func (c *Console) jobEvents(w http.ResponseWriter, r *http.Request, _ *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	evs, err := c.opts.Backend.Events(r.Context(), id)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			b, err := json.Marshal(ev)
			if err != nil {
				return nil
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-keep.C:
			// Keep proxies from closing a quiet stream (a queued job).
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}

// cancel cancels a job (admins; CSRF-checked) and goes back to its monitor.
func (c *Console) cancel(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := c.opts.Backend.Cancel(r.Context(), id, "canceled by "+s.who()+" in the console"); err != nil {
		return err
	}
	c.opts.Log.Info("console: job canceled", "job", id, "user", s.who())
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", id), http.StatusSeeOther)
	return nil
}
