package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/server"
)

func init() { commands = append(commands, newServerCmd) }

func newServerCmd(g *globals) *cobra.Command {
	var (
		listen        string
		consoleListen string
		consoleIdle   time.Duration
		hosts         []string
		name          string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the backup server: HTTPS API, job queue, libraries and drives",
		Long: `Run the Kura server on this machine. It owns the catalog, the virtual tape
libraries and their drives in its home, and runs queued jobs one per drive.
Agents dial in to it; admins use the same kura binary with "kura login".

On first start it creates its own certificate authority and an admin token
(admin.token in the home) and prints how to log in and enroll agents.

--console-listen serves the web console on a port of its own (sign in with
the admin token or a user of "kura user add"). GET /metrics on the API port
is the Prometheus scrape, for the token in metrics.token.`,
		Example: `  kura server --home /var/lib/kura --listen :8420 --host backup.example.com --console-listen :8421`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			home := g.home
			if home == "" {
				env, err := openEnv(g)
				if err != nil {
					return err
				}
				home = env.Home
				env.Close()
			}
			if h, err := os.Hostname(); err == nil {
				hosts = append(hosts, h)
			}
			srv, err := server.New(server.Options{Home: home, Hosts: hosts, Name: name, Log: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			url := "https://" + ln.Addr().String()
			if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
				// Listening on every address: show the name clients use.
				if h, err := os.Hostname(); err == nil {
					url = fmt.Sprintf("https://%s:%d", h, tcp.Port)
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Kura server listening on %s\n", url)
			fmt.Fprintf(out, "  home            %s\n", srv.Home())
			fmt.Fprintf(out, "  CA fingerprint  %s\n", srv.CAFingerprint())
			fmt.Fprintf(out, "Log in (as an admin):\n  kura login --server %s --token \"$(cat %s)\"\n", url, srv.AdminTokenPath())
			fmt.Fprintf(out, "Enroll an agent: make a one-time token here or after login,\n  kura token create --expires 1h\n")
			fmt.Fprintf(out, "and on the client machine run\n  kura agent enroll --server %s --token TOKEN --name NAME && kura agent run\n", url)
			fmt.Fprintf(out, "Metrics: GET %s/metrics with the bearer token in %s\n", url, srv.MetricsTokenPath())
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if consoleListen != "" {
				cln, err := net.Listen("tcp", consoleListen)
				if err != nil {
					return fmt.Errorf("--console-listen: %w", err)
				}
				fmt.Fprintf(out, "Web console on https://%s (sign in with the admin token, or add users with kura user add)\n", cln.Addr())
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := srv.ServeConsole(ctx, cln, consoleIdle); err != nil {
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
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "a name or address clients use to reach this server, for its certificate; repeatable")
	cmd.Flags().StringVar(&name, "name", "", "server name (default: host name)")
	return cmd
}
