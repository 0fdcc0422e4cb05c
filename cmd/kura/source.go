package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/producer"
)

// sourceFlags are a backup's commands and plug-ins: what it stores
// instead of files.
type sourceFlags struct {
	command  string
	name     string
	plugin   string
	dbs      []string
	allDBs   bool
	cluster  string
	partSize *sizeFlag
}

func (s *sourceFlags) register(f *pflag.FlagSet) {
	f.StringVar(&s.command, "from-command", "", "store this shell command's standard output as one file (its exit status decides success)")
	f.StringVar(&s.name, "name", plugin.DefaultName, "with --from-command: the file name the output is stored as")
	f.StringVar(&s.plugin, "plugin", "", "back up a database with a plug-in: postgresql (pg_dump per database and pg_dumpall --globals-only), postgresql-cluster (pg_basebackup), mariadb (mariadb-dump per database), mariadb-physical (mariadb-backup)")
	f.StringArrayVar(&s.dbs, "db", nil, "with --plugin: a database to back up; repeatable")
	f.BoolVar(&s.allDBs, "all-databases", false, "with --plugin: every database that accepts connections")
	f.StringVar(&s.cluster, "cluster", "", "with --plugin postgresql-cluster: the cluster's WAL archive name (kura wal archive --cluster), so retention and --wal recovery pair them")
}

// registerPartSize adds --part-size (a backup's, not a selection's).
func (s *sourceFlags) registerPartSize(f *pflag.FlagSet) {
	s.partSize = sizeVar(f, "part-size", 4096, producer.MaxPartSize, "with --from-command or --plugin: memory per output part, one tar entry each (default 16MiB)")
}

// sources turns the flags into the backup's sources (none without
// --from-command or --plugin).
func (s *sourceFlags) sources(cmd *cobra.Command) ([]plugin.Source, error) {
	f := cmd.Flags()
	var out []plugin.Source
	if s.command != "" || f.Changed("from-command") {
		out = append(out, plugin.Source{Kind: plugin.KindCommand, Command: s.command, Name: s.name})
	} else if f.Changed("name") {
		return nil, usageErrorf("--name goes with --from-command")
	}
	if s.plugin != "" || f.Changed("plugin") {
		if s.cluster != "" && s.plugin != plugin.KindPostgreSQLCluster {
			return nil, usageErrorf("--cluster goes with --plugin %s", plugin.KindPostgreSQLCluster)
		}
		out = append(out, plugin.Source{Kind: s.plugin, Databases: s.dbs, AllDatabases: s.allDBs, Name: s.cluster})
	} else if len(s.dbs) > 0 || s.allDBs || s.cluster != "" {
		return nil, usageErrorf("--db, --all-databases and --cluster go with --plugin")
	}
	if len(out) == 0 && f.Lookup("part-size") != nil && f.Changed("part-size") {
		return nil, usageErrorf("--part-size goes with --from-command or --plugin")
	}
	for _, src := range out {
		if err := src.Validate(); err != nil {
			return nil, usageErrorf("%v", err)
		}
	}
	return out, nil
}
