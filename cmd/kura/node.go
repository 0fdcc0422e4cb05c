package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/node"
)

func init() { commands = append(commands, newNodeCmd) }

func newNodeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run this machine as a storage node of a Kura server, or list and revoke nodes",
		Long: `A storage node owns libraries on its machine and keeps their tapes; the server
keeps the catalog and directs every job (like a Bareos storage daemon under
its director). The node dials out to the server (mutual TLS, its own
certificate) and serves its libraries over that connection; a library is put
on it with kura vtl create NAME --node NODE.

Enroll once with a node token (kura token create --node), then run it.`,
	}
	var server, token, name, dataListen string
	var dataHosts []string
	enroll := &cobra.Command{
		Use:   "enroll",
		Short: "Enroll this machine as a storage node, using a one-time node token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if server == "" || token == "" {
				return usageErrorf("enroll needs --server URL and --token TOKEN (kura token create --node)")
			}
			h, err := agentHome(g)
			if err != nil {
				return err
			}
			cfg, err := node.Enroll(cmdContext(cmd), h, server, token, name, dataHosts)
			if err != nil {
				return err
			}
			next := "kura node run"
			if g.explicitHome() != "" {
				next += " --home " + shellQuote(h)
			}
			if len(dataHosts) > 0 {
				next += " --data-listen :8421   (the data port agents send backups to; any free port)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Enrolled as storage node %q of %s (certificate in %s).\nNow run: %s\n",
				cfg.Name, cfg.Server, node.Dir(h), next)
			return nil
		},
	}
	enroll.Flags().StringVar(&server, "server", "", "the server's address (https://HOST:PORT)")
	enroll.Flags().StringVar(&token, "token", "", "a one-time node token (kura token create --node)")
	enroll.Flags().StringVar(&name, "name", "", "this node's name (default: host name)")
	enroll.Flags().StringArrayVar(&dataHosts, "data-host", nil, "a name or address agents dial for this node's data port (repeatable; with none, backups to the node go through the server)")
	run := &cobra.Command{
		Use:   "run",
		Short: "Serve this node's libraries to the server until stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := agentHome(g)
			if err != nil {
				return err
			}
			n, err := node.Open(node.Options{Home: h, Log: cmd.ErrOrStderr(), DataListen: dataListen})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Storage node %s: connecting to %s\n", n.Name(), n.Server())
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return n.Run(ctx)
		},
	}
	run.Flags().StringVar(&dataListen, "data-listen", "", "open a data port on HOST:PORT where agents send backups straight to this node (needs enroll --data-host)")
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List storage nodes: connected or not, last seen, their libraries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.needServer()
			if err != nil {
				return err
			}
			defer c.Close()
			ns, err := c.Nodes(cmdContext(cmd))
			if err != nil {
				return err
			}
			if listJSON {
				out := []nodeJSON{}
				for _, n := range ns {
					out = append(out, toNodeJSON(n))
				}
				return printJSON(cmd.OutOrStdout(), out)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NODE\tSTATE\tLAST SEEN\tADDRESS\tLIBRARIES\tENROLLED")
			for _, n := range ns {
				libs := "-"
				if len(n.Libraries) > 0 {
					libs = strings.Join(n.Libraries, ",")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, nodeState(n), timeOrDash(n.LastSeen), dash(n.Address), libs, timeOrDash(n.Enrolled))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")
	var revokeJSON bool
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a storage node: its connection is cut and refused from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.needServer()
			if err != nil {
				return err
			}
			defer c.Close()
			n, err := c.RevokeNode(cmdContext(cmd), args[0])
			if err != nil {
				return err
			}
			if revokeJSON {
				return printJSON(cmd.OutOrStdout(), toNodeJSON(*n))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Storage node %s revoked at %s. Its libraries stay in the catalog; their tapes are on the node.\n",
				n.Name, n.Revoked.Local().Format(time.DateTime))
			return nil
		},
	}
	revoke.Flags().BoolVar(&revokeJSON, "json", false, "print the node as JSON (as node list does)")
	cmd.AddCommand(enroll, run, list, revoke)
	return cmd
}

func nodeState(n api.Node) string {
	switch {
	case !n.Revoked.IsZero():
		return "revoked"
	case n.Connected:
		return "connected"
	}
	return "offline"
}

// nodeJSON is a storage node in `node list --json`.
type nodeJSON struct {
	Name            string     `json:"name"`
	State           string     `json:"state"` // connected, offline, revoked
	Connected       bool       `json:"connected"`
	Revoked         *time.Time `json:"revoked,omitempty"`
	Enrolled        time.Time  `json:"enrolled"`
	LastSeen        *time.Time `json:"last_seen,omitempty"`
	Address         string     `json:"address"`
	Libraries       []string   `json:"libraries"`
	CertSerial      string     `json:"cert_serial"`
	CertFingerprint string     `json:"cert_fingerprint"`
}

func toNodeJSON(n api.Node) nodeJSON {
	libs := n.Libraries
	if libs == nil {
		libs = []string{}
	}
	return nodeJSON{Name: n.Name, State: nodeState(n), Connected: n.Connected, Revoked: timeOrNil(n.Revoked), Enrolled: n.Enrolled,
		LastSeen: timeOrNil(n.LastSeen), Address: n.Address, Libraries: libs, CertSerial: n.CertSerial, CertFingerprint: n.CertFingerprint}
}
