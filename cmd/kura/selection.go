package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/plugin"
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
		src        sourceFlags
	)
	create := &cobra.Command{
		Use:   "create NAME [PATH...]",
		Short: "Save a named selection of paths, or of commands and plug-ins, to back up",
		Example: `  kura selection create home /home --exclude '*.tmp'
  kura selection create appdb --plugin postgresql --db app     # policies back it up with pg_dump
  kura selection create ldap --from-command 'slapcat' --name ldap.ldif`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sources, err := src.sources(cmd)
			if err != nil {
				return err
			}
			switch {
			case len(sources) > 0 && (len(args) > 1 || len(excludes) > 0):
				return usageErrorf("a selection holds paths or --from-command/--plugin, not both")
			case len(sources) == 0 && len(args) < 2:
				return usageErrorf("give the paths of the selection, or --from-command CMD or --plugin NAME")
			}
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
				s, err := svc.CreateSelection(cmdContext(cmd), api.SelectionCreate{Name: args[0], Client: g.client, Paths: paths, Excludes: excludes,
					Sources: plugin.ToAPI(sources)})
				if err != nil {
					return err
				}
				if createJSON {
					return printJSON(cmd.OutOrStdout(), s)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Selection %s: %s\n", args[0], strings.Join(selectionWhat(*s), " "))
				return nil
			})
		},
	}
	create.Flags().BoolVar(&createJSON, "json", false, "print the selection as JSON (as selection show does)")
	create.Flags().StringArrayVar(&excludes, "exclude", nil, "skip paths matching this glob; repeatable")
	src.register(create.Flags())

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
					fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(selectionWhat(s), " "), strings.Join(s.Excludes, " "))
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
				for _, x := range s.Sources {
					fmt.Fprintf(out, "  + %s", plugin.FromAPI([]api.Source{x})[0])
					if x.Command != "" {
						fmt.Fprintf(out, ": %s", x.Command)
					}
					fmt.Fprintln(out)
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

// selectionWhat is what a selection backs up, in a word each: its paths,
// or its sources (command:NAME, postgresql:DB).
func selectionWhat(s api.Selection) []string {
	out := append([]string{}, s.Paths...)
	for _, x := range plugin.FromAPI(s.Sources) {
		out = append(out, x.String())
	}
	return out
}
