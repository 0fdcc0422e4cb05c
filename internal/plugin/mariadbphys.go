package plugin

import (
	"context"
	"fmt"
)

// MariaDB, physical: the server's files as mariadb-backup streams them
// (xbstream), one file:
//
//	mariadb-physical/backup.xb   mariadb-backup --backup --stream=xbstream
//
// mariadb-backup runs on the database host (it reads the data folder and
// asks the server, through the clients' option files, for a consistent
// point). A restore (--to-cluster DIR) unpacks the stream into a new,
// empty folder (mbstream -x) and prepares it (mariadb-backup --prepare),
// after which DIR is a data folder a server starts on
// (mariadbd --datadir=DIR, or mariadb-backup --copy-back into the
// configured one).

// MariaDBPhysical is the file of a physical MariaDB backup.
const MariaDBPhysical = KindMariaDBPhysical + "/backup.xb"

func mariadbPhysicalStep() Step {
	return Step{Name: MariaDBPhysical, Label: "mariadb-backup",
		Argv: []string{"mariadb-backup", "--backup", "--stream=xbstream"}}
}

// openMariaDBPhysical unpacks the stream into dir, and prepares it once
// the stream is whole.
func (t Target) openMariaDBPhysical(ctx context.Context, dir string) (Sink, error) {
	s, err := startSink(ctx, "mbstream extracting the backup into "+dir, []string{"mbstream", "--extract", "--directory=" + dir})
	if err != nil {
		return nil, err
	}
	return &prepareSink{procSink: s, ctx: ctx, dir: dir}, nil
}

type prepareSink struct {
	*procSink
	ctx context.Context
	dir string
}

func (s *prepareSink) Close() error {
	if err := s.procSink.Close(); err != nil {
		return err
	}
	p, err := start(s.ctx, "mariadb-backup --prepare", []string{"mariadb-backup", "--prepare", "--target-dir=" + s.dir}, nil, nil)
	if err != nil {
		return err
	}
	if err := p.Wait(); err != nil {
		return fmt.Errorf("preparing %s: %w", s.dir, err)
	}
	return nil
}
