package main

import (
	"fmt"
	"strings"

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
		asJSON        bool
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
				sets, err := env.Catalog.Savesets(f)
				if err != nil {
					return err
				}
				if asJSON {
					if sets == nil {
						sets = []*catalog.Saveset{}
					}
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
	cmd.Flags().StringVar(&selection, "selection", "", "only savesets of this selection")
	cmd.Flags().StringVar(&f.Barcode, "tape", "", "only savesets on this tape")
	cmd.Flags().StringVar(&st, "status", "", "only savesets in this state (complete, running, failed, incomplete)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newSavesetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "saveset",
		Short: "One saveset: its restore recipe",
	}
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
				fmt.Fprintln(cmd.OutOrStdout(), r)
				return nil
			})
		},
	}
	cmd.AddCommand(recipe)
	return cmd
}
