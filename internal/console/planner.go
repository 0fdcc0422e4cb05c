package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/units"
)

// The planner page: seed 004's sizing form (throughput, window, capacity,
// reserve, and optionally the daily size and an incremental or
// differential cycle) and its answer with the reasons, from api.Service's
// Plan. The measured throughput of recent backup jobs is offered as the
// input: the median average rate of the newest successful ones, the
// figure `kura plan --throughput auto` uses. A plan changes nothing, so
// the form is a GET that anyone signed in may use.

// plannerForm is the planner's inputs as typed.
type plannerForm struct {
	Throughput, Window, Capacity, Reserve, Daily, Change, FullEvery string
	Diff, Verify                                                    bool
}

// seed004 is the form's first values: seed 004's RAID-5 server (25 MB/s
// into 3 TB in an 8-hour window, 30 % kept for verify and other work).
var seed004 = plannerForm{Throughput: "25MiB/s", Window: "8h", Capacity: "3TiB", Reserve: "30"}

// plannerHistory is how many of the newest successful backup jobs the
// measured throughput comes from (service.Plan's auto reads as many).
const plannerHistory = 200

// query is the form as a planner URL's query.
func (f plannerForm) query() string {
	q := url.Values{"throughput": {f.Throughput}, "window": {f.Window}, "capacity": {f.Capacity}, "reserve": {f.Reserve},
		"daily": {f.Daily}, "change": {f.Change}, "full_every": {f.FullEvery}}
	if f.Diff {
		q.Set("diff", "on")
	}
	if f.Verify {
		q.Set("verify", "on")
	}
	return q.Encode()
}

// request is the plan request of the form, or what is wrong with it.
func (f plannerForm) request() (api.PlanRequest, error) {
	var req api.PlanRequest
	var err error
	if req.ThroughputBytesPerSecond, err = units.ParseRate(f.Throughput); err != nil {
		return req, fmt.Errorf("throughput: %v", err)
	}
	w, err := time.ParseDuration(strings.ReplaceAll(f.Window, " ", ""))
	if err != nil || w <= 0 {
		return req, fmt.Errorf("window: %q is not a length of time (8h, 6h30m)", f.Window)
	}
	req.WindowSeconds = w.Seconds()
	if req.CapacityBytes, err = units.ParseSize(f.Capacity); err != nil || req.CapacityBytes <= 0 {
		return req, fmt.Errorf("capacity: %q is not a size (3TiB, 2TB)", f.Capacity)
	}
	percent := func(what, v string) (float64, error) {
		if v == "" {
			return 0, nil
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("%s: %q is not a percentage from 0 to 100", what, v)
		}
		return p / 100, nil
	}
	if req.Reserve, err = percent("reserve", f.Reserve); err != nil {
		return req, err
	}
	if req.ChangeRate, err = percent("change rate", f.Change); err != nil {
		return req, err
	}
	if f.Daily != "" {
		if req.DailyBytes, err = units.ParseSize(f.Daily); err != nil {
			return req, fmt.Errorf("daily full: %q is not a size (1.2TiB; empty: what the window allows)", f.Daily)
		}
	}
	if f.FullEvery != "" {
		if req.FullEvery, err = strconv.Atoi(f.FullEvery); err != nil || req.FullEvery < 1 {
			return req, fmt.Errorf("full every: %q is not a number of days (1 or more)", f.FullEvery)
		}
	}
	req.Diff, req.Verify = f.Diff, f.Verify
	return req, req.Validate()
}

// measured is the measured throughput offered as the input.
type measured struct {
	Rate  float64 // bytes/s, the median
	Jobs  []api.Job
	Count int
	Use   string // the planner's URL with the rate as the throughput
}

// planner shows the form and its plan.
func (c *Console) planner(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	form := seed004
	if len(q) > 0 {
		form = plannerForm{Throughput: q.Get("throughput"), Window: q.Get("window"), Capacity: q.Get("capacity"),
			Reserve: q.Get("reserve"), Daily: q.Get("daily"), Change: q.Get("change"), FullEvery: q.Get("full_every"),
			Diff: q.Get("diff") == "on", Verify: q.Get("verify") == "on"}
	}
	m, err := c.measured(r, form)
	if err != nil {
		return err
	}
	data := map[string]any{"Form": form, "Measured": m}
	req, err := form.request()
	var plan *api.Plan
	if err == nil {
		plan, err = c.opts.Backend.Plan(r.Context(), req)
		var ae *api.Error
		if err != nil && !(errors.As(err, &ae) && ae.Code == api.CodeBadRequest) {
			return err // not the inputs' fault
		}
	}
	if err != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusBadRequest)
		data["Error"] = err.Error()
		return c.render(w, "planner", s, data)
	}
	data["Plan"] = plan
	return c.render(w, "planner", s, data)
}

// measured is the median average rate of the newest successful backup
// jobs, with the newest of them to show; nil without any.
func (c *Console) measured(r *http.Request, form plannerForm) (*measured, error) {
	var jobs []api.Job
	for _, st := range []string{"succeeded", "warnings"} {
		js, err := c.opts.Backend.Jobs(r.Context(), api.JobFilter{Kind: api.KindBackup, State: st, Limit: plannerHistory})
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, js...)
	}
	slices.SortFunc(jobs, func(a, b api.Job) int { return b.Finished.Compare(a.Finished) })
	jobs = slices.DeleteFunc(jobs, func(j api.Job) bool { return j.AvgRate <= 0 })
	if len(jobs) > plannerHistory {
		jobs = jobs[:plannerHistory]
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	rates := make([]float64, len(jobs))
	for i, j := range jobs {
		rates[i] = j.AvgRate
	}
	slices.Sort(rates)
	med := rates[len(rates)/2]
	if len(rates)%2 == 0 {
		med = (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
	}
	form.Throughput = fmt.Sprintf("%.2fMB/s", med/1e6)
	return &measured{Rate: med, Jobs: jobs[:min(len(jobs), 10)], Count: len(jobs), Use: "/planner?" + form.query()}, nil
}

func init() {
	funcs["rate"] = func(bps float64) string { return units.FormatRate(bps) }
}
