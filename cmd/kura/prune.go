package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/engine"
)

func init() { commands = append(commands, newPruneCmd) }

func newPruneCmd(g *globals) *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Apply retention: expire the savesets no rule keeps, return their tapes to scratch",
		Long: `Apply each policy's retention (--keep-generations, --keep-days): expire every
saveset that no rule keeps any more — never one that a kept saveset depends
on, never a running one, never an ad-hoc backup — and erase the tapes whose
savesets have all expired, returning them to the scratch pool. Each expiry
is recorded with its reason ("kura savesets --why"). A prune is a job ("kura
jobs list"); with a server it runs from its queue. The server prunes on its
own once a day. Two prunes never run at once; while a backup runs, tapes are
recycled by the next prune. --dry-run is a query: it changes nothing and is
no job.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if srv, err := g.server(); err != nil {
				return err
			} else if srv != nil {
				defer srv.Close()
				return remotePrune(cmd, srv, dryRun, asJSON)
			}
			return withEnv(g, func(env *engine.Env) error {
				ctx, cancel := signal.NotifyContext(cmdContext(cmd), os.Interrupt)
				defer cancel()
				res, err := env.Prune(ctx, engine.PruneOptions{DryRun: dryRun})
				if err != nil {
					return pruneError(err)
				}
				return printPrune(cmd, res, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would expire and be recycled, change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// remotePrune asks the server what a prune would do (a dry run), or runs
// one as a job on its queue.
func remotePrune(cmd *cobra.Command, srv *apiclient.Client, dryRun, asJSON bool) error {
	var res engine.PruneResult
	if dryRun {
		raw, err := srv.PrunePlan(cmdContext(cmd))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("the server's prune plan: %w", err)
		}
		return printPrune(cmd, &res, asJSON)
	}
	j, err := runServerJob(cmd, srv, api.JobRequest{Kind: api.KindPrune}, asJSON)
	if err != nil {
		return err
	}
	ok, err := jobResult(j, &res)
	if err != nil {
		return err
	}
	if end := serverJobError(j); end != nil || !ok {
		if end == nil {
			end = fmt.Errorf("job %d ended without a result", j.ID)
		}
		return pruneError(end)
	}
	return printPrune(cmd, &res, asJSON)
}

// pruneError is the error a prune ends the command with.
func pruneError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{Code: exitFailure, Err: errors.New("interrupted: the prune was canceled; the savesets it expired stay expired, each with its reason")}
	}
	return err
}

// printPrune prints what a prune did, or would do.
func printPrune(cmd *cobra.Command, res *engine.PruneResult, asJSON bool) error {
	if asJSON {
		return printJSON(cmd.OutOrStdout(), toPruneJSON(res))
	}
	out := cmd.OutOrStdout()
	verb := "Expired"
	if res.DryRun {
		verb = "Would expire"
	}
	if len(res.Expired) == 0 {
		fmt.Fprintln(out, "Nothing to expire.")
	}
	expiring := map[int64]bool{}
	for _, id := range res.Expired {
		expiring[id] = true
	}
	for _, d := range res.Decisions {
		if expiring[d.ID] {
			fmt.Fprintf(out, "%s saveset %d (%s %s of %s, policy %s): %s\n", verb, d.ID, d.Level,
				orDash(d.Client, "local"), d.Created.Local().Format("2006-01-02 15:04"), d.Policy, d.Reason)
		}
	}
	if len(res.Recycled) > 0 {
		what := "Recycled to scratch"
		if res.DryRun {
			what = "Would recycle to scratch"
		}
		fmt.Fprintf(out, "%s: %s\n", what, strings.Join(res.Recycled, ", "))
	}
	for _, n := range res.Notes {
		fmt.Fprintln(out, "Note:", n)
	}
	return nil
}
