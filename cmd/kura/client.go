package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/server"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newClientCmd, newTokenCmd) }

func newClientCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client",
		Short: "The clients (agents) enrolled with the server",
	}
	var asJSON, showJSON bool
	var walWarn time.Duration
	list := &cobra.Command{
		Use:   "list",
		Short: "List enrolled clients: connected or not, last seen, bandwidth limit, WAL archiving; exit 3 when a client's WAL archiving falls behind",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.needServer()
			if err != nil {
				return err
			}
			defer c.Close()
			cs, err := c.Clients(cmdContext(cmd))
			if err != nil {
				return err
			}
			now := time.Now()
			if asJSON {
				out := []clientJSON{}
				for _, cl := range cs {
					out = append(out, toClientJSONAt(cl, now, walWarn))
				}
				if err := printJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
				return walBehindError(cs, now, walWarn)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "CLIENT\tSTATE\tLAST SEEN\tADDRESS\tBWLIMIT\tWAL ARCHIVE\tENROLLED")
			for _, cl := range cs {
				bw := "-"
				if cl.BWLimit > 0 {
					bw = units.FormatRate(float64(cl.BWLimit))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cl.Name, clientState(cl), timeOrDash(cl.LastSeen), dash(cl.Address), bw,
					walColumn(cl, now, walWarn), timeOrDash(cl.Enrolled))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return walBehindError(cs, now, walWarn)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one client: its state, settings and the WAL spools of its agent; exit 3 when its WAL archiving falls behind",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.needServer()
			if err != nil {
				return err
			}
			defer c.Close()
			cl, err := c.Client(cmdContext(cmd), args[0])
			if err != nil {
				return err
			}
			now := time.Now()
			if showJSON {
				if err := printJSON(cmd.OutOrStdout(), toClientJSONAt(*cl, now, walWarn)); err != nil {
					return err
				}
			} else {
				printClient(cmd.OutOrStdout(), *cl, now, walWarn)
			}
			return walBehindError([]api.Client{*cl}, now, walWarn)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON (as client list does)")
	for _, c := range []*cobra.Command{list, show} {
		c.Flags().DurationVar(&walWarn, "wal-warn-after", api.WALBehindAfter, "warn (exit 3) when a client's oldest spooled WAL file waits longer")
	}
	var revokeJSON, setJSON bool
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a client's certificate: it is refused at once and its running jobs stop",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.needServer()
			if err != nil {
				return err
			}
			defer c.Close()
			cl, err := c.RevokeClient(cmdContext(cmd), args[0])
			if err != nil {
				return err
			}
			if revokeJSON {
				return printJSON(cmd.OutOrStdout(), toClientJSON(*cl))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Client %s revoked at %s. Its savesets stay restorable; to enroll the name again make a new token.\n",
				cl.Name, cl.Revoked.Local().Format(time.DateTime))
			return nil
		},
	}
	var bw string
	var encrypt bool
	revoke.Flags().BoolVar(&revokeJSON, "json", false, "print the client as JSON (as client list does)")
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Change a client's settings (its default bandwidth limit, encryption)",
		Long: `Change a client's settings.

--encrypt makes the client's agent encrypt its new backups (age, after
compression) to its own key, which the server never holds: the server, the
tapes, copies and buckets keep only ciphertext. Keep a copy of the agent's
key (kura agent key export on the client): a lost key means lost backups.
--encrypt=false stops it for new backups; encrypted ones stay encrypted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var u api.ClientUpdate
			if bw != "" {
				rate, err := parseRate(bw)
				if err != nil {
					return err
				}
				u.BWLimit = &rate
			}
			if cmd.Flags().Changed("encrypt") {
				u.Encrypt = &encrypt
			}
			if u.BWLimit == nil && u.Encrypt == nil {
				return usageErrorf("nothing to set: give --bwlimit RATE (0 for none) or --encrypt[=false]")
			}
			c, err := g.needServer()
			if err != nil {
				return err
			}
			defer c.Close()
			cl, err := c.UpdateClient(cmdContext(cmd), args[0], u)
			if err != nil {
				return err
			}
			if setJSON {
				return printJSON(cmd.OutOrStdout(), toClientJSON(*cl))
			}
			if u.BWLimit != nil {
				if cl.BWLimit == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "Client %s: no bandwidth limit.\n", cl.Name)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "Client %s: its jobs send at most %s by default.\n", cl.Name, units.FormatRate(float64(cl.BWLimit)))
				}
			}
			if u.Encrypt != nil {
				if cl.Encrypt {
					fmt.Fprintf(cmd.OutOrStdout(), "Client %s: its agent encrypts its new backups to its own key.\n"+
						"Keep a copy of that key: on the client, kura agent key export > FILE (a lost key means lost backups).\n", cl.Name)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "Client %s: its new backups are not encrypted (earlier encrypted ones stay so).\n", cl.Name)
				}
			}
			return nil
		},
	}
	set.Flags().BoolVar(&setJSON, "json", false, "print the client as JSON (as client list does)")
	set.Flags().StringVar(&bw, "bwlimit", "", "default bandwidth limit of the client's jobs (100Mbit, 12.5MB/s; 0 = none)")
	set.Flags().BoolVar(&encrypt, "encrypt", false, "encrypt the client's new backups on its agent (--encrypt=false: stop)")
	cmd.AddCommand(list, show, revoke, set)
	return cmd
}

// parseRate reads a --bwlimit value: 0, or a rate like 100Mbit or 12.5MB/s.
func parseRate(s string) (int64, error) {
	if s == "0" {
		return 0, nil
	}
	r, err := units.ParseRate(s)
	if err != nil {
		return 0, usageErrorf("--bwlimit: %v", err)
	}
	return int64(r), nil
}

func clientState(cl api.Client) string {
	switch {
	case !cl.Revoked.IsZero():
		return "revoked"
	case cl.Connected:
		return "connected"
	}
	return "offline"
}

// walColumn sums up a client's WAL spools in one cell: "-" when it
// archives no WAL, else each cluster ok or what waits.
func walColumn(cl api.Client, now time.Time, warnAfter time.Duration) string {
	if len(cl.WALSpools) == 0 {
		return "-"
	}
	var parts []string
	for _, s := range cl.WALSpools {
		switch {
		case s.Files == 0:
			parts = append(parts, s.Cluster+" ok")
		case s.Behind(now, warnAfter):
			parts = append(parts, fmt.Sprintf("%s BEHIND %d waiting %s", s.Cluster, s.Files, ageOf(now, s.OldestSince)))
		default:
			parts = append(parts, fmt.Sprintf("%s %d waiting %s", s.Cluster, s.Files, ageOf(now, s.OldestSince)))
		}
	}
	return strings.Join(parts, ", ")
}

// ageOf is how long ago t was, to the second.
func ageOf(now, t time.Time) time.Duration { return max(0, now.Sub(t)).Truncate(time.Second) }

// walBehindError is the warning (exit 3) of the clients whose WAL
// archiving falls behind, or nil.
func walBehindError(cs []api.Client, now time.Time, warnAfter time.Duration) error {
	var msgs []string
	for _, cl := range cs {
		if !cl.Revoked.IsZero() {
			continue
		}
		for _, s := range cl.WALSpools {
			if !s.Behind(now, warnAfter) {
				continue
			}
			m := fmt.Sprintf("client %s: WAL archiving of cluster %s falls behind: %d files wait on the agent, the oldest (%s) for %s (more than %s)",
				cl.Name, s.Cluster, s.Files, s.Oldest, ageOf(now, s.OldestSince), warnAfter)
			if s.LastError != "" {
				m += "; last error: " + s.LastError
			}
			if !cl.Connected {
				m += "; its agent is not connected"
			}
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return &exitError{Code: exitWarnings, Err: errors.New(strings.Join(msgs, "\n"))}
}

// printClient is client show.
func printClient(w io.Writer, cl api.Client, now time.Time, warnAfter time.Duration) {
	tw := table(w)
	bw := "none"
	if cl.BWLimit > 0 {
		bw = units.FormatRate(float64(cl.BWLimit))
	}
	fmt.Fprintf(tw, "Client:\t%s\n", cl.Name)
	fmt.Fprintf(tw, "State:\t%s\n", clientState(cl))
	fmt.Fprintf(tw, "Last seen:\t%s\t%s\n", timeOrDash(cl.LastSeen), cl.Address)
	fmt.Fprintf(tw, "Enrolled:\t%s\tcertificate %s\n", timeOrDash(cl.Enrolled), cl.CertSerial)
	if !cl.Revoked.IsZero() {
		fmt.Fprintf(tw, "Revoked:\t%s\n", timeOrDash(cl.Revoked))
	}
	fmt.Fprintf(tw, "Bandwidth limit:\t%s\n", bw)
	fmt.Fprintf(tw, "Encrypts:\t%v\n", cl.Encrypt)
	tw.Flush()
	if len(cl.WALSpools) == 0 {
		fmt.Fprintln(w, "WAL archive: none through this agent")
		return
	}
	fmt.Fprintln(w, "WAL archive (as the agent reported it):")
	tw = table(w)
	fmt.Fprintln(tw, "  CLUSTER\tWAITING\tOLDEST\tLAST ARCHIVED\tREPORTED\tLAST ERROR")
	for _, s := range cl.WALSpools {
		oldest := "-"
		if s.Files > 0 {
			oldest = fmt.Sprintf("%s, %s", s.Oldest, ageOf(now, s.OldestSince))
			if s.Behind(now, warnAfter) {
				oldest += " BEHIND"
			}
		}
		last := "-"
		if s.LastArchived != "" {
			last = s.LastArchived + " " + timeOrDash(s.LastArchivedAt)
		}
		errText := "-"
		if s.LastError != "" {
			errText = timeOrDash(s.LastErrorAt) + " " + s.LastError
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\n", s.Cluster, s.Files, oldest, last, timeOrDash(s.Reported), errText)
	}
	tw.Flush()
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "One-time enrollment tokens for new agents",
	}
	var (
		expires time.Duration
		name    string
		asJSON  bool
		forNode bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Make a one-time token that enrolls one agent, or with --node one storage node (it also pins this server's CA)",
		Long: `Make a one-time enrollment token. Through the API when logged in to a server;
