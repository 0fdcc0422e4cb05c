package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/pki"
)

// Where a command runs follows one rule: an explicit home (--home or
// KURA_HOME) or --local means the local home, whatever login exists;
// otherwise a configured server means the server: KURA_SERVER and
// KURA_TOKEN (the token pins the server's CA), or the file `kura login`
// wrote. The library and catalog verbs then run on the server through its
// console endpoint, so they print exactly what they print locally; backup,
// restore, verify, copy, prune, catalog backup, tape scan and tape erase
// become queued jobs the CLI follows live.

// loginInfo is what `kura login` keeps (mode 0600).
type loginInfo struct {
	Server string `json:"server"`
	Token  string `json:"token"`
	CAPEM  string `json:"ca_pem"`
}

// loginPath is $KURA_LOGIN, or login.json in the user's config folder.
func loginPath() (string, error) {
	if p := os.Getenv("KURA_LOGIN"); p != "" {
		return p, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "kura", "login.json"), nil
}

// errNoServer says how to configure a server.
var errNoServer = errors.New("no server configured: run `kura login --server URL --token TOKEN`, or set KURA_SERVER and KURA_TOKEN")

// explicitHome names what made the home explicit: "--home", "KURA_HOME",
// or "" when neither is given.
func (g *globals) explicitHome() string {
	switch {
	case g.home != "":
		return "--home"
	case os.Getenv("KURA_HOME") != "":
		return "KURA_HOME"
	}
	return ""
}

// server returns a client of the configured server, or nil when there is
// none (or --local, an explicit home, or inside the server's own console).
func (g *globals) server() (*apiclient.Client, error) {
	if g.local || g.inServer || g.explicitHome() != "" {
		return nil, nil
	}
	if url := os.Getenv("KURA_SERVER"); url != "" {
		tok := os.Getenv("KURA_TOKEN")
		t, err := pki.ParseTokenKind(tok, pki.KindAdmin)
		if err != nil {
			return nil, fmt.Errorf("KURA_TOKEN: %w", err)
		}
		return apiclient.New(url, pki.PinnedTLSConfig(t.CAFingerprint, nil), tok)
	}
	p, err := loginPath()
	if err != nil {
		return nil, nil
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var li loginInfo
	if err := json.Unmarshal(b, &li); err != nil {
		return nil, fmt.Errorf("%s: %w (run `kura login` again)", p, err)
	}
	cfg, err := pki.ClientTLSConfig([]byte(li.CAPEM), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return apiclient.New(li.Server, cfg, li.Token)
}

// needServer is server() for verbs that only make sense with one.
func (g *globals) needServer() (*apiclient.Client, error) {
	c, err := g.server()
	if err == nil && c == nil {
		err = g.noServer()
	}
	return c, err
}

// noServer says why there is no server: none is configured, or an
// explicit home or --local chose the local home.
func (g *globals) noServer() error {
	switch h := g.explicitHome(); {
	case g.local:
		return errors.New("--local works on the local home, and this needs a server")
	case h != "":
		return fmt.Errorf("%s is set, which means the local home (drop it, e.g. `unset KURA_HOME`, to use the server you logged in to)", h)
	}
	return errNoServer
}

// consoleVerbs run on the server as they are when a server is configured.
var consoleVerbs = []string{}

func isConsoleVerb(c *cobra.Command) bool {
	path := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
	for _, v := range consoleVerbs {
		if path == v || strings.HasPrefix(path, v+" ") {
			return true
		}
	}
	return false
}

// remoteVerbs makes the console verbs run on the server when one is
// configured.
func remoteVerbs(root *cobra.Command, g *globals) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.RunE == nil || !isConsoleVerb(c) {
			return
		}
		local := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			srv, err := g.server()
			if err != nil {
				return err
			}
			if srv == nil {
				if g.client != "" && !g.inServer {
					return usageErrorf("--client needs a server: %v", g.noServer())
				}
				return local(cmd, args)
			}
			defer srv.Close()
			return runConsole(cmd, g, srv, args)
		}
	}
	walk(root)
}

// consoleArgs rebuilds a command line from what cobra parsed: the command
// path, the flags set (global ones left out) and the arguments.
func consoleArgs(cmd *cobra.Command, args []string) []string {
	out := strings.Fields(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()))
	global := cmd.Root().PersistentFlags()
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if global.Lookup(f.Name) != nil {
			return // --home, --client …: the console sets those itself
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	out = append(out, "--")
	return append(out, args...)
}

// runConsole runs the command on the server and prints what it printed.
func runConsole(cmd *cobra.Command, g *globals, srv *apiclient.Client, args []string) error {
	resp, err := srv.Console(cmdContext(cmd), api.ConsoleRequest{Args: consoleArgs(cmd, args), Client: g.client})
	if err != nil {
		return err
	}
	io.WriteString(cmd.OutOrStdout(), resp.Stdout)
	io.WriteString(cmd.ErrOrStderr(), resp.Stderr)
	if resp.ExitCode != 0 {
		return &exitError{Code: resp.ExitCode}
	}
	return nil
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// consoleRunner is the server's side of the console: it runs one allowed
// verb in-process on the server home.
func consoleRunner(home string, submit func(api.JobRequest) ([]int64, error)) func(ctx context.Context, req api.ConsoleRequest, stdout, stderr io.Writer) int {
	return func(ctx context.Context, req api.ConsoleRequest, stdout, stderr io.Writer) int {
		for _, a := range req.Args {
			if a == "--" {
				break
			}
			for _, banned := range []string{"--home", "--client", "--local", "--cpuprofile"} {
				if a == banned || strings.HasPrefix(a, banned+"=") {
					fmt.Fprintf(stderr, "kura: %s cannot be given through the console\n", banned)
					return exitUsage
				}
			}
		}
		g := &globals{inServer: true, submit: submit}
		root := newRootCmdWith(g)
		_ = root.PersistentFlags().Set("home", home)
		_ = root.PersistentFlags().Set("client", req.Client)
		c, _, err := root.Find(req.Args)
		if err != nil || c == root || !isConsoleVerb(c) {
			fmt.Fprintf(stderr, "kura: %q cannot run through the server console (allowed: %s)\n",
				strings.Join(req.Args, " "), strings.Join(consoleVerbs, ", "))
			return exitUsage
		}
		root.SetArgs(req.Args)
		root.SetOut(stdout)
		root.SetErr(stderr)
		return exitCode(root.ExecuteContext(ctx), stderr)
	}
}
