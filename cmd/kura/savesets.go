package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newSavesetsCmd, newSavesetCmd) }

func newSavesetsCmd(g *globals) *cobra.Command {
	var (
		q           api.SavesetQuery
		asJSON, why bool
	)
	cmd := &cobra.Command{
		Use:   "savesets",
		Short: "List savesets: what was backed up, when, at which level, on which tapes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				q.Client = g.client
				if why {
					return printWhy(cmd, svc, q, asJSON)
				}
				sets, err := svc.Savesets(cmdContext(cmd), q)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), sets)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "ID\tCREATED\tLEVEL\tBASE\tSTATUS\tFILES\tSOURCE\tMEDIA\tRATIO\tTAPES\tSELECTION")
				for _, s := range sets {
					var tapes []string
					for _, p := range s.Parts {
						tapes = append(tapes, fmt.Sprintf("%s:%d", p.Barcode, p.File))
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Created.Local().Format("2006-01-02 15:04:05"),
						s.Level, idOrDash(s.BaseID), s.Status, units.Thousands(s.Files), units.FormatSize(s.SourceBytes),
						units.FormatSize(s.MediaBytes), units.Ratio(s.SourceBytes, s.MediaBytes), strings.Join(tapes, ","), s.Selection)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&q.Selection, "selection", "", "only savesets of this selection")
	cmd.Flags().StringVar(&q.Tape, "tape", "", "only savesets on this tape")
	cmd.Flags().StringVar(&q.Status, "status", "", "only savesets in this state (complete, running, failed, incomplete)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&why, "why", false, "say for each saveset whether retention keeps or expires it, and which rule decided")
	return cmd
}

// printWhy prints retention's decision on each saveset.
func printWhy(cmd *cobra.Command, svc api.Service, q api.SavesetQuery, asJSON bool) error {
	out, err := svc.Retention(cmdContext(cmd), q)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	tw := table(cmd.OutOrStdout())
	fmt.Fprintln(tw, "ID\tCREATED\tLEVEL\tPOLICY\tGEN\tVERDICT\tRULE\tWHY")
	for _, d := range out {
		verdict := "keep"
		if !d.Keep {
			verdict = "expire"
			if d.Rule == engine.RuleAlreadyExpiry {
				verdict = "expired"
			}
		}
		gen := "-"
		if d.Generation > 0 {
			gen = fmt.Sprint(d.Generation)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Created.Local().Format("2006-01-02 15:04"), d.Level,
			dash(d.Policy), gen, verdict, d.Rule, d.Reason)
	}
	return tw.Flush()
}

func newSavesetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "saveset",
		Short: "One saveset: its restore recipe",
	}
	var recipeJSON bool
	recipe := &cobra.Command{
		Use:   "recipe SAVESET",
		Short: "Print the shell pipeline (cat, zstd, tar only) that restores a saveset into the current folder",
		Long: `Print a pipeline that restores a saveset without Kura, using only cat, zstd
and GNU tar: the tape files of every part, in order, decompressed and
unpacked into the current folder. It restores that saveset's own data; for
an incremental, run the recipes of its chain from the full backup on.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			return withService(cmd, g, func(svc api.Service) error {
				r, err := svc.Recipe(cmdContext(cmd), id)
				if err != nil {
					return err
				}
				if recipeJSON {
					return printJSON(cmd.OutOrStdout(), r)
				}
				fmt.Fprintln(cmd.OutOrStdout(), r.Recipe)
				return nil
			})
		},
	}
	recipe.Flags().BoolVar(&recipeJSON, "json", false, "print the saveset ID and the pipeline as JSON")
	cmd.AddCommand(recipe)
	return cmd
}
