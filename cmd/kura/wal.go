package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/agent"
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
before archive exits 0. On an enrolled agent's home, archive copies the file into the
agent's spool (synced) and sends the spool to the server in order; what cannot be sent
waits there (kura wal spool shows it, exit 3 past --warn-after), and wal get fetches
through the server.`,
	}
	var cluster string
	var sendFor, warnAfter time.Duration
	var asJSON, send bool
	archive := &cobra.Command{
		Use:   "archive PATH FILE",
		Short: "Store one WAL file (PostgreSQL's %p and %f); exit 0 only once it is on tape",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := plugin.Source{Kind: plugin.KindWAL, Name: cluster + "/" + args[1], Path: args[0]}
			if err := src.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			if a, h, ok, err := walAgent(g); err != nil {
				return err
			} else if ok {
				// Spooled and synced: PostgreSQL may recycle its copy. Then
				// the spool is sent, oldest first; what the server cannot
				// take now stays for the next call or kura agent run.
				if err := agent.SpoolWAL(h, cluster, args[1], args[0], time.Now()); err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(cmdContext(cmd), sendFor)
				defer cancel()
				if _, err := a.SendSpool(ctx); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "kura: %s is spooled, not sent yet: %v\n", args[1], err)
				}
				return nil
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
			if a, _, ok, err := walAgent(g); err != nil {
				return err
			} else if ok {
				err := a.FetchWAL(cmdContext(cmd), cluster, args[0], args[1])
				if errors.Is(err, agent.ErrNoWAL) {
					return &exitError{Code: exitFailure, Err: fmt.Errorf("WAL archive %s holds no %s", cluster, args[0])}
				}
				return err
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

	archive.Flags().DurationVar(&sendFor, "send-for", time.Minute, "on an agent: how long to try sending the spool before exiting (the file is spooled first)")
	spool := &cobra.Command{
		Use:   "spool",
		Short: "On an agent: the WAL files not sent to the server yet; exit 3 when the oldest waits longer than --warn-after",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := agentHome(g)
			if err != nil {
				return err
			}
			if send {
				a, _, ok, err := walAgent(g)
				if err != nil {
					return err
				}
				if ok {
					if _, err := a.SendSpool(cmdContext(cmd)); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "kura: sending the WAL spool: %v\n", err)
					}
				}
			}
			list, err := agent.SpoolList(h)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var age time.Duration
			if len(list) > 0 {
				age = time.Since(list[0].Since)
			}
			behind := len(list) > 0 && age > warnAfter
			if asJSON {
				j := walSpoolJSON{Files: len(list), OldestSeconds: age.Seconds(), Behind: behind}
				if len(list) > 0 {
					j.Oldest = list[0].Cluster + "/" + list[0].File
					j.OldestSince = &list[0].Since
				}
				if err := printJSON(out, j); err != nil {
					return err
				}
			}
			switch {
			case asJSON && behind:
				return &exitError{Code: exitWarnings, Err: fmt.Errorf("WAL archiving falls behind: %s/%s has waited %s (more than %s)", list[0].Cluster, list[0].File, age.Truncate(time.Second), warnAfter)}
			case asJSON:
				return nil
			}
			if len(list) == 0 {
				fmt.Fprintln(out, "WAL spool empty: every archived WAL file is on the server")
				return nil
			}
			age = age.Truncate(time.Second)
			fmt.Fprintf(out, "%d WAL files spooled, not on the server yet; the oldest, %s/%s, waits for %s\n", len(list), list[0].Cluster, list[0].File, age)
			if behind {
				return &exitError{Code: exitWarnings, Err: fmt.Errorf("WAL archiving falls behind: %s/%s has waited %s (more than %s); is the server reachable and kura agent run running?", list[0].Cluster, list[0].File, age, warnAfter)}
			}
			return nil
		},
	}
	spool.Flags().BoolVar(&send, "send", false, "send the spool to the server first, oldest first")
	spool.Flags().BoolVar(&asJSON, "json", false, "print the spool's state as JSON")
	spool.Flags().DurationVar(&warnAfter, "warn-after", 15*time.Minute, "warn (exit 3) when the oldest spooled file waits longer")
	for _, c := range []*cobra.Command{archive, get} {
		c.Flags().StringVar(&cluster, "cluster", "main", "the WAL archive's name (one per PostgreSQL cluster)")
	}
	cmd.AddCommand(archive, get, spool)
	return cmd
}

// walRestoreCommand is the restore_command of a cluster restored from
// this home: this kura, with its home.
// walSpoolJSON is kura wal spool --json: the alarm of WAL archiving
// through an agent.
type walSpoolJSON struct {
	Files         int        `json:"files"`                  // WAL files not on the server yet
	Oldest        string     `json:"oldest,omitempty"`       // CLUSTER/FILE of the oldest
	OldestSince   *time.Time `json:"oldest_since,omitempty"` // when it was spooled
	OldestSeconds float64    `json:"oldest_seconds"`         // how long it has waited (0: none)
	Behind        bool       `json:"behind"`                 // it waited longer than --warn-after
}

// walAgent opens the agent of an enrolled agent home: there kura wal
// goes through the server; ok is false for a home that is no agent's.
func walAgent(g *globals) (*agent.Agent, string, bool, error) {
	h, err := agentHome(g)
	if err != nil {
		return nil, "", false, err
	}
	a, err := agent.Open(agent.Options{Home: h, Log: io.Discard})
	if errors.Is(err, agent.ErrNotEnrolled) {
		return nil, h, false, nil
	}
	if err != nil {
		return nil, h, false, err
	}
	return a, h, true, nil
}

func walRestoreCommand(home, cluster string) string {
	exe, err := os.Executable()
	if err != nil {
		exe = "kura"
	}
	return shellQuote(exe) + " --home " + shellQuote(home) + " wal get --cluster " + shellQuote(cluster) + " %f %p"
}
