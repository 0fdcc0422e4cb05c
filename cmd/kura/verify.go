package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
)

func init() { commands = append(commands, newVerifyCmd) }

func newVerifyCmd(g *globals) *cobra.Command {
	var (
		o      engine.VerifyOptions
		asJSON bool
		copyN  int
	)
	cmd := &cobra.Command{
		Use:   "verify SAVESET",
		Short: "Check that a saveset can be restored",
		Long: `Verify a saveset as a job of its own, with its own time and rate.

  --level media   read every block and check its CRC-32C (is the media readable?)
  --level data    decode the stream and re-hash every file against the index (default)
  --level source  as data, and compare with the files on disk now

Exits 4 and names every affected file when something is wrong.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			switch o.Level {
			case engine.VerifyMedia, engine.VerifyData, engine.VerifySource:
			default:
				return usageErrorf("--level: unknown verify level %q (media, data or source)", o.Level)
			}
			if g.inServer && o.Level == engine.VerifySource {
				// The server does not have the client's files.
				return usageErrorf("--level source compares with the files on the client: restore the saveset there and compare, or verify --level data on the server")
			}
			return withEnv(g, func(env *engine.Env) error {
				stop := startProgress(env, !asJSON)
				ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
				defer cancel()
				var res *engine.VerifyResult
				var err error
				if copyN > 0 {
					res, err = env.VerifyCopy(ctx, id, copyN, o)
				} else {
					res, err = env.Verify(ctx, id, o)
				}
				stop()
				if res != nil {
					out := cmd.OutOrStdout()
					if asJSON {
						m := jsonFigures(res.Figures, nil, "")
						m["level"] = res.Level
						m["checked_files"] = res.Checked
						m["problems"] = res.Problems
						m["warning_list"] = res.Warnings
						_ = printJSON(out, m)
					} else {
						printVerify(out, res, id, err)
					}
				}
				return jobError(err)
			})
		},
	}
	cmd.Flags().StringVar(&o.Level, "level", "data", "media, data or source")
	cmd.Flags().IntVar(&copyN, "copy", 0, "verify this copy of the saveset (kura copy) instead of its own tapes")
	cmd.Flags().Float64Var(&o.Sample, "sample", 0, "check only this percent of the files (data and source levels)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// printVerify prints a verify's result. "no problems" is printed only for a
// verify that finished and found nothing wrong: a verify that failed before
// the end says so even when it listed no problem.
func printVerify(out io.Writer, res *engine.VerifyResult, id int64, err error) {
	for _, p := range res.Problems {
		fmt.Fprintf(out, "PROBLEM %s: %s\n", p.Path, p.Problem)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(out, "WARNING %s\n", w)
	}
	monitor.Render(out, res.Figures)
	switch {
	case len(res.Problems) > 0:
		fmt.Fprintf(out, "Verify (%s) of saveset %d: %d problems.\n", res.Level, id, len(res.Problems))
	case err != nil && !errors.Is(err, engine.ErrWarnings):
		fmt.Fprintf(out, "Verify (%s) of saveset %d did not finish: %d files checked before it failed.\n", res.Level, id, res.Checked)
	case len(res.Warnings) > 0:
		fmt.Fprintf(out, "Verify (%s) of saveset %d: %d files checked, the saveset is good; %d warnings.\n", res.Level, id, res.Checked, len(res.Warnings))
	default:
		fmt.Fprintf(out, "Verify (%s) of saveset %d: %d files checked, no problems.\n", res.Level, id, res.Checked)
	}
}
