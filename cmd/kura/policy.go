package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newPolicyCmd) }

// policyFlags are the flags create and edit share.
type policyFlags struct {
	p       catalog.Policy
	bwlimit string
	asJSON  bool
}

func (f *policyFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.p.Selection, "selection", "", "the client's selection set to back up")
	fs.StringVar(&f.p.FullCron, "full", "", "cron schedule of full backups (5 fields: min hour day month weekday, or @daily …)")
	fs.StringVar(&f.p.DiffCron, "diff", "", "cron schedule of differential backups")
	fs.StringVar(&f.p.IncrCron, "incr", "", "cron schedule of incremental backups")
	fs.StringVar(&f.p.Zone, "zone", "", "time zone of the schedules (IANA name, e.g. Asia/Tokyo; default the server's)")
	intVar(fs, &f.p.KeepGenerations, "keep-generations", 0, 0, math.MaxInt32, "keep the N newest complete generations (a full and what depends on it)")
	intVar(fs, &f.p.KeepDays, "keep-days", 0, 0, 100*366, "keep every saveset younger than D days")
	fs.StringVar(&f.p.Library, "vtl", "", "library to write to (default: the default library)")
	fs.StringVar(&f.p.Pool, "pool", "", "tape pool (default: the policy's name)")
	fs.BoolVar(&f.p.Verify, "verify", false, "verify each backup as a phase of its job")
	fs.StringVar(&f.bwlimit, "bwlimit", "", "bandwidth limit of its backups (100Mbit, 12.5MB/s; default the client's)")
	enumVar(fs, &f.p.Compress, "compress", "auto", compressWords, "none, low, medium, high or auto")
	fs.StringVar(&f.p.CopyTo, "copy-to", "", "after each backup, copy the saveset to this library (offsite copy)")
	fs.BoolVar(&f.p.Encrypt, "encrypt", false, "the client's agent encrypts this policy's backups (as kura client set --encrypt does for all of them; --encrypt=false: the policy no longer asks)")
}

func newPolicyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Backup policies: schedules, retention and the tape pool of a client's selection",
		Long: `A policy backs up one client's selection set on schedules (standard 5-field
cron, in a time zone), keeps generations by count and age, and writes to its
own tape pool. The server runs policies on their schedules; after downtime a
missed run happens once. "kura savesets --why" says which rule keeps or
expires each saveset, and "kura prune" applies the rules.`,
		Example: `  kura policy create nightly --client web1 --selection www --full "0 1 * * 0" --incr "0 1 * * 1-6" --keep-generations 4 --zone Asia/Tokyo
  kura policy run nightly --level full
  kura savesets --why`,
	}
	var cf policyFlags
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a policy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := cf.p
			req := api.PolicyCreate{Name: args[0], Client: g.client, Selection: p.Selection, FullCron: p.FullCron,
				DiffCron: p.DiffCron, IncrCron: p.IncrCron, Zone: p.Zone, KeepGenerations: p.KeepGenerations,
				KeepDays: p.KeepDays, Library: p.Library, Pool: p.Pool, Verify: p.Verify, Compress: p.Compress, CopyTo: p.CopyTo, Encrypt: p.Encrypt}
			if cf.bwlimit != "" {
				bw, err := parseRate(cf.bwlimit)
				if err != nil {
					return err
				}
				req.BWLimit = bw
			}
			return withService(cmd, g, func(svc api.Service) error {
				pol, err := svc.CreatePolicy(cmdContext(cmd), req)
				if apiclient.Code(err) == api.CodeConflict {
					return fmt.Errorf("%w (kura policy edit)", err)
				}
				if err != nil {
					return err
				}
				if cf.asJSON {
					return printJSON(cmd.OutOrStdout(), pol)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Policy %s created.\n", pol.Name)
				return printPolicy(cmd, svc, pol)
			})
		},
	}
	cf.add(create.Flags())
	create.Flags().BoolVar(&cf.asJSON, "json", false, "print the policy as JSON (as policy show does)")

	var ef policyFlags
	edit := &cobra.Command{
		Use:   "edit NAME",
		Short: "Change a policy: only the flags given change",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req api.PolicyEdit
			fs := cmd.Flags()
			text := func(name string, v string) *string {
				if !fs.Changed(name) {
					return nil
				}
				return &v
			}
			num := func(name string, v int) *int {
				if !fs.Changed(name) {
					return nil
				}
				return &v
			}
			req.Selection, req.FullCron, req.DiffCron = text("selection", ef.p.Selection), text("full", ef.p.FullCron), text("diff", ef.p.DiffCron)
			req.IncrCron, req.Zone, req.Library = text("incr", ef.p.IncrCron), text("zone", ef.p.Zone), text("vtl", ef.p.Library)
			req.Pool, req.Compress, req.CopyTo = text("pool", ef.p.Pool), text("compress", ef.p.Compress), text("copy-to", ef.p.CopyTo)
			req.KeepGenerations, req.KeepDays = num("keep-generations", ef.p.KeepGenerations), num("keep-days", ef.p.KeepDays)
			if fs.Changed("verify") {
				req.Verify = &ef.p.Verify
			}
			if fs.Changed("encrypt") {
				req.Encrypt = &ef.p.Encrypt
			}
			if fs.Changed("bwlimit") {
				bw, err := parseRate(ef.bwlimit)
				if err != nil {
					return err
				}
				req.BWLimit = &bw
			}
			return withService(cmd, g, func(svc api.Service) error {
				pol, err := svc.EditPolicy(cmdContext(cmd), args[0], req)
				if err != nil {
					return err
				}
				if ef.asJSON {
					return printJSON(cmd.OutOrStdout(), pol)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Policy %s changed.\n", pol.Name)
				return printPolicy(cmd, svc, pol)
			})
		},
	}
	ef.add(edit.Flags())
	edit.Flags().BoolVar(&ef.asJSON, "json", false, "print the policy as JSON (as policy show does)")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List policies with their schedules, retention and next run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				ps, err := svc.Policies(cmdContext(cmd))
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), ps)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "POLICY\tCLIENT\tSELECTION\tSCHEDULES\tKEEP\tPOOL\tNEXT RUN\tLAST RUN")
				for i := range ps {
					p := &ps[i]
					next, err := nextRun(cmd, svc, p.Name)
					if err != nil {
						return err
					}
					nextText := "-"
					if next != nil {
						nextText = next.Time.Local().Format("2006-01-02 15:04") + " " + next.Level
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, dash(p.Client), p.Selection, schedules(p),
						keepText(p), p.Pool, nextText, lastRunText(p))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a policy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				p, err := svc.Policy(cmdContext(cmd), args[0])
				if err != nil {
					return err
				}
				if showJSON {
					return printJSON(cmd.OutOrStdout(), p)
				}
				return printPolicy(cmd, svc, p)
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON")

	var (
		nextCount int
		nextJSON  bool
	)
	next := &cobra.Command{
		Use:   "next NAME",
		Short: "List the next runs a policy's schedules start, with their levels",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				runs, err := svc.NextRuns(cmdContext(cmd), args[0], nextCount)
				if err != nil {
					return err
				}
				if nextJSON {
					return printJSON(cmd.OutOrStdout(), runs)
				}
				if len(runs) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "Policy %s has no schedules: it runs when asked (kura policy run).\n", args[0])
					return nil
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "WHEN\tLEVEL")
				for _, r := range runs {
					fmt.Fprintf(tw, "%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04 MST Mon"), r.Level)
				}
				return tw.Flush()
			})
		},
	}
	intVar(next.Flags(), &nextCount, "count", 5, 1, api.MaxNextRuns, "how many runs")
	next.Flags().BoolVar(&nextJSON, "json", false, "print as JSON")

	var (
		preview     api.RetentionPreview
		previewJSON bool
	)
	previewCmd := &cobra.Command{
		Use:   "preview NAME",
		Short: "Say which of the policy's savesets its retention keeps or expires, and why; changes nothing",
		Long: `Preview retention for the policy's savesets at this moment: each saveset
with its verdict (keep or expire), the rule that decided and why. With
--keep-generations or --keep-days the preview uses those rules in place
of the policy's, to try a change before "kura policy edit". Nothing is
expired; "kura prune" applies the policy's rules.`,
		Example: `  kura policy preview nightly
  kura policy preview nightly --keep-generations 2 --keep-days 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.RetentionPreview{}
			if cmd.Flags().Changed("keep-generations") {
				req.KeepGenerations = preview.KeepGenerations
			}
			if cmd.Flags().Changed("keep-days") {
				req.KeepDays = preview.KeepDays
			}
			return withService(cmd, g, func(svc api.Service) error {
				ds, err := svc.PolicyRetention(cmdContext(cmd), args[0], req)
				if err != nil {
					return err
				}
				if !previewJSON && len(ds) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "Policy %s has no savesets yet.\n", args[0])
					return nil
				}
				return printDecisions(cmd, ds, previewJSON)
			})
		},
	}
	preview.KeepGenerations, preview.KeepDays = new(int), new(int)
	intVar(previewCmd.Flags(), preview.KeepGenerations, "keep-generations", 0, 0, math.MaxInt32, "preview with this many generations kept instead of the policy's")
	intVar(previewCmd.Flags(), preview.KeepDays, "keep-days", 0, 0, 100*366, "preview with this many days kept instead of the policy's")
	previewCmd.Flags().BoolVar(&previewJSON, "json", false, "print as JSON")

	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a policy (its savesets stay, and are no longer expired automatically)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				if err := svc.RemovePolicy(cmdContext(cmd), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Policy %s removed; its savesets stay until you erase their tapes.\n", args[0])
				return nil
			})
		},
	}

	var level string
	var detach, runJSON bool
	run := &cobra.Command{
		Use:   "run NAME",
		Short: "Run a policy now (default level: full)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			srv, err := g.server()
			if err != nil {
				return err
			}
			var p *catalog.Policy
			if err := withEnv(g, func(env *engine.Env) error {
				if srv != nil {
					return nil
				}
				p, err = env.Catalog.Policy(args[0])
				if errors.Is(err, catalog.ErrNotFound) {
					return engine.Missing("policy", "no policy named %q", args[0])
				}
				return err
			}); err != nil {
				return err
			}
			switch {
			case srv != nil:
				// Through the server: it knows the policy and queues the job.
				defer srv.Close()
				ids, err := srv.RunPolicy(cmdContext(cmd), args[0], level)
				if err != nil {
					return err
				}
				if detach {
					for _, id := range ids {
						fmt.Fprintln(cmd.OutOrStdout(), id)
					}
					return nil
				}
				return followAndPrint(cmd, srv, ids, runJSON)
			case p.Client != "":
				return fmt.Errorf("policy %s backs up client %s: run it through the server (%v)", p.Name, p.Client, g.noServer())
			}
			// A policy of this machine, run here.
			return withEnv(g, func(env *engine.Env) error {
				sel, err := env.Catalog.Selection("", p.Selection)
				if err != nil {
					return err
				}
				lvl, _ := compress.ParseLevel(p.Compress)
				if level == api.LevelScheduled {
					_, level = engine.NextRun(p, time.Now())
					level = cmp.Or(level, engine.LevelFull)
				}
				res, err := env.Backup(cmdContext(cmd), engine.BackupOptions{Selection: sel.Name, Library: p.Library, Level: level,
					Compress: lvl, Verify: p.Verify, Policy: p.Name, Pool: p.Pool})
				if res != nil {
					printResult(cmd, res, runJSON)
				}
				return jobError(err)
			})
		},
	}
	enumVar(run.Flags(), &level, "level", engine.LevelFull, runLevels, "full, incr, diff, or scheduled (the level of its next scheduled run)")
	run.Flags().BoolVar(&detach, "detach", false, "with a server: queue the job, print its ID and return")
	run.Flags().BoolVar(&runJSON, "json", false, "print the figures as JSON")
	cmd.AddCommand(create, edit, list, show, next, previewCmd, rm, run)
	return cmd
}

// runLevels are policy run's levels: a backup's, or its next run's.
var runLevels = []string{engine.LevelFull, engine.LevelIncr, engine.LevelDiff, api.LevelScheduled}

func schedules(p *api.Policy) string {
	var s []string
	for _, c := range []struct{ l, e string }{{"full", p.FullCron}, {"diff", p.DiffCron}, {"incr", p.IncrCron}} {
		if c.e != "" {
			s = append(s, c.l+" "+c.e)
		}
	}
	if len(s) == 0 {
		return "(run by hand)"
	}
	return strings.Join(s, "; ")
}

func keepText(p *api.Policy) string {
	var s []string
	if p.KeepGenerations > 0 {
		s = append(s, fmt.Sprintf("%d gen", p.KeepGenerations))
	}
	if p.KeepDays > 0 {
		s = append(s, units.Count(int64(p.KeepDays), "day"))
	}
	return strings.Join(s, " + ")
}

func lastRunText(p *api.Policy) string {
	if p.LastRun == nil {
		return "-"
	}
	return timeOrDash(*p.LastRun)
}

// nextRun is the next run of a policy's schedules (nil: it has none).
func nextRun(cmd *cobra.Command, svc api.Service, name string) (*api.PolicySlot, error) {
	runs, err := svc.NextRuns(cmdContext(cmd), name, 1)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return &runs[0], nil
}

func printPolicy(cmd *cobra.Command, svc api.Service, p *api.Policy) error {
	next, err := nextRun(cmd, svc, p.Name)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "Policy %s\n", p.Name)
	fmt.Fprintf(out, "  Client       %s\n", orDash(p.Client, "this machine"))
	fmt.Fprintf(out, "  Selection    %s\n", p.Selection)
	fmt.Fprintf(out, "  Schedules    %s", schedules(p))
	if p.Zone != "" {
		fmt.Fprintf(out, " (%s)", p.Zone)
	}
	fmt.Fprintln(out)
	if next != nil {
		fmt.Fprintf(out, "  Next run     %s (%s)\n", next.Time.Local().Format("2006-01-02 15:04 MST"), next.Level)
	}
	fmt.Fprintf(out, "  Retention    %s\n", keepText(p))
	fmt.Fprintf(out, "  Library      %s, pool %s\n", orDash(p.Library, engine.DefaultLibrary), p.Pool)
	if p.CopyTo != "" {
		fmt.Fprintf(out, "  Copy to      %s\n", p.CopyTo)
	}
	extra := []string{"compress " + orDash(p.Compress, "auto")}
	if p.Verify {
		extra = append(extra, "verify")
	}
	if p.Encrypt {
		extra = append(extra, "encrypt")
	}
	if p.BWLimitKBps > 0 {
		extra = append(extra, "bwlimit "+units.FormatRate(p.BWLimitKBps*1024))
	}
	fmt.Fprintf(out, "  Options      %s\n", strings.Join(extra, ", "))
	if p.LastRun != nil {
		fmt.Fprintf(out, "  Last run     %s\n", p.LastRun.Local().Format("2006-01-02 15:04:05"))
	}
	return nil
}

func orDash(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
