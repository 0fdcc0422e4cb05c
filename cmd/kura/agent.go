package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/plugin"
)

func init() { commands = append(commands, newAgentCmd) }

func agentHome(g *globals) (string, error) {
	if g.home != "" {
		return g.home, nil
	}
	return home.Dir()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newAgentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run this machine as a client of a Kura server",
		Long: `An agent backs up and restores this machine's files for a Kura server. It
dials out to the server (so it works behind NAT and firewalls), takes job
orders, compresses before the network, and reconnects on its own.

Enroll once with a one-time token from "kura token create", then run it
(a systemd unit is in docs/systemd/).`,
	}
	var server, token, name string
	var allow plugin.Allow
	enroll := &cobra.Command{
		Use:   "enroll",
		Short: "Enroll this machine with a server, using a one-time token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if server == "" || token == "" {
				return usageErrorf("enroll needs --server URL and --token TOKEN")
			}
			h, err := agentHome(g)
			if err != nil {
				return err
			}
			cfg, err := agent.Enroll(cmdContext(cmd), h, server, token, name)
			if err != nil {
				return err
			}
			next := "kura agent run"
			if g.explicitHome() != "" {
				// The next command must find this home wherever it runs.
				next += " --home " + shellQuote(h)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Enrolled as client %q of %s (certificate in %s).\nNow run: %s\n",
				cfg.Name, cfg.Server, agent.Dir(h), next)
			return nil
		},
	}
	enroll.Flags().StringVar(&server, "server", "", "the server's address (https://HOST:PORT)")
	enroll.Flags().StringVar(&token, "token", "", "a one-time enrollment token (kura token create)")
	enroll.Flags().StringVar(&name, "name", "", "this client's name (default: host name)")
	run := &cobra.Command{
		Use:   "run",
		Short: "Take job orders from the server until stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := agentHome(g)
			if err != nil {
				return err
			}
			for _, p := range allow.Plugins {
				if !slices.Contains(plugin.Plugins, p) {
					return usageErrorf("--allow-plugin %s: unknown plug-in (%s)", p, strings.Join(plugin.Plugins, ", "))
				}
			}
			a, err := agent.Open(agent.Options{Home: h, Log: cmd.ErrOrStderr(), Allow: allow})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Agent %s: connecting to %s\n", a.Name(), a.Server())
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.Run(ctx)
		},
	}
	run.Flags().BoolVar(&allow.Commands, "allow-commands", false, "let the server run any shell command here (backup --from-command, restore --to-command) and every plug-in")
	run.Flags().StringArrayVar(&allow.Plugins, "allow-plugin", nil, "let the server run this plug-in's tools here (postgresql); repeatable")
	cmd.AddCommand(enroll, run)
	return cmd
}