on the server machine itself without a login (with --home of the server).
With --node the token enrolls a storage node (kura node enroll) and nothing
else; without it, an agent (kura agent enroll).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if expires < time.Second || expires > 720*time.Hour {
				return usageErrorf("--expires must be between 1s and 720h")
			}
			req := api.TokenRequest{Name: name, ExpiresSeconds: expires.Seconds(), Node: forNode}
			c, err := g.server()
			if err != nil {
				return err
			}
			var tok *api.TokenResponse
			if c != nil {
				defer c.Close()
				if tok, err = c.CreateToken(cmdContext(cmd), req); err != nil {
					return err
				}
			} else {
				h, err := agentHome(g)
				if err != nil {
					return err
				}
				if !server.IsHome(h) {
					if g.explicitHome() != "" {
						return fmt.Errorf("%s is not a server home: start `kura server --home %s` first", h, shellQuote(h))
					}
					return fmt.Errorf("%s is not a server home and %v", h, errNoServer)
				}
				srv, err := server.New(server.Options{Home: h, Log: io.Discard})
				if err != nil {
					return err
				}
				defer srv.Close()
				newToken := srv.NewEnrollToken
				if forNode {
					newToken = srv.NewNodeToken
				}
				t, err := newToken(name, expires)
				if err != nil {
					return err
				}
				tok = &t
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), tokenJSON{Token: tok.Token, Name: name, Expires: tok.Expires})
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "One-time token, valid until %s.\n", tok.Expires.Local().Format(time.DateTime))
			return nil
		},
	}
	create.Flags().DurationVar(&expires, "expires", time.Hour, "how long the token stays valid")
	create.Flags().BoolVar(&asJSON, "json", false, "print the token and its expiry as JSON")
	create.Flags().StringVar(&name, "name", "", "the only client name this token may enroll (default: any)")
	create.Flags().BoolVar(&forNode, "node", false, "a token that enrolls a storage node (kura node enroll), not an agent")
	cmd.AddCommand(create)
	return cmd
}
