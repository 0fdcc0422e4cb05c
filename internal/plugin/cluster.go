package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PostgreSQL, physical: the cluster's files as pg_basebackup writes them
// in tar format to its standard output, with the WAL the copy needs to be
// consistent fetched at its end (-X fetch), one file:
//
//	postgresql-cluster/base.tar
//
// pg_basebackup can write to its standard output only for a cluster
// without extra tablespaces; with them it fails and says so. A restore
// (--to-cluster DIR) extracts the tar into a new, empty folder; started
// there, PostgreSQL recovers to the end of the backup.

// ClusterBase is the file of a physical PostgreSQL backup.
const ClusterBase = KindPostgreSQLCluster + "/base.tar"

func clusterStep() Step {
	return Step{Name: ClusterBase, Label: "pg_basebackup",
		Argv: []string{"pg_basebackup", "--pgdata=-", "--format=tar", "--wal-method=fetch", "--checkpoint=fast", "--no-password"}}
}

// ErrNotEmpty: a restore of a cluster was given a folder that holds
// something; a cluster is never restored over files.
var ErrNotEmpty = errors.New("the folder is not empty")

// openCluster starts extracting a base backup into dir, which must not
// exist or be empty; it is made mode 0700, as PostgreSQL wants it.
func (t Target) openCluster(ctx context.Context, name string) (Sink, error) {
	kind := KindPostgreSQLCluster
	switch name {
	case ClusterBase:
	case MariaDBPhysical:
		kind = KindMariaDBPhysical
		if t.Recovery.Cluster != "" {
			return nil, fmt.Errorf("%w: --wal goes with a PostgreSQL base backup", ErrBadSource)
		}
	default:
		return nil, fmt.Errorf("%w: %s is not a physical backup (%s, %s); restore it with --to or --to-command", ErrBadSource, name, ClusterBase, MariaDBPhysical)
	}
	if err := t.allowed(kind); err != nil {
		return nil, err
	}
	dir := t.Cluster
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%w: --to-cluster %q: give an absolute folder", ErrBadSource, dir)
	}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case len(ents) > 0:
		return nil, fmt.Errorf("--to-cluster %s: %w", dir, ErrNotEmpty)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	if kind == KindMariaDBPhysical {
		return t.openMariaDBPhysical(ctx, dir)
	}
	s, err := startSink(ctx, "tar extracting the cluster into "+dir, []string{"tar", "--extract", "--file=-", "--directory=" + dir})
	if err != nil || t.Recovery.Cluster == "" {
		return s, err
	}
	return &recoverySink{procSink: s, dir: dir, rec: t.Recovery}, nil
}

// recoverySink writes the recovery settings once the files are extracted.
type recoverySink struct {
	*procSink
	dir string
	rec Recovery
}

func (s *recoverySink) Close() error {
	if err := s.procSink.Close(); err != nil {
		return err
	}
	return s.rec.write(s.dir)
}
