package plugin

import (
	"fmt"
	"slices"

	"github.com/kura-backup/kura/internal/api"
)

// Allow is what an agent's administrator lets the server run on the
// agent's machine (kura agent run --allow-commands, --allow-plugin NAME).
// The zero value allows nothing: a server, or whoever holds an admin
// token, cannot make an agent run a program it was not told to accept.
type Allow struct {
	Commands bool     // any shell command (and so every plug-in)
	Plugins  []string // these plug-ins' tools, with the arguments Kura builds
}

// Source checks that a source may run here.
func (a Allow) Source(s Source) error {
	switch {
	case a.Commands:
		return nil
	case s.Kind == KindCommand:
		return fmt.Errorf("%w: commands (start the agent with --allow-commands to accept them)", ErrNotAllowed)
	case !slices.Contains(a.Plugins, s.Kind):
		return fmt.Errorf("%w: plug-in %s (start the agent with --allow-plugin %s to accept it)", ErrNotAllowed, s.Kind, s.Kind)
	}
	return nil
}

// Target checks that a restore target may run here.
func (a Allow) Target(t Target) error {
	switch {
	case a.Commands:
		return nil
	case t.Command != "":
		return fmt.Errorf("%w: commands (start the agent with --allow-commands to accept them)", ErrNotAllowed)
	case t.Database != "" && !slices.Contains(a.Plugins, KindPostgreSQL) && !slices.Contains(a.Plugins, KindMariaDB):
		return fmt.Errorf("%w: database plug-ins (start the agent with --allow-plugin postgresql or mariadb to accept them)", ErrNotAllowed)
	case t.Cluster != "" && !slices.Contains(a.Plugins, KindPostgreSQLCluster) && !slices.Contains(a.Plugins, KindMariaDBPhysical):
		return fmt.Errorf("%w: physical plug-ins (start the agent with --allow-plugin postgresql-cluster or mariadb-physical to accept them)", ErrNotAllowed)
	}
	return nil
}

// Plugin checks one plug-in by name (for Target.Allowed).
func (a Allow) Plugin(kind string) error {
	if a.Commands || slices.Contains(a.Plugins, kind) {
		return nil
	}
	return fmt.Errorf("%w: plug-in %s (start the agent with --allow-plugin %s to accept it)", ErrNotAllowed, kind, kind)
}

// FromAPI converts the wire form of sources.
func FromAPI(in []api.Source) []Source {
	var out []Source
	for _, s := range in {
		out = append(out, Source{Kind: s.Kind, Command: s.Command, Name: s.Name, Databases: s.Databases, AllDatabases: s.AllDatabases})
	}
	return out
}

// ToAPI converts sources to their wire form.
func ToAPI(in []Source) []api.Source {
	var out []api.Source
	for _, s := range in {
		out = append(out, api.Source{Kind: s.Kind, Command: s.Command, Name: s.Name, Databases: s.Databases, AllDatabases: s.AllDatabases})
	}
	return out
}
