package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/seal"
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
			fmt.Fprintf(cmd.OutOrStdout(), "Its encryption key (used once the client encrypts: kura client set %s --encrypt) is in %s;\n"+
				"keep a copy: kura agent key export > FILE. A lost key means lost backups.\n", cfg.Name, agent.RingPath(h))
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
	cmd.AddCommand(enroll, run, newAgentKeyCmd(g), newAgentLsCmd(g), newAgentFindCmd(g), newAgentVerifyCmd(g))
	return cmd
}

// lostKeyWarning is said wherever a key is made or handed out.
const lostKeyWarning = `A lost key means lost backups: nobody, not the server's administrator and
not Kura, can decrypt this client's encrypted backups without it (unless the
server has a recovery recipient). Keep the copy offline, away from the backups.`

func newAgentKeyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "This agent's encryption keys: show, export, rotate, import",
		Long: `An agent whose client encrypts (kura client set NAME --encrypt) encrypts its
backups to its current key (age X25519); the server never holds it. The keys
are an age identity file in the agent's folder (agent/keys.txt, mode 0600),
oldest first: rotating adds a new current key and keeps the old ones, so
older backups stay readable.

` + lostKeyWarning,
	}
	var asJSON bool
	// report prints the ring's state, as text or --json.
	report := func(cmd *cobra.Command, r *seal.Ring, text string) error {
		if asJSON {
			return printJSON(cmd.OutOrStdout(), agentKeyJSON{PublicKey: r.Recipient(), Keys: r.Len()})
		}
		fmt.Fprint(cmd.OutOrStdout(), text)
		return nil
	}
	ring := func() (string, error) {
		h, err := agentHome(g)
		if err != nil {
			return "", err
		}
		return agent.RingPath(h), nil
	}
	loadRing := func() (*seal.Ring, error) {
		p, err := ring()
		if err != nil {
			return nil, err
		}
		return seal.LoadRing(p)
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the public key new backups are encrypted to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := loadRing()
			if err != nil {
				return err
			}
			return report(cmd, r, r.Recipient()+"\n")
		},
	}
	export := &cobra.Command{
		Use:   "export",
		Short: "Print every key of this agent (an age identity file) to keep a copy",
		Long: `Print this agent's keys, an age identity file, to standard output: keep it
somewhere safe. With it, "age -d -i FILE" opens this client's encrypted
tape files, and "kura agent key import FILE" on another machine restores
them there.

` + lostKeyWarning,
		Example: `  kura agent key export > /media/usb/kura-keys-$(hostname).txt`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := loadRing()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "These are secret keys: they open every encrypted backup of this client.\n"+lostKeyWarning)
			_, err = cmd.OutOrStdout().Write(r.Text())
			return err
		},
	}
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Make a new current key; older keys stay to read older backups",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := ring()
			if err != nil {
				return err
			}
			r, err := seal.Rotate(p)
			if err != nil {
				return err
			}
			return report(cmd, r, fmt.Sprintf("New backups are encrypted to %s; the %d older key(s) stay to read older ones.\n"+
				"Export the keys again (kura agent key export): the old copy lacks the new key.\n", r.Recipient(), r.Len()-1))
		},
	}
	imp := &cobra.Command{
		Use:   "import FILE",
		Short: "Add the keys of an age identity file (an exported ring, a recovery key) to read backups here",
		Long: `Add the keys of an age identity file to this agent's keys, so that it can
restore the backups they open: a lost client's exported keys, or the
server administrator's recovery key. New backups stay encrypted to this
agent's own current key. "-" reads standard input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := ring()
			if err != nil {
				return err
			}
			var b []byte
			if args[0] == "-" {
				b, err = io.ReadAll(cmd.InOrStdin())
			} else {
				b, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			r, err := seal.Import(p, b)
			if err != nil {
				return err
			}
			return report(cmd, r, fmt.Sprintf("This agent holds %d key(s); new backups are encrypted to %s.\n", r.Len(), r.Recipient()))
		},
	}
	for _, c := range []*cobra.Command{show, rotate, imp} {
		c.Flags().BoolVar(&asJSON, "json", false, `print {"public_key", "keys"} as JSON`)
	}
	cmd.AddCommand(show, export, rotate, imp)
	return cmd
}

// agentKeyJSON is `agent key show|rotate|import --json`.
type agentKeyJSON struct {
	PublicKey string `json:"public_key"` // the current key, new backups are encrypted to
	Keys      int    `json:"keys"`       // keys in the ring, the current one included
}
