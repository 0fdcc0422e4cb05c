package main

import (
	"context"
	"errors"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/server"
)

func init() { commands = append(commands, newCopyCmd) }

func newCopyCmd(g *globals) *cobra.Command {
	var (
		o      engine.CopyOptions
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "copy SAVESET --to-vtl LIBRARY",
		Short: "Make a further copy of a saveset on another library (offsite, duplicate)",
		Long: `Copy a complete saveset to another library, as a job of its own: the same
compressed frames, byte for byte, on that library's tapes (spanning tapes at
their early-warning point, like a backup), with an index of their own.

The copy is recorded with the saveset (see "kura savesets --json") only once
its tape files are complete. A restore reads the saveset's own tapes, or,
when they are exported, a copy whose tapes are all in their library.

A saveset has at most one copy per library, and none on its own library.
--verify reads the copy back and checks every file against the index; a copy
that fails is not kept.

Exit codes: 0 success, 1 failure, 2 usage, 4 the --verify phase found problems.`,
		Example: `  kura vtl create offsite --dir /mnt/offsite/vtl
  kura copy 12 --to-vtl offsite --verify
  kura tape export OFF001`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			if o.Library == "" {
				return usageErrorf("say which library to copy to: --to-vtl NAME (see `kura vtl list`)")
			}
			if srv, err := g.server(); err != nil {
				return err
			} else if srv != nil {
				defer srv.Close()
				return remoteCopy(cmd, srv, id, o, asJSON)
			}
			return withEnv(g, func(env *engine.Env) error {
				stop := startProgress(env, !asJSON)
				ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
				defer cancel()
				res, err := env.Copy(ctx, id, o)
				stop()
				if res != nil {
					printResult(cmd, res, asJSON)
				}
				return copyError(err)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Library, "to-vtl", "", "library to copy to (required)")
	intVar(f, &o.Drive, "drive", 0, 1, library.MaxDrives, "drive number of that library (default: any free drive)")
	f.BoolVar(&o.Verify, "verify", false, "read the copy back and check it (a phase with its own time and rate)")
	f.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	return cmd
}

// copyError maps a copy's error to the exit codes.
func copyError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{Code: exitFailure, Err: errors.New("interrupted: the copy was canceled and not recorded; the saveset is untouched")}
	}
	return jobError(err)
}

// remoteCopy runs the copy as a job on the server.
func remoteCopy(cmd *cobra.Command, srv *apiclient.Client, id int64, o engine.CopyOptions, asJSON bool) error {
	j, err := runServerJob(cmd, srv, api.JobRequest{Kind: api.KindCopy, Saveset: id, Library: o.Library, Drive: o.Drive, Verify: o.Verify}, asJSON)
	if err != nil {
		return err
	}
	var rec engine.CopyRecord
	ok, err := jobResult(j, &rec)
	if err != nil {
		return err
	}
	if ok {
		printResult(cmd, &engine.Result{Figures: server.MonitorFigures(j.Figures), Warnings: j.Warnings, Level: j.Level, Note: rec.Note}, asJSON)
	}
	return copyError(serverJobError(j))
}
