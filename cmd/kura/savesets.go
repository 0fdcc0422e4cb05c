package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newSavesetsCmd, newSavesetCmd) }

func newSavesetsCmd(g *globals) *cobra.Command {
	var (
		f             catalog.SavesetFilter
		selection, st string
		asJSON, why   bool
	)
	cmd := &cobra.Command{
		Use:   "savesets",
		Short: "List savesets: what was backed up, when, at which level, on which tapes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				if selection != "" {
					f.Selections = []string{selection}
				}
				if st != "" {
					f.Statuses = []string{st}
				}
				if g.client != "" {
					f.Clients = []string{g.client}
				}
				sets, err := env.Catalog.Savesets(f)
				if err != nil {
					return err
				}
				if why {
					return printWhy(cmd, env, sets, asJSON)
				}
				if asJSON {
					out := []savesetJSON{}
					for _, s := range sets {
						out = append(out, toSavesetJSON(s))
					}
					return printJSON(cmd.OutOrStdout(), out)
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
	cmd.Flags().StringVar(&selection, "selection", "", "only savesets of this selection")
	cmd.Flags().StringVar(&f.Barcode, "tape", "", "only savesets on this tape")
	cmd.Flags().StringVar(&st, "status", "", "only savesets in this state (complete, running, failed, incomplete)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&why, "why", false, "say for each saveset whether retention keeps or expires it, and which rule decided")
	return cmd
}

// printWhy prints retention's decision on each saveset.
func printWhy(cmd *cobra.Command, env *engine.Env, sets []*catalog.Saveset, asJSON bool) error {
	decisions, err := env.Retention(time.Now())
	if err != nil {
		return err
	}
	byID := map[int64]engine.SavesetDecision{}
	for _, d := range decisions {
		byID[d.ID] = d
	}
	var out []engine.SavesetDecision
	for _, s := range sets {
		if d, ok := byID[s.ID]; ok {
			out = append(out, d)
		}
	}
	if asJSON {
		js := []decisionJSON{}
		for _, d := range out {
			js = append(js, toDecisionJSON(d))
		}
		return printJSON(cmd.OutOrStdout(), js)
	}
	tw := table(cmd.OutOrStdout())
	fmt.Fprintln(tw, "ID\tCREATED\tLEVEL\tPOLICY\tGEN\tVERDICT\tRULE\tWHY")
	for _, d := range out {
		verdict := "keep"
		if !d.Keep {
			verdict = "expire"
			if d.Rule == "already-expired" {
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
			return withEnv(g, func(env *engine.Env) error {
				r, err := env.Recipe(id)
				if err != nil {
					return err
				}
				if recipeJSON {
					return printJSON(cmd.OutOrStdout(), recipeOut{SavesetID: id, Recipe: r})
				}
				fmt.Fprintln(cmd.OutOrStdout(), r)
				return nil
			})
		},
	}
	recipe.Flags().BoolVar(&recipeJSON, "json", false, "print the saveset ID and the pipeline as JSON")
	cmd.AddCommand(recipe)
	return cmd
}
