package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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
is recorded with its reason ("kura savesets --why"). The server prunes on its
own once a day. Two prunes never run at once; while a backup runs, tapes are
recycled by the next prune.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				res, err := env.Prune(cmdContext(cmd), engine.PruneOptions{DryRun: dryRun})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), toPruneJSON(res))
				}
				out := cmd.OutOrStdout()
				verb := "Expired"
				if dryRun {
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
					if dryRun {
						what = "Would recycle to scratch"
					}
					fmt.Fprintf(out, "%s: %s\n", what, strings.Join(res.Recycled, ", "))
				}
				for _, n := range res.Notes {
					fmt.Fprintln(out, "Note:", n)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would expire and be recycled, change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
