package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/walk"
)

func init() { commands = append(commands, newSelectionCmd) }

func newSelectionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "selection",
		Short: "Saved backup selection sets (paths and exclusions)",
	}
	var (
		excludes   []string
		createJSON bool
	)
	create := &cobra.Command{
		Use:   "create NAME PATH...",
		Short: "Save a named selection of paths to back up",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, x := range excludes {
				if err := walk.ValidatePattern(x); err != nil {
					return usageErrorf("--exclude: %v", err)
				}
			}
			var paths []string
			for _, p := range args[1:] {
				abs, err := filepath.Abs(p)
				if err != nil {
					return err
				}
				paths = append(paths, abs)
			}
			return withService(cmd, g, func(svc api.Service) error {
				s, err := svc.CreateSelection(cmdContext(cmd), api.SelectionCreate{Name: args[0], Client: g.client, Paths: paths, Excludes: excludes})
				if err != nil {
					return err
				}
				if createJSON {
					return printJSON(cmd.OutOrStdout(), s)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Selection %s: %s\n", args[0], strings.Join(paths, " "))
				return nil
			})
		},
	}
	create.Flags().BoolVar(&createJSON, "json", false, "print the selection as JSON (as selection show does)")
	create.Flags().StringArrayVar(&excludes, "exclude", nil, "skip paths matching this glob; repeatable")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List selection sets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				sels, err := svc.Selections(cmdContext(cmd), g.client)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), sels)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "NAME\tPATHS\tEXCLUDES")
				for _, s := range sels {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(s.Paths, " "), strings.Join(s.Excludes, " "))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a selection set",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				s, err := svc.Selection(cmdContext(cmd), g.client, args[0])
				if err != nil {
					return err
				}
				if showJSON {
					return printJSON(cmd.OutOrStdout(), s)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Selection %s (created %s)\n", s.Name, s.Created.Local().Format("2006-01-02 15:04"))
				for _, p := range s.Paths {
					fmt.Fprintf(out, "  + %s\n", p)
				}
				for _, x := range s.Excludes {
					fmt.Fprintf(out, "  - %s\n", x)
				}
				return nil
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON")

	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a selection set (its savesets stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				return svc.RemoveSelection(cmdContext(cmd), g.client, args[0])
			})
		},
	}
	cmd.AddCommand(create, list, show, rm)
	return cmd
}
