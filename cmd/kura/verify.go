package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/units"
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
						delete(m, "warning_list")
						_ = printJSON(out, m)
					} else {
						for _, p := range res.Problems {
							fmt.Fprintf(out, "PROBLEM %s: %s\n", p.Path, p.Problem)
						}
						monitor.Render(out, res.Figures)
						if len(res.Problems) == 0 {
							fmt.Fprintf(out, "Verify (%s) of saveset %d: %s checked, no problems.\n", res.Level, id, units.Count(int64(res.Checked), "file"))
						} else {
							fmt.Fprintf(out, "Verify (%s) of saveset %d: %s.\n", res.Level, id, units.Count(int64(len(res.Problems)), "problem"))
						}
					}
				}
				return jobError(err)
			})
		},
	}
	enumVar(cmd.Flags(), &o.Level, "level", engine.VerifyData, verifyLevels, "media, data or source")
	intVar(cmd.Flags(), &copyN, "copy", 0, 1, math.MaxInt32, "verify this copy of the saveset (kura copy) instead of its own tapes")
	cmd.Flags().Float64Var(&o.Sample, "sample", 0, "check only this percent of the files (data and source levels)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
