package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/console"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/server"
)

func init() { commands = append(commands, newServerCmd) }

func newServerCmd(g *globals) *cobra.Command {
	var (
		listen        string
		hosts         []string
		name          string
		catDSN        string
		leaderTTL     time.Duration
		recovery      []string
		consoleListen string
		consoleIdle   time.Duration
		consoleLife   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the backup server: HTTPS API, job queue, libraries and drives",
		Long: `Run the Kura server on this machine. It owns the catalog, the virtual tape
libraries and their drives in its home, and runs queued jobs one per drive.
Agents dial in to it; admins use the same kura binary with "kura login".

On first start it creates its own certificate authority and an admin token
(admin.token in the home) and prints how to log in and enroll agents.

The catalog is catalog.db in the home unless --catalog (or KURA_CATALOG)
names a PostgreSQL database, postgres://USER@HOST:PORT/DB: its password
comes from PGPASSWORD or ~/.pgpass (PGPASSFILE) rather than the URL, which
shows in the process list. "kura catalog migrate --to URL" moves an
existing catalog there.

Of several servers started on one catalog, one leads: it listens, runs the
job queue and the scheduler; the others stand by (they print who leads) and
the first to find the leader's lease expired takes over: within --leader-ttl
and a third of it after the leader dies. They need the same pki/,
admin.token and console-users.json (a shared home, or copies), and clients
a name that moves with the leader.

--console-listen serves the web console on a port of its own (sign in with
the admin token or a user of "kura user add"). Its sign-ins are kept in the
catalog: a restart, or a standby taking over, signs nobody out. GET
/metrics on the API port is the Prometheus scrape, for the token in
metrics.token.`,
		Example: `  kura server --home /var/lib/kura --listen :8420 --host backup.example.com --console-listen :8421
  kura server --home /var/lib/kura --catalog postgres://kura@db.example.com/kura`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if consoleIdle <= 0 || consoleLife <= 0 {
				return usageErrorf("--console-idle and --console-lifetime must be more than 0 (got %s and %s)", consoleIdle, consoleLife)
			}
			if catDSN == "" {
				catDSN = catalogDSN()
			}
			dir := g.home
			if dir == "" {
				d, err := home.Dir()
				if err != nil {
					return err
				}
				dir = d
			}
			if h, err := os.Hostname(); err == nil {
				hosts = append(hosts, h)
			}
			srv, err := server.New(server.Options{Home: dir, Catalog: catDSN, Hosts: hosts, Name: name, Log: cmd.ErrOrStderr(), LeaderTTL: leaderTTL,
				RecoveryRecipients: recovery})
			if err != nil {
				return err
			}
			defer srv.Close()
			out := cmd.OutOrStdout()
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = srv.Lead(ctx, func(l *catalog.LeaderLease) {
				fmt.Fprintf(out, "Standing by: server %s leads on this catalog (its lease runs to %s); taking over when it stops.\n",
					l.Holder, l.Expires.Local().Format("15:04:05"))
			})
			if err != nil {
				if ctx.Err() != nil {
					return nil // stopped while standing by
				}
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			url := server.PublicURL(ln.Addr())
			fmt.Fprintf(out, "Kura server listening on %s\n", url)
			fmt.Fprintf(out, "  home            %s\n", srv.Home())
			if catDSN != "" {
				fmt.Fprintf(out, "  catalog         %s\n", catalog.Redact(catDSN))
			}
			fmt.Fprintf(out, "  CA fingerprint  %s\n", srv.CAFingerprint())
			rec, err := srv.RecoveryRecipients()
			if err != nil {
				return err
			}
			if len(rec) == 0 {
				fmt.Fprintf(out, "  recovery        none (kura server recovery-recipient set AGE1…)\n")
			}
			for _, r := range rec {
				fmt.Fprintf(out, "  recovery        %s\n", r)
			}
			fmt.Fprintf(out, "Log in (as an admin):\n  kura login --server %s --token \"$(cat %s)\"\n", url, srv.AdminTokenPath())
			fmt.Fprintf(out, "Enroll an agent: make a one-time token here or after login,\n  kura token create --expires 1h\n")
			fmt.Fprintf(out, "and on the client machine run\n  kura agent enroll --server %s --token TOKEN --name NAME && kura agent run\n", url)
			fmt.Fprintf(out, "Metrics: GET %s/metrics with the bearer token in %s\n", url, srv.MetricsTokenPath())
			if consoleListen != "" {
				cln, err := net.Listen("tcp", consoleListen)
				if err != nil {
					return fmt.Errorf("--console-listen: %w", err)
				}
				fmt.Fprintf(out, "Web console on https://%s (sign in with the admin token, or add users with kura user add)\n", cln.Addr())
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := srv.ServeConsole(ctx, cln, consoleIdle, consoleLife); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "console:", err)
						stop()
					}
				}()
				defer func() { stop(); <-done }() // before srv.Close
			}
			return srv.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":8420", "address to listen on (HOST:PORT)")
	cmd.Flags().StringVar(&consoleListen, "console-listen", "", "serve the web console on this address too (HOST:PORT, HTTPS with the server's certificate); off when empty")
	cmd.Flags().DurationVar(&consoleIdle, "console-idle", 30*time.Minute, "sign a console session out after this long without a request")
	cmd.Flags().DurationVar(&consoleLife, "console-lifetime", console.DefaultLifetime, "sign a console session out this long after its sign-in, however busy")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "a name or address clients use to reach this server, for its certificate; repeatable")
	cmd.Flags().StringVar(&name, "name", "", "server name (default: host name)")
	cmd.Flags().DurationVar(&leaderTTL, "leader-ttl", server.DefaultLeaderTTL, "how long the leader lease lasts: a standby server takes over within it after the leader dies")
	cmd.Flags().StringVar(&catDSN, "catalog", "", "the catalog: a postgres:// URL (default $KURA_CATALOG, else catalog.db in the home)")
	cmd.Flags().StringArrayVar(&recovery, "recovery-recipient", nil,
		"an age public key (age1…) every encrypting client's backups are also encrypted to, so its holder can restore a lost client; repeatable; kept in the home (see kura server recovery-recipient)")
	cmd.AddCommand(newRecoveryRecipientCmd(g))
	return cmd
}

