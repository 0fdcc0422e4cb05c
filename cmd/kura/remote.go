package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

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
// none (or --local, or an explicit home).
func (g *globals) server() (*apiclient.Client, error) {
	if g.local || g.explicitHome() != "" {
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

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
