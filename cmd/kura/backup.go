package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/walk"
)

func init() { commands = append(commands, newBackupCmd) }

// maxReaders bounds --readers: more files open at once than this only
// costs memory and file descriptors.
const maxReaders = 1024

func newBackupCmd(g *globals) *cobra.Command {
	var (
		o         engine.BackupOptions
		level     string
		comp      string
		asJSON    bool
		frameSize *sizeFlag
		detach    bool
		streams   int
		bwlimit   string
		src       sourceFlags
	)
	cmd := &cobra.Command{
		Use:   "backup [PATH...]",
		Short: "Back up files and folders to the virtual tape library",
		Long: `Back up files and folders to a virtual tape library (the default library in the
Kura home is created on first use). At the end the Job Monitor figures are
printed: files, source and media bytes, average and peak KB/s, elapsed time,
compression ratio, tapes used and warnings.

Levels: full; diff (changed since the last full of this selection); incr
(changed since the last backup of any level). Without an earlier full, incr
and diff run a full backup and say so.

Exit codes: 0 success, 1 failure, 2 usage, 3 completed with warnings (each
skipped or changed file is listed), 4 the --verify phase found problems.`,
		Example: `  kura backup ~/Documents
  kura backup --level incr --compress auto /srv/data
  kura selection create home /home --exclude '*.tmp' && kura backup --selection home --verify
  kura backup --from-command 'tar -cf - /etc' --name etc.tar
  kura backup --plugin postgresql --db app        # pg_dump -Fc app + pg_dumpall --globals-only`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Compress, err = compress.ParseLevel(comp); err != nil {
				return usageErrorf("%w", err)
			}
			o.FrameSize = int(frameSize.v) // 0: the stream's default
			// The limits a server applies (api.JobRequest), here too.
			if err := engine.CheckLabel(o.Label); err != nil {
				return usageErrorf("%w", err)
			}
			if o.Sources, err = src.sources(cmd); err != nil {
				return err
			}
			o.PartSize = int(src.partSize.v)
			if len(args) == 0 && o.Selection == "" && len(o.Sources) == 0 {
				return usageErrorf("give one or more paths to back up, --selection NAME, --from-command CMD or --plugin NAME")
			}
			for _, x := range o.Excludes {
				if err := walk.ValidatePattern(x); err != nil {
					return usageErrorf("--exclude: %v", err)
				}
			}
			o.Paths, o.Level = args, level
			srv, err := g.server()
			if err != nil {
				return err
			}
			if srv != nil {
				defer srv.Close()
				return remoteBackup(cmd, g, srv, o, comp, bwlimit, streams, detach, asJSON)
			}
			switch {
			case g.client != "":
				return usageErrorf("--client needs a server: %v", g.noServer())
			case detach, streams > 1, bwlimit != "":
				return usageErrorf("--detach, --streams and --bwlimit need a server: %v", g.noServer())
			}
			return withEnv(g, func(env *engine.Env) error {
				stop := startProgress(env, !asJSON)
				ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
				defer cancel()
				res, err := env.Backup(ctx, o)
				stop()
				if res != nil {
					printResult(cmd, res, asJSON)
				}
				return jobError(err)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Library, "vtl", "", "library to write to (default: the default library)")
	f.StringVar(&o.Selection, "selection", "", "back up a saved selection set")
	enumVar(f, &level, "level", engine.LevelFull, backupLevels, "full, incr or diff")
	enumVar(f, &comp, "compress", "auto", compressWords, "none, low, medium, high or auto")
	f.StringArrayVar(&o.Excludes, "exclude", nil, "skip paths matching this glob (base name, or absolute path if it has a /); repeatable")
	f.BoolVar(&o.Verify, "verify", false, "verify the saveset after the backup (a phase with its own time and rate)")
	f.StringVar(&o.Label, "label", "", "a note stored with the saveset")
	intVar(f, &o.Drive, "drive", 0, 1, library.MaxDrives, "drive number to use (default: any free drive)")
	frameSize = sizeVar(f, "frame-size", stream.MinFrameSize, stream.MaxFrameSize, "uncompressed bytes per stream frame (default 1MiB)")
	intVar(f, &o.Workers, "readers", 0, 1, maxReaders, "files read in parallel ahead of the stream (default 4 per core)")
	f.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	f.BoolVar(&detach, "detach", false, "with a server: queue the job, print its ID and return")
	intVar(f, &streams, "streams", 1, 1, api.MaxStreams, "with a server: split the client's paths over this many drives")
	f.StringVar(&bwlimit, "bwlimit", "", "with a server: cap the job's network rate (100Mbit, 12.5MB/s)")
	src.register(f)
	src.registerPartSize(f)
	return cmd
}

// remoteBackup queues a backup of a client's paths on the server.
func remoteBackup(cmd *cobra.Command, g *globals, srv *apiclient.Client, o engine.BackupOptions, comp, bwlimit string, streams int, detach, asJSON bool) error {
	if g.client == "" {
		return usageErrorf("with a server, say whose files to back up: --client NAME (see `kura client list`)")
	}
	for i, p := range o.Paths {
		if !filepath.IsAbs(p) {
			return usageErrorf("path %q: give absolute paths on the client", p)
		}
		o.Paths[i] = filepath.Clean(p) // "/srv/" is /srv
	}
	if streams < 1 {
		return usageErrorf("--streams must be at least 1")
	}
	var bw int64
	if bwlimit != "" {
		var err error
		if bw, err = parseRate(bwlimit); err != nil {
			return err
		}
	}
	req := api.JobRequest{Kind: api.KindBackup, Client: g.client, Paths: o.Paths, Selection: o.Selection,
		Excludes: o.Excludes, Level: o.Level, Compress: comp, Library: o.Library, Drive: o.Drive, Verify: o.Verify,
		Label: o.Label, FrameSize: o.FrameSize, BWLimit: bw, Streams: streams,
		Sources: plugin.ToAPI(o.Sources), PartSize: o.PartSize}
	if len(o.Sources) > 0 && streams > 1 {
		return usageErrorf("--streams goes with paths: a command or plug-in is one stream")
	}
	return submitAndFollow(cmd, srv, req, detach, asJSON)
}

// printResult prints a job's figures and warnings.
func printResult(cmd *cobra.Command, res *engine.Result, asJSON bool) {
	out := cmd.OutOrStdout()
	if asJSON {
		_ = printJSON(out, jsonFigures(res.Figures, res.Warnings, res.Note))
		return
	}
	if res.Note != "" {
		fmt.Fprintln(out, "Note:", res.Note)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	if n := res.Figures.Warnings - int64(len(res.Warnings)); n > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: … and %d more (see `kura jobs show %d`)\n", n, res.Figures.JobID)
	}
	monitor.Render(out, res.Figures)
}