// serverHome is the server's home: --home, else the default.
func serverHome(g *globals) (string, error) {
	if g.home != "" {
		return g.home, nil
	}
	return home.Dir()
}

func newRecoveryRecipientCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recovery-recipient",
		Short: "Show or change the recovery recipients kept in the server's home",
		Long: `Every encrypting client's new backups are also encrypted to the server's
recovery recipients (age public keys, age1…), so the holder of the secret
key can restore a lost client elsewhere. They are kept in the server's home
(recovery-recipients.txt); a running server reads them for every new
encrypted backup, so a change applies to the next saveset without a restart.
Savesets made before keep the recipients they were made with.`,
		Example: `  age-keygen -o /media/usb/kura-recovery.txt    # prints "Public key: age1…"
  kura server recovery-recipient set --home /var/lib/kura age1…
  kura server recovery-recipient show --home /var/lib/kura`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var asJSON bool
	show := func(cmd *cobra.Command, dir string) error {
		rs, err := server.RecoveryRecipients(dir)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), struct {
				Recipients []string `json:"recipients"`
			}{append([]string{}, rs...)})
		}
		if len(rs) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "No recovery recipient: encrypted backups open only with their client's keys.")
		}
		for _, r := range rs {
			fmt.Fprintln(cmd.OutOrStdout(), r)
		}
		return nil
	}
	set := &cobra.Command{
		Use:   "set AGE1… [AGE1…]",
		Short: "Replace the recovery recipients (new encrypted backups are encrypted to these)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := serverHome(g)
			if err != nil {
				return err
			}
			if err := server.SetRecoveryRecipients(dir, args); err != nil {
				return &exitError{Code: exitUsage, Err: err}
			}
			return show(cmd, dir)
		},
	}
	showCmd := &cobra.Command{
		Use:   "show",
		Short: "Print the recovery recipients, one a line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := serverHome(g)
			if err != nil {
				return err
			}
			return show(cmd, dir)
		},
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "Remove the recovery recipients (new encrypted backups open only with their client's keys)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := serverHome(g)
			if err != nil {
				return err
			}
			if err := server.SetRecoveryRecipients(dir, nil); err != nil {
				return err
			}
			return show(cmd, dir)
		},
	}
	for _, c := range []*cobra.Command{set, showCmd, clear} {
		c.Flags().BoolVar(&asJSON, "json", false, "print the recipients as JSON: {\"recipients\": [\"age1…\"]}")
	}
	cmd.AddCommand(set, showCmd, clear)
	return cmd
}
