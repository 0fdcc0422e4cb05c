package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/server"
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
			if srv, err := g.server(); err != nil {
				return err
			} else if srv != nil {
				defer srv.Close()
				return remoteVerify(cmd, srv, id, o, copyN, asJSON)
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
					showVerify(cmd, res, id, err, asJSON)
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

// remoteVerify runs the verify as a job on the server.
func remoteVerify(cmd *cobra.Command, srv *apiclient.Client, id int64, o engine.VerifyOptions, copyN int, asJSON bool) error {
	if o.Level == engine.VerifySource {
		// The server does not have the client's files.
		return usageErrorf("--level source compares with the files on the client: restore the saveset there and compare, or verify --level data on the server")
	}
	j, err := runServerJob(cmd, srv, api.JobRequest{Kind: api.KindVerify, Saveset: id, Level: o.Level, Copy: copyN, Sample: o.Sample}, asJSON)
	if err != nil {
		return err
	}
	var rec engine.VerifyRecord
	ok, err := jobResult(j, &rec)
	if err != nil {
		return err
	}
	end := serverJobError(j)
	if ok {
		res := &engine.VerifyResult{Figures: server.MonitorFigures(j.Figures), Level: rec.Level, Checked: rec.Checked,
			Problems: rec.Problems, Warnings: rec.Warnings}
		showVerify(cmd, res, id, end, asJSON)
	}
	return jobError(end)
}

// showVerify prints a verify's result as text or JSON.
func showVerify(cmd *cobra.Command, res *engine.VerifyResult, id int64, err error, asJSON bool) {
	out := cmd.OutOrStdout()
	if !asJSON {
		printVerify(out, res, id, err)
		return
	}
	r := jsonFigures(res.Figures, res.Warnings, "")
	r.Level = res.Level
	r.CheckedFiles = &res.Checked
	ps := []problemJSON{}
	for _, p := range res.Problems {
		ps = append(ps, problemJSON{Path: p.Path, Problem: p.Problem})
	}
	r.Problems = &ps
	_ = printJSON(out, r)
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
		fmt.Fprintf(out, "Verify (%s) of saveset %d: %s.\n", res.Level, id, units.Count(int64(len(res.Problems)), "problem"))
	case err != nil && !errors.Is(err, engine.ErrWarnings):
		fmt.Fprintf(out, "Verify (%s) of saveset %d did not finish: %s checked before it failed.\n", res.Level, id, units.Count(int64(res.Checked), "file"))
	case len(res.Warnings) > 0:
		fmt.Fprintf(out, "Verify (%s) of saveset %d: %s checked, the saveset is good; %s.\n", res.Level, id, units.Count(int64(res.Checked), "file"), units.Count(int64(len(res.Warnings)), "warning"))
	default:
		fmt.Fprintf(out, "Verify (%s) of saveset %d: %s checked, no problems.\n", res.Level, id, units.Count(int64(res.Checked), "file"))
	}
}
