package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/rules"
)

func init() { commands = append(commands, newRestoreCmd) }

func newRestoreCmd(g *globals) *cobra.Command {
	var (
		o        engine.RestoreOptions
		at       string
		asJSON   bool
		detach   bool
		toClient string
		bwlimit  string
		wal      string
	)
	cmd := &cobra.Command{
		Use:   "restore [SAVESET]",
		Short: "Restore a saveset (and the chain it depends on), or single files and folders",
		Long: `Restore the moment a saveset captured: for an incremental or differential, the
earlier savesets that hold its unchanged files are read automatically, and
files deleted before that moment do not come back.

Say where the files go; there is no default. --to DIR restores into DIR (a
file that was /srv/a.txt becomes DIR/srv/a.txt), and nothing is ever written
outside DIR, whatever a saveset holds. --in-place puts the files back where
they came from, over what is there now. Files that already exist are
handled as --overwrite says (default always: replaced; never: kept; older:
replaced only when older than the backed-up copy).

Choose what to restore with --include and --path (both repeatable; a file
either selects is restored; with neither, everything). --include takes a
path or a glob and also matches base names: "*.txt" finds text files at
any depth, and "etc" also selects a folder named etc deeper down. --path
takes an exact path literally: '/srv/a*' is the file named a*, and a
folder means everything below it.

Exit codes: 0 success, 1 failure, 2 usage, 3 completed with warnings.`,
		Example: `  kura restore 12 --to /tmp/restore
  kura restore --latest --to /tmp/r --include home/me/docs/report.odt
  kura restore 12 --to /tmp/r --path '/srv/data/a[1].csv'   # exactly this file: no globs
  kura restore --at "2026-11-29 18:00" --selection home --to /srv/old
  kura restore 12 --in-place --overwrite older
  kura restore 14 --to-command 'tar -xf - -C /srv/etc'   # a --from-command backup
  kura restore 15 --to-db app_copy --jobs 4                # a --plugin postgresql backup`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				id, err := parseID(args[0], "SAVESET")
				if err != nil {
					return err
				}
				o.SavesetID = id
			}
			if at != "" {
				t, err := parseTime(at)
				if err != nil {
					return usageErrorf("--at: %v", err)
				}
				o.At = t
			}
			if o.SavesetID == 0 && !o.Latest && o.At.IsZero() {
				return usageErrorf("say which saveset to restore: an ID, --latest or --at TIME")
			}
			for _, p := range o.Paths {
				if _, err := rules.RestorePath(p); err != nil {
					return usageErrorf("--path: %v", err)
				}
			}
			if o.Into.Jobs == 0 {
				o.Into.Jobs = 1
			}
			if wal != "" {
				if o.Into.Cluster == "" {
					return usageErrorf("--wal goes with --to-cluster")
				}
				if err := plugin.ValidCluster(wal); err != nil {
					return usageErrorf("--wal: %v", err)
				}
				// --at is the moment to recover to; without a saveset it
				// also picks the newest base backup at or before it.
				// Without a saveset or --selection the engine picks the
				// newest base backup of that cluster (engine.ChooseSaveset).
				o.Into.Recovery.Cluster, o.Into.Recovery.At = wal, o.At
			} else if cmd.Flags().Changed("wal-restore-command") {
				return usageErrorf("--wal-restore-command goes with --wal")
			}
			if o.Into.Cluster != "" && g.client == "" {
				abs, err := filepath.Abs(o.Into.Cluster)
				if err != nil {
					return err
				}
				o.Into.Cluster = abs
			}
			switch {
			case o.Into.IsSet() && (o.To != "" || o.InPlace):
				return usageErrorf("give --to-command, --to-db or --to-cluster, or --to or --in-place, not both")
			case o.Into.IsSet():
				if err := o.Into.Validate(); err != nil {
					return usageErrorf("%v", err)
				}
			case cmd.Flags().Changed("jobs"):
				return usageErrorf("--jobs goes with --to-db")
			case o.To == "" && !o.InPlace:
				return usageErrorf("say where to restore: --to DIR, --in-place to write over the original files (see --overwrite), --to-command CMD or --to-db NAME")
			case o.To != "" && o.InPlace:
				return usageErrorf("give --to DIR or --in-place, not both")
			}
			srv, err := g.server()
			if err != nil {
				return err
			}
			if srv != nil {
				defer srv.Close()
				if g.client == "" {
					return usageErrorf("with a server, say whose saveset to restore: --client NAME (and --to-client to restore onto another machine)")
				}
				if o.To != "" && !filepath.IsAbs(o.To) {
					return usageErrorf("--to %q: give an absolute path on the client", o.To)
				}
				if o.To != "" {
					o.To = filepath.Clean(o.To)
				}
				var bw int64
				if bwlimit != "" {
					if bw, err = parseRate(bwlimit); err != nil {
						return err
					}
				}
				req := api.JobRequest{Kind: api.KindRestore, Client: g.client, BWLimit: bw, Saveset: o.SavesetID, Latest: o.Latest,
					Selection: o.Selection, At: o.At, To: o.To, InPlace: o.InPlace, ToClient: toClient, Includes: o.Includes, RestorePaths: o.Paths,
					Overwrite: o.Overwrite, Sync: o.Sync, ToCommand: o.Into.Command, ToDB: o.Into.Database, ToCluster: o.Into.Cluster,
					WAL: wal, WALRestoreCommand: o.Into.Recovery.Command}
				if o.Into.Database != "" {
					req.Jobs = o.Into.Jobs
				}
				return submitAndFollow(cmd, srv, req, detach, asJSON)
			}
			switch {
			case g.client != "" || toClient != "":
				return usageErrorf("--client and --to-client need a server: %v", g.noServer())
			case detach, bwlimit != "":
				return usageErrorf("--detach and --bwlimit need a server: %v", g.noServer())
			}
			return withEnv(g, func(env *engine.Env) error {
				if wal != "" && o.Into.Recovery.Command == "" {
					o.Into.Recovery.Command = walRestoreCommand(env.Home, wal)
				}
				stop := startProgress(env, !asJSON)
				ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
				defer cancel()
				res, err := env.Restore(ctx, o)
				stop()
				if res != nil {
					printResult(cmd, res, asJSON)
				}
				return jobError(err)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Latest, "latest", false, "restore the newest complete saveset (of --selection, if given)")
	f.StringVar(&o.Selection, "selection", "", "with --latest or --at: the selection set (or paths:… key shown by `kura savesets`)")
	f.StringVar(&at, "at", "", "restore the newest saveset made at or before this time (2006-01-02 15:04[:05] or RFC 3339)")
	f.StringVar(&o.To, "to", "", "restore into this folder (this or --in-place is required)")
	f.BoolVar(&o.InPlace, "in-place", false, "restore to the original places, over the files there (see --overwrite)")
	f.StringArrayVar(&o.Includes, "include", nil, "restore only this path (and what is below it) or glob, also matched against base names; repeatable")
	f.StringArrayVar(&o.Paths, "path", nil, "restore only this exact path (a folder: and what is below it), taken literally: no globs, no base-name matches; repeatable")
	enumVar(f, &o.Overwrite, "overwrite", engine.OverwriteAlways, overwriteWords, "with --in-place or into a folder holding files: always (replace; the default), never (keep), older (replace when older than the backup)")
	f.StringVar(&o.Into.Command, "to-command", "", "pipe the saveset's file (a --from-command or plug-in backup) into this shell command; its exit status decides")
	f.StringVar(&o.Into.Database, "to-db", "", "restore a database dump into this new database (PostgreSQL: createdb, pg_restore; MariaDB: mariadb-admin create, mariadb)")
	f.StringVar(&o.Into.Cluster, "to-cluster", "", "extract a physical backup into this new, empty folder (postgresql-cluster: pg_basebackup's tar; mariadb-physical: unpacked and prepared)")
	f.StringVar(&wal, "wal", "", "with --to-cluster: recover from this WAL archive (kura wal archive --cluster NAME), to --at TIME or to its end")
	f.StringVar(&o.Into.Recovery.Command, "wal-restore-command", "", "with --wal: the restore_command to write (default: this kura and home, wal get --cluster NAME %f %p)")
	intVar(f, &o.Into.Jobs, "jobs", 0, 1, plugin.MaxJobs, "with --to-db: pg_restore jobs (more than 1 writes the dump to a temporary file first)")
	f.BoolVar(&o.Sync, "sync", false, "wait until the restored files are on disk before reporting success")
	f.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	f.BoolVar(&detach, "detach", false, "with a server: queue the job, print its ID and return")
	f.StringVar(&toClient, "to-client", "", "with a server: restore onto this client's machine instead of --client's")
	f.StringVar(&bwlimit, "bwlimit", "", "with a server: cap the rate the agent reads the saveset at (100Mbit, 12.5MB/s)")
	return cmd
}

// parseTime accepts the usual ways to write a moment, in local time unless
// a zone is given. The moment is the end of what was written: "15:04"
// means up to 15:04:59.999…, so a backup made during that minute counts as
// made at it.
func parseTime(s string) (time.Time, error) {
	for _, l := range []struct {
		layout string
		span   time.Duration
	}{
		{time.RFC3339Nano, time.Nanosecond}, {"2006-01-02 15:04:05", time.Second}, {"2006-01-02T15:04:05", time.Second},
		{"2006-01-02 15:04", time.Minute}, {"2006-01-02", 24 * time.Hour},
	} {
		if t, err := time.ParseInLocation(l.layout, s, time.Local); err == nil {
			if l.layout == time.RFC3339Nano && t.Nanosecond() == 0 && !strings.Contains(s, ".") {
				l.span = time.Second
			}
			return t.Add(l.span - time.Nanosecond), nil
		}
	}
	return time.Time{}, usageErrorf("cannot read time %q (use 2006-01-02 15:04:05 or RFC 3339)", s)
}
