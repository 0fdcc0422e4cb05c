package main

import (
	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
)

// withService runs fn with the service a command talks to: the configured
// server's, through apiclient, or the local home's, in this process
// (internal/service). Both are the one api.Service, so a verb written on it
// prints the same and exits the same in either mode.
func withService(cmd *cobra.Command, g *globals, fn func(svc api.Service) error) error {
	return serviceFor(g, false, fn)
}

// serviceFor is withService; anyClient lets --client through in local mode
// too, for a verb that reads clients' records in the local catalog (a
// server's home holds them).
func serviceFor(g *globals, anyClient bool, fn func(svc api.Service) error) error {
	srv, err := g.server()
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close()
		return fn(srv)
	}
	if g.client != "" && !anyClient {
		return usageErrorf("--client needs a server: %v", g.noServer())
	}
	return withEnv(g, func(env *engine.Env) error { return fn(service.New(env)) })
}
