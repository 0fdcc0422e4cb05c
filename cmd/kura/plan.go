package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newPlanCmd) }

func newPlanCmd(g *globals) *cobra.Command {
	var (
		throughput, window, capacity, reserve, daily, change string
		fullEvery                                            int
		diff, verify, asJSON                                 bool
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
			req := api.PlanRequest{FullEvery: fullEvery, Diff: diff, Verify: verify}
			w, err := time.ParseDuration(window)
			if err != nil {
				return usageErrorf("--window: %v (e.g. 8h or 6h30m)", err)
			}
			req.WindowSeconds = w.Seconds()
			if req.CapacityBytes, err = units.ParseSize(capacity); err != nil {
				return usageErrorf("--capacity: %v", err)
			}
			if req.Reserve, err = parsePercent(reserve); err != nil {
				return usageErrorf("--reserve: %v", err)
			}
			if req.ChangeRate, err = parsePercent(change); err != nil {
				return usageErrorf("--change-rate: %v", err)
			}
			if throughput == "auto" {
				req.ThroughputAuto = true
			} else if req.ThroughputBytesPerSecond, err = units.ParseRate(throughput); err != nil {
				return usageErrorf("--throughput: %v", err)
			}
			switch daily {
			case "":
			case "auto":
				req.DailyAuto = true
			default:
				if req.DailyBytes, err = units.ParseSize(daily); err != nil {
					return usageErrorf("--daily: %v", err)
				}
			}
			show := func(p *api.Plan, err error) error {
				var ae *api.Error
				switch {
				case errors.As(err, &ae) && ae.Field == "throughput_auto":
					return fmt.Errorf("--throughput auto: %w; give a rate (e.g. 25MiB/s) or run kura bench", err)
				case errors.As(err, &ae) && ae.Field == "daily_auto":
					return fmt.Errorf("--daily auto: %w; give a size", err)
				case err != nil:
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), p)
				}
				for _, line := range p.Reasons {
					fmt.Fprintln(cmd.OutOrStdout(), line)
				}
				return nil
			}
			if !req.ThroughputAuto && !req.DailyAuto && g.client == "" {
				// Given figures only: a pure computation, the same one a
				// server makes, that needs no home and no server.
				return show(service.Plan(req, nil))
			}
			// The history is the catalog's: the server's, or this home's.
			return withService(cmd, g, func(svc api.Service) error { return show(svc.Plan(cmdContext(cmd), req)) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&throughput, "throughput", "auto", "sustained backup rate (e.g. 25MiB/s, 1Gbit) or auto (this catalog's history)")
	f.StringVar(&window, "window", "8h", "the backup window")
	f.StringVar(&capacity, "capacity", "", "backup storage capacity (e.g. 3TiB)")
	f.StringVar(&reserve, "reserve", "30%", "share of the window kept for verify and other work")
	f.StringVar(&daily, "daily", "", "size of a full backup, or auto; default: what the window allows")
	f.StringVar(&change, "change-rate", "0", "share of the data that changes per day (with --full-every)")
	intVar(f, &fullEvery, "full-every", 1, 1, api.MaxFullEvery, "days between full backups (incrementals in between)")
	f.BoolVar(&diff, "diff", false, "differentials between fulls instead of incrementals")
	f.BoolVar(&verify, "verify", false, "every backup is verified")
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
