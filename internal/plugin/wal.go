package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// PostgreSQL's WAL archive in Kura: PostgreSQL runs
//
//	archive_command = 'kura wal archive --cluster NAME %p %f'
//
// for every finished WAL file; each becomes a saveset of its own, one
// file postgresql-wal/NAME/FILE, complete (on tape, in the catalog)
// before the command exits 0 — so PostgreSQL removes a WAL file only
// once Kura holds it, and retries one Kura failed to store. A restore of
// a base backup (--to-cluster DIR --wal NAME [--at TIME]) writes
//
//	restore_command = 'kura --home HOME wal get --cluster NAME %f %p'
//	recovery_target_time = 'TIME'          (with --at)
//	recovery_target_action = 'promote'
//
// to DIR/postgresql.auto.conf and creates DIR/recovery.signal: started,
// PostgreSQL fetches the WAL it needs from Kura and replays it to TIME
// (or to the end of the archive).

// WALDir is the folder of WAL files in their savesets.
const WALDir = KindWAL

var (
	clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	walFileRE     = regexp.MustCompile(`^[0-9A-F]{8}(\.history|[0-9A-F]{16}(\.partial|\.[0-9A-F]{8}\.backup)?)$`)
)

// ValidCluster checks the name of a WAL archive.
func ValidCluster(name string) error {
	if !clusterNameRE.MatchString(name) {
		return fmt.Errorf("%w: WAL archive name %q (letters, digits, _ . -)", ErrBadSource, name)
	}
	return nil
}

// ValidWALName checks CLUSTER/FILE, FILE being a WAL file's name as
// PostgreSQL gives it (%f).
func ValidWALName(name string) error {
	cluster, file, ok := strings.Cut(name, "/")
	if !ok {
		return fmt.Errorf("%w: WAL file %q: want CLUSTER/FILE", ErrBadSource, name)
	}
	if err := ValidCluster(cluster); err != nil {
		return err
	}
	if !walFileRE.MatchString(file) {
		return fmt.Errorf("%w: %q is not the name of a WAL file", ErrBadSource, file)
	}
	return nil
}

// WALSelection is the selection key of the savesets of one WAL file.
func WALSelection(cluster, file string) string {
	return "sources:" + Source{Kind: KindWAL, Name: cluster + "/" + file}.String()
}

// Recovery says how a restored cluster recovers from a WAL archive.
type Recovery struct {
	Cluster string    // the WAL archive (kura wal archive --cluster NAME)
	At      time.Time // replay up to this moment (zero: all the archive holds)
	// Command is PostgreSQL's restore_command, %f and %p included.
	Command string
}

// write adds the recovery settings to a restored data folder.
func (r Recovery) write(dir string) error {
	if r.Command == "" || strings.ContainsAny(r.Command, "\n\x00") {
		return fmt.Errorf("%w: a restore_command is needed to recover from WAL archive %s", ErrBadSource, r.Cluster)
	}
	var b strings.Builder
	b.WriteString("\n# Written by kura restore --to-cluster: recovery from WAL archive " + r.Cluster + "\n")
	b.WriteString("restore_command = " + pgQuote(r.Command) + "\n")
	if !r.At.IsZero() {
		b.WriteString("recovery_target_time = " + pgQuote(r.At.Format("2006-01-02 15:04:05.999999-07:00")) + "\n")
		b.WriteString("recovery_target_action = 'promote'\n")
	}
	f, err := os.OpenFile(filepath.Join(dir, "postgresql.auto.conf"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "recovery.signal"), nil, 0o600)
}

// pgQuote quotes a value for postgresql.conf.
func pgQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
