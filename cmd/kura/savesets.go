package main

import (
	"fmt"
	"io"
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
	return printDecisions(cmd, out, asJSON)
}

// printDecisions prints retention's verdicts (savesets --why, policy
// preview).
func printDecisions(cmd *cobra.Command, out []api.RetentionDecision, asJSON bool) error {
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
		Short: "One saveset: its record, its restore recipe",
	}
	var showJSON bool
	show := &cobra.Command{
		Use:   "show SAVESET",
		Short: "Show a saveset: what, when, its figures, its tapes and copies",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			return withService(cmd, g, func(svc api.Service) error {
				s, err := svc.Saveset(cmdContext(cmd), id)
				if err != nil {
					return err
				}
				if showJSON {
					return printJSON(cmd.OutOrStdout(), s)
				}
				printSaveset(cmd.OutOrStdout(), s)
				return nil
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON (an item of savesets --json)")
	cmd.AddCommand(show)
	var recipeJSON bool
	recipe := &cobra.Command{
		Use:   "recipe SAVESET",
		Short: "Print the shell pipeline (cat, zstd, tar only) that restores a saveset into the current folder",
		Long: `Print a pipeline that restores a saveset without Kura, using only cat, zstd
and GNU tar: the tape files of every part, in order, decompressed and
unpacked into the current folder. It restores that saveset's own data; for
an incremental, run the recipes of its chain from the full backup on. On a
library in an S3 bucket the pipeline fetches the tape files' chunk objects
in order with curl (7.75 or later, --aws-sigv4) instead of cat, with the
credentials of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and
AWS_SESSION_TOKEN, if set) in your environment, handed to curl on its
standard input, never on its command line. The saveset of a client that encrypts is decrypted by
the stock age tool in the pipeline, with the keys in the file KURA_KEYS names
(the client's "kura agent key export", or the server's recovery key).`,
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

// printSaveset prints one saveset as `saveset show` does.
func printSaveset(w io.Writer, s *api.SavesetInfo) {
	parts := func(ps []api.Part) string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s:%d (%s)", p.Barcode, p.File, units.FormatSize(p.Bytes)))
		}
		return dash(strings.Join(out, ", "))
	}
	tw := table(w)
	fmt.Fprintf(tw, "Saveset\t%d\n", s.ID)
	fmt.Fprintf(tw, "Level\t%s (base %s)\n", s.Level, idOrDash(s.BaseID))
	status := s.Status
	if s.Expired {
		status += ", expired: " + dash(s.ExpireReason)
	}
	fmt.Fprintf(tw, "Status\t%s\n", status)
	fmt.Fprintf(tw, "Client\t%s\n", dash(s.Client))
	fmt.Fprintf(tw, "Selection\t%s\n", s.Selection)
	fmt.Fprintf(tw, "Policy\t%s\n", dash(s.Policy))
	fmt.Fprintf(tw, "Job\t%d\n", s.JobID)
	fmt.Fprintf(tw, "Created\t%s\n", s.Created.Local().Format("2006-01-02 15:04:05"))
	if s.Finished != nil {
		fmt.Fprintf(tw, "Finished\t%s\n", s.Finished.Local().Format("2006-01-02 15:04:05"))
	}
	fmt.Fprintf(tw, "Files\t%s\n", units.Thousands(s.Files))
	fmt.Fprintf(tw, "Source\t%s\n", units.FormatSize(s.SourceBytes))
	fmt.Fprintf(tw, "Media\t%s (ratio %s, codec %s)\n", units.FormatSize(s.MediaBytes), s.RatioText, dash(s.Codec))
	if s.Encryption != "" {
		fmt.Fprintf(tw, "Encrypted\t%s, by client %s's agent (its key opens it; the server holds none)\n", s.Encryption, s.Client)
	}
	fmt.Fprintf(tw, "Library\t%s\n", s.Library)
	fmt.Fprintf(tw, "Parts\t%s\n", parts(s.Parts))
	if s.IndexPart != nil {
		fmt.Fprintf(tw, "Index\t%s, %s entries\n", parts([]api.Part{*s.IndexPart}), units.Thousands(s.IndexEntries))
	}
	for _, c := range s.Copies {
		fmt.Fprintf(tw, "Copy %d\t%s in library %s, made %s\n", c.Copy, parts(c.Parts), c.Library, c.Created.Local().Format("2006-01-02 15:04:05"))
	}
	if s.Label != "" {
		fmt.Fprintf(tw, "Label\t%q\n", s.Label)
	}
	for _, p := range s.Paths {
		fmt.Fprintf(tw, "Path\t%s\n", p)
	}
	tw.Flush()
}
