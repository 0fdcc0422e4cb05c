package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/planner"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newPlanCmd) }

func newPlanCmd(g *globals) *cobra.Command {
	var (
		throughput, window, capacity, reserve, daily, change string
		in                                                   planner.Input
		asJSON                                               bool
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Size a backup design: what fits the window, how many generations the capacity holds",
		Long: `Turn a measured throughput into a backup design, as seed 004 sizes a backup
server: what fits in the backup window, how many generations the capacity
holds, whether verify still fits, and when to scale up or out. Every figure
comes with its reason.

--throughput auto and --daily auto use this catalog's history: the median
average rate of recent backup jobs, and the median size of recent full backups.`,
		Example: `  kura plan --throughput 25MiB/s --window 8h --capacity 3TiB --reserve 30%     # 6 generations
  kura plan --throughput auto --daily auto --window 6h --capacity 20TiB --change-rate 3% --full-every 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if capacity == "" {
				return usageErrorf("--capacity is needed (e.g. 3TiB)")
			}
			var err error
			if in.Window, err = time.ParseDuration(window); err != nil {
				return usageErrorf("--window: %v (e.g. 8h or 6h30m)", err)
			}
			if in.Capacity, err = units.ParseSize(capacity); err != nil {
				return usageErrorf("--capacity: %v", err)
			}
			if in.Reserve, err = parsePercent(reserve); err != nil {
				return usageErrorf("--reserve: %v", err)
			}
			if in.ChangeRate, err = parsePercent(change); err != nil {
				return usageErrorf("--change-rate: %v", err)
			}
			var history []*catalog.Job
			var fulls []*catalog.Saveset
			if throughput == "auto" || daily == "auto" {
				env, err := openEnv(g)
				if err != nil {
					return err
				}
				defer env.Close()
				if history, err = env.Catalog.Jobs(200); err != nil {
					return err
				}
				if fulls, err = env.Catalog.Savesets(catalog.SavesetFilter{Statuses: []string{catalog.StatusComplete}, Levels: []string{catalog.LevelFull}}); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if throughput == "auto" {
				var rates []float64
				for _, j := range history {
					if j.Kind == catalog.KindBackup && (j.State == catalog.StateSucceeded || j.State == catalog.StateWarnings) && j.AvgRate > 0 {
						rates = append(rates, j.AvgRate)
					}
				}
				if len(rates) == 0 {
					return fmt.Errorf("--throughput auto: no finished backup in this catalog yet; give a rate (e.g. 25MiB/s) or run kura bench")
				}
				in.Throughput = median(rates)
				fmt.Fprintf(out, "Throughput: %s, the median of %d backup jobs.\n", units.FormatRate(in.Throughput), len(rates))
			} else if in.Throughput, err = units.ParseRate(throughput); err != nil {
				return usageErrorf("--throughput: %v", err)
			}
			switch daily {
			case "":
			case "auto":
				var sizes []float64
				for _, s := range fulls {
					sizes = append(sizes, float64(s.SourceBytes))
				}
				if len(sizes) == 0 {
					return fmt.Errorf("--daily auto: no complete full backup in this catalog yet; give a size")
				}
				in.Daily = int64(median(sizes))
				fmt.Fprintf(out, "Daily full: %s, the median of %d full backups.\n", units.FormatSize(in.Daily), len(sizes))
			default:
				if in.Daily, err = units.ParseSize(daily); err != nil {
					return usageErrorf("--daily: %v", err)
				}
			}
			r, err := planner.Plan(in)
			if err != nil {
				return usageErrorf("%w", err)
			}
			if asJSON {
				return printJSON(out, r)
			}
			for _, line := range r.Reasons {
				fmt.Fprintln(out, line)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&throughput, "throughput", "auto", "sustained backup rate (e.g. 25MiB/s, 1Gbit) or auto (this catalog's history)")
	f.StringVar(&window, "window", "8h", "the backup window")
	f.StringVar(&capacity, "capacity", "", "backup storage capacity (e.g. 3TiB)")
	f.StringVar(&reserve, "reserve", "30%", "share of the window kept for verify and other work")
	f.StringVar(&daily, "daily", "", "size of a full backup, or auto; default: what the window allows")
	f.StringVar(&change, "change-rate", "0", "share of the data that changes per day (with --full-every)")
	intVar(f, &in.FullEvery, "full-every", 1, 1, 366, "days between full backups (incrementals in between)")
	f.BoolVar(&in.Diff, "diff", false, "differentials between fulls instead of incrementals")
	f.BoolVar(&in.Verify, "verify", false, "every backup is verified")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// parsePercent reads "30%", "30" or "0.3%" as a fraction (0.3).
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("want a percentage between 0 and 100, not %q", s)
	}
	return v / 100, nil
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
