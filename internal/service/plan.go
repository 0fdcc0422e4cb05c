package service

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/planner"
	"github.com/kura-backup/kura/internal/units"
)

// planHistory is how many of the newest backup jobs give the throughput.
const planHistory = 200

// ErrNoHistory: an auto input of a plan has no history to come from.
var ErrNoHistory = errors.New("no history")

// noHistory is an ErrNoHistory that says which history is missing.
type noHistory string

func (e noHistory) Error() string        { return string(e) }
func (e noHistory) Is(target error) bool { return target == ErrNoHistory }

func (l *Local) Plan(ctx context.Context, req api.PlanRequest) (*api.Plan, error) {
	return Plan(req, l.env.Catalog)
}

// Plan is the plan of req. cat answers the auto inputs from its history; a
// request without them needs no catalog (nil), so a plan of given figures
// is computed anywhere, the same way.
func Plan(req api.PlanRequest, cat *catalog.Catalog) (*api.Plan, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	in := planner.Input{Throughput: req.ThroughputBytesPerSecond, Window: time.Duration(req.WindowSeconds * float64(time.Second)),
		Capacity: req.CapacityBytes, Reserve: req.Reserve, Daily: req.DailyBytes, ChangeRate: req.ChangeRate,
		FullEvery: req.FullEvery, Diff: req.Diff, Verify: req.Verify}
	var said []string
	if (req.ThroughputAuto || req.DailyAuto) && cat == nil {
		return nil, Err(errors.New("plan: the auto inputs need a catalog"))
	}
	if req.ThroughputAuto {
		jobs, err := cat.FindJobs(catalog.JobFilter{Kind: catalog.KindBackup, Limit: planHistory})
		if err != nil {
			return nil, Err(err)
		}
		var rates []float64
		for _, j := range jobs {
			if (j.State == catalog.StateSucceeded || j.State == catalog.StateWarnings) && j.AvgRate > 0 {
				rates = append(rates, j.AvgRate)
			}
		}
		if len(rates) == 0 {
			return nil, api.Wrap(api.CodeConflict, "throughput_auto", noHistory("no finished backup in this catalog yet"))
		}
		in.Throughput = median(rates)
		said = append(said, fmt.Sprintf("Throughput: %s, the median of %d backup jobs.", units.FormatRate(in.Throughput), len(rates)))
	}
	if req.DailyAuto {
		fulls, err := cat.Savesets(catalog.SavesetFilter{Statuses: []string{catalog.StatusComplete}, Levels: []string{catalog.LevelFull}})
		if err != nil {
			return nil, Err(err)
		}
		var sizes []float64
		for _, s := range fulls {
			sizes = append(sizes, float64(s.SourceBytes))
		}
		if len(sizes) == 0 {
			return nil, api.Wrap(api.CodeConflict, "daily_auto", noHistory("no complete full backup in this catalog yet"))
		}
		in.Daily = int64(median(sizes))
		said = append(said, fmt.Sprintf("Daily full: %s, the median of %d full backups.", units.FormatSize(in.Daily), len(sizes)))
	}
	r, err := planner.Plan(in)
	if err != nil {
		// The planner fails only on inputs out of range.
		return nil, api.Wrap(api.CodeBadRequest, "", err)
	}
	return &api.Plan{WindowBytes: r.WindowBytes, DailyBytes: r.Daily, Fits: r.Fits, CycleBytes: r.CycleBytes,
		Generations: r.Generations, VerifyFits: r.VerifyFits, ServersNeeded: r.ServersNeeded,
		Reasons: append(said, r.Reasons...)}, nil
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
