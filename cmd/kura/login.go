package main

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/pki"
	"github.com/kura-backup/kura/internal/private"
)

func init() { commands = append(commands, newLoginCmd, newLogoutCmd) }

func newLoginCmd(g *globals) *cobra.Command {
	var server, token string
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log this CLI in to a Kura server with its admin token",
		Long: `Log in to a server. The admin token carries the fingerprint of the server's
certificate authority: the server is accepted only if it proves to hold
that CA, and the CA is kept for later calls. The login is kept in
~/.config/kura/login.json (mode 0600; $KURA_LOGIN overrides the path).

Instead of logging in, KURA_SERVER and KURA_TOKEN may be set.

Once logged in, verbs work against the server, except when a home is given:
--home or KURA_HOME always means that local home (and --local the default
one), whatever login exists.`,
		Example: `  kura login --server https://backup.example.com:8420 --token "$(cat /var/lib/kura/admin.token)"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if server == "" || token == "" {
				return usageErrorf("login needs --server URL and --token TOKEN")
			}
			t, err := pki.ParseTokenKind(token, pki.KindAdmin)
			if err != nil {
				return usageErrorf("--token: %v", err)
			}
			if err := apiclient.CheckHost(cmdContext(cmd), server, t.CAFingerprint); err != nil {
				return err
			}
			var ca *x509.Certificate
			c, err := apiclient.New(server, pki.PinnedTLSConfig(t.CAFingerprint, func(c *x509.Certificate) { ca = c }), token)
			if err != nil {
				return usageErrorf("%w", err)
			}
			defer c.Close()
			info, err := c.Server(cmdContext(cmd))
			if err != nil {
				return err
			}
			if ca == nil {
				return errors.New("the server did not show its CA")
			}
			p, err := loginPath()
			if err != nil {
				return err
			}
			if err := private.MkdirAll(filepath.Dir(p)); err != nil {
				return err
			}
			b, _ := json.MarshalIndent(loginInfo{Server: c.Base(), Token: t.String(),
				CAPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))}, "", "  ")
			tmp := p + ".tmp"
			if err := private.WriteFile(tmp, append(b, '\n')); err != nil {
				return err
			}
			if err := os.Rename(tmp, p); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Logged in to server %s (Kura %s) at %s.\nCA fingerprint %s\n", info.Name, info.Version, c.Base(), info.CAFingerprint)
			if h := g.explicitHome(); h != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s is set, so verbs still work on the local home; drop it (`unset KURA_HOME`) to use this server.\n", h)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "the server's address (https://HOST:PORT)")
	cmd.Flags().StringVar(&token, "token", "", "the server's admin token (admin.token in its home)")
	return cmd
}

func newLogoutCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the server login: verbs work on the local home again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loginPath()
			if err != nil {
				return err
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Logged out.")
			return nil
		},
	}
}
