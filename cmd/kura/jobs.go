package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newJobsCmd) }

func newJobsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "The job monitor: past and running jobs with their figures",
	}
	var (
		filter api.JobFilter
		asJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Long: `List jobs, newest first: every kind of job the catalog holds (backup, restore,
verify, copy, prune, …). --kind, --state and --client (with a server, or on
a server's home) select jobs before --limit counts them.`,
		Example: `  kura jobs list --state failed --limit 5
  kura jobs list --client web1 --kind backup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := filter
			f.Client = g.client
			return serviceFor(g, true, func(svc api.Service) error {
				jobs, err := svc.Jobs(cmdContext(cmd), f)
				if err != nil {
					return err
				}
				if asJSON {
					out := []jobJSON{}
					for i := range jobs {
						out = append(out, toJobJSON(&jobs[i], false))
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "JOB\tKIND\tCLIENT\tLEVEL\tSTATE\tSAVESET\tSTARTED\tELAPSED\tFILES\tSOURCE\tAVG KB/s\tPEAK KB/s\tWARNINGS")
				for _, j := range jobs {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", j.ID, j.Kind, dash(j.Client), dash(j.Level), j.State,
						idOrDash(j.SavesetID), j.Started.Local().Format("2006-01-02 15:04:05"), elapsed(j.Started, j.Finished),
						units.Thousands(j.Files), units.FormatSize(j.SourceBytes), units.Thousands(int64(j.AvgRate/1024)),
						units.Thousands(int64(j.PeakRate/1024)), j.WarningCount)
				}
				return tw.Flush()
			})
		},
	}
	lf := list.Flags()
	intVar(lf, &filter.Limit, "limit", api.DefaultJobLimit, 1, api.MaxJobLimit, "show at most this many jobs (of those selected)")
	lf.StringVar(&filter.Kind, "kind", "", "only jobs of this kind (backup, restore, verify, copy, …)")
	lf.StringVar(&filter.State, "state", "", "only jobs in this state ("+strings.Join(api.JobStates, ", ")+")")
	lf.BoolVar(&asJSON, "json", false, "print as JSON")
	_ = list.RegisterFlagCompletionFunc("state", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, st := range api.JobStates {
			if strings.HasPrefix(st, prefix) {
				out = append(out, st)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})

	var showJSON bool
	show := &cobra.Command{
		Use:   "show JOB",
		Short: "Show a job: phases, figures, warnings and log tail",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "JOB")
			if err != nil {
				return err
			}
			return withService(cmd, g, func(svc api.Service) error {
				j, err := svc.Job(cmdContext(cmd), id)
				if err != nil {
					return err
				}
				if showJSON {
					return printJSON(cmd.OutOrStdout(), toJobJSON(j, true))
				}
				printJob(cmd.OutOrStdout(), j)
				return nil
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON")

	var watchJSON bool
	watch := &cobra.Command{
		Use:   "watch JOB",
		Short: "Follow a job live until it ends, then print its figures",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "JOB")
			if err != nil {
				return err
			}
			srv, err := g.server()
			if err != nil {
				return err
			}
			if srv != nil {
				defer srv.Close()
				return followAndPrint(cmd, srv, []int64{id}, watchJSON)
			}
			return withEnv(g, func(env *engine.Env) error { return watchLocal(cmd, env, id, watchJSON) })
		},
	}
	watch.Flags().BoolVar(&watchJSON, "json", false, "print the figures as JSON")
	var cancelJSON bool
	cancel := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a queued or running job on the server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "JOB")
			if err != nil {
				return err
			}
			srv, err := g.needServer()
			if err != nil {
				return fmt.Errorf("%w (a local job stops with Ctrl-C where it runs)", err)
			}
			defer srv.Close()
			j, err := srv.Cancel(cmdContext(cmd), id)
			if err != nil {
				return err
			}
			if cancelJSON {
				return printJSON(cmd.OutOrStdout(), toJobJSON(j, false))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Job %d: %s\n", j.ID, j.State)
			return nil
		},
	}
	cancel.Flags().BoolVar(&cancelJSON, "json", false, "print the job as JSON (as jobs show does)")
	cmd.AddCommand(list, show, watch, cancel)
	return cmd
}

// printJob prints a job as jobs show does.
func printJob(out io.Writer, j *api.Job) {
	fmt.Fprintf(out, "Job %d  %s %s  %s\n", j.ID, j.Kind, j.Level, j.State)
	if j.Client != "" {
		fmt.Fprintf(out, "  Client       %s\n", j.Client)
	}
	if j.Reason != "" {
		fmt.Fprintf(out, "  Waiting      %s\n", j.Reason)
	}
	if j.SavesetID != 0 {
		fmt.Fprintf(out, "  Saveset      %d (%s)\n", j.SavesetID, j.Selection)
	}
	fmt.Fprintf(out, "  Started      %s\n", j.Started.Local().Format("2006-01-02 15:04:05"))
	if !j.Finished.IsZero() {
		fmt.Fprintf(out, "  Finished     %s (%s)\n", j.Finished.Local().Format("2006-01-02 15:04:05"), elapsed(j.Started, j.Finished))
	}
	fmt.Fprintf(out, "  Files        %s\n", units.Thousands(j.Files))
	fmt.Fprintf(out, "  Source       %s\n", units.FormatSize(j.SourceBytes))
	fmt.Fprintf(out, "  Media        %s   ratio %s\n", units.FormatSize(j.MediaBytes), units.Ratio(j.SourceBytes, j.MediaBytes))
	fmt.Fprintf(out, "  Average      %s KB/s   Peak %s KB/s\n", units.Thousands(int64(j.AvgRate/1024)), units.Thousands(int64(j.PeakRate/1024)))
	if len(j.Tapes) > 0 {
		fmt.Fprintf(out, "  Tapes        %s\n", strings.Join(j.Tapes, ", "))
	}
	for _, p := range j.Phases {
		fmt.Fprintf(out, "  Phase %-7s %s, %s in %s: avg %s KB/s, peak %s KB/s\n", p.Name, units.Count(p.Files, "file"),
			units.FormatSize(p.Bytes), elapsed(p.Start, p.End), units.Thousands(int64(p.AvgRate/1024)), units.Thousands(int64(p.PeakRate/1024)))
	}
	if j.Error != "" {
		fmt.Fprintf(out, "  Error        %s\n", jobErrorText(j))
	}
	if j.WarningCount > 0 {
		fmt.Fprintf(out, "  Warnings     %d\n", j.WarningCount)
		for _, w := range j.Warnings {
			fmt.Fprintf(out, "    %s\n", w)
		}
	}
	if len(j.Log) > 0 {
		fmt.Fprintln(out, "  Log")
		for _, l := range j.Log {
			fmt.Fprintf(out, "    %s\n", l)
		}
	}
}

// watchLocal follows a job of another local process through the catalog.
func watchLocal(cmd *cobra.Command, env *engine.Env, id int64, asJSON bool) error {
	for {
		j, err := env.Catalog.Job(id)
		if errors.Is(err, catalog.ErrNotFound) {
			return engine.Missing("job", "no job %d", id)
		}
		if err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		switch j.State {
		case catalog.StateQueued, catalog.StateWaiting, catalog.StateRunning:
			select {
			case <-time.After(200 * time.Millisecond): // polling another process's record
			case <-cmdContext(cmd).Done():
				return cmdContext(cmd).Err()
			}
			continue
		}
		aj := service.JobOf(env.Catalog, j)
		return printJobs(cmd, []*api.Job{&aj}, asJSON)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func idOrDash(id int64) string {
	if id == 0 {
		return "-"
	}
	return fmt.Sprint(id)
}

func elapsed(start, end time.Time) string {
	if end.IsZero() {
		return "running"
	}
	d := end.Sub(start).Round(10 * time.Millisecond)
	if d >= time.Minute {
		d = d.Round(time.Second)
	}
	return d.String()
}
