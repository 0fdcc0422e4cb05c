package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
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
			return withEnv(g, func(env *engine.Env) error {
				s := catalog.Selection{Name: args[0], Client: env.Client, Paths: paths, Excludes: excludes, Created: time.Now()}
				if err := env.Catalog.CreateSelection(s); err != nil {
					return fmt.Errorf("selection %q: %w", args[0], err)
				}
				if createJSON {
					return printJSON(cmd.OutOrStdout(), selectionsJSON([]catalog.Selection{s})[0])
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
			return withEnv(g, func(env *engine.Env) error {
				sels, err := env.Catalog.Selections(env.Client)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), selectionsJSON(sels))
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
			return withEnv(g, func(env *engine.Env) error {
				s, err := env.Catalog.Selection(env.Client, args[0])
				if errors.Is(err, catalog.ErrNotFound) {
					return engine.Missing("selection", "no selection %q", args[0])
				}
				if err != nil {
					return fmt.Errorf("selection %q: %w", args[0], err)
				}
				if showJSON {
					return printJSON(cmd.OutOrStdout(), selectionsJSON([]catalog.Selection{s})[0])
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
			return withEnv(g, func(env *engine.Env) error {
				err := env.Catalog.RemoveSelection(env.Client, args[0])
				if errors.Is(err, catalog.ErrNotFound) {
					return engine.Missing("selection", "no selection %q", args[0])
				}
				if err != nil {
					return fmt.Errorf("selection %q: %w", args[0], err)
				}
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, show, rm)
	return cmd
}

type selectionJSON struct {
	Name     string    `json:"name"`
	Client   string    `json:"client"`
	Paths    []string  `json:"paths"`
	Excludes []string  `json:"excludes"`
	Created  time.Time `json:"created"`
}

func selectionsJSON(sels []catalog.Selection) []selectionJSON {
	out := []selectionJSON{}
	for _, s := range sels {
		x := selectionJSON{Name: s.Name, Client: s.Client, Paths: s.Paths, Excludes: s.Excludes, Created: s.Created}
		if x.Excludes == nil {
			x.Excludes = []string{}
		}
		out = append(out, x)
	}
	return out
}
