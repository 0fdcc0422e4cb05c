package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/plugin"
)

func init() { commands = append(commands, newWALCmd) }

// newWALCmd is PostgreSQL's WAL archive in Kura: archive_command and
// restore_command (docs/operations.md, "Point-in-time recovery").
func newWALCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wal",
		Short: "PostgreSQL's WAL archive: archive_command and restore_command",
		Long: `A PostgreSQL cluster archives its WAL into Kura with
  archive_command = 'kura --home HOME wal archive --cluster NAME %p %f'
and a cluster restored with kura restore --to-cluster DIR --wal NAME [--at TIME]
fetches it back with kura wal get. Each WAL file is a saveset of its own, complete
before archive exits 0.`,
	}
	var cluster string
	archive := &cobra.Command{
		Use:   "archive PATH FILE",
		Short: "Store one WAL file (PostgreSQL's %p and %f); exit 0 only once it is on tape",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := plugin.Source{Kind: plugin.KindWAL, Name: cluster + "/" + args[1], Path: args[0]}
			if err := src.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			return withEnv(g, func(env *engine.Env) error {
				_, err := env.Backup(context.Background(), engine.BackupOptions{Sources: []plugin.Source{src}, Compress: compress.LevelAuto})
				return jobError(err)
			})
		},
	}
	get := &cobra.Command{
		Use:   "get FILE PATH",
		Short: "Fetch one WAL file (PostgreSQL's %f and %p); exit 1 when the archive does not hold it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := plugin.ValidWALName(cluster + "/" + args[0]); err != nil {
				return usageErrorf("%v", err)
			}
			return withEnv(g, func(env *engine.Env) error {
				_, err := env.Restore(context.Background(), engine.RestoreOptions{Latest: true, Selection: plugin.WALSelection(cluster, args[0]),
					Into: plugin.Target{Command: "cat > " + shellQuote(args[1])}})
				if errors.Is(err, engine.ErrNotFound) {
					// PostgreSQL asks for files past the end of the archive.
					return &exitError{Code: exitFailure, Err: fmt.Errorf("WAL archive %s holds no %s", cluster, args[0])}
				}
				return jobError(err)
			})
		},
	}
	for _, c := range []*cobra.Command{archive, get} {
		c.Flags().StringVar(&cluster, "cluster", "main", "the WAL archive's name (one per PostgreSQL cluster)")
	}
	cmd.AddCommand(archive, get)
	return cmd
}

// walRestoreCommand is the restore_command of a cluster restored from
// this home: this kura, with its home.
func walRestoreCommand(home, cluster string) string {
	exe, err := os.Executable()
	if err != nil {
		exe = "kura"
	}
	return shellQuote(exe) + " --home " + shellQuote(home) + " wal get --cluster " + shellQuote(cluster) + " %f %p"
}
