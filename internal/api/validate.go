package api

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/rules"
)

// ErrInvalid: a request that can only fail later. Every request type's
// Validate returns it inside a *FieldError, and the server answers 400
// before it accepts anything.
var ErrInvalid = errors.New("invalid request")

// FieldError names the field of a request that is wrong, by its JSON name.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }
func (e *FieldError) Unwrap() error { return ErrInvalid }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Limits of request fields.
const (
	MaxStreams   = 16                // streams: drives one backup may be split over
	MaxLabelLen  = rules.MaxLabelLen // label: bytes, as a local backup
	MaxTokenLife = 30 * 24 * time.Hour
)

// clientPath checks an absolute path on a client: no NUL, absolute, clean.
func clientPath(field, p string) error {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return bad(field, "path %q contains a NUL byte", p)
	case p == "" || p[0] != '/':
		return bad(field, "path %q: paths on a client must be absolute", p)
	case path.Clean(p) != p:
		return bad(field, "path %q: paths on a client must be clean (%s)", p, path.Clean(p))
	}
	return nil
}

// Validate checks everything about a job request that does not need the
// server's state (which client, saveset, library and drive exist is the
// server's part).
func (r *JobRequest) Validate() error {
	switch r.Kind {
	case KindVerify, KindCopy, KindPrune, KindCatalog, KindScan, KindErase:
		return r.validateAdmin()
	}
	if err := rules.ClientName(r.Client); err != nil {
		return bad("client", "%v", err)
	}
	if r.Stream != 0 {
		return bad("stream", "is set by the server for each part of a split backup; ask for streams instead")
	}
	if r.BWLimit < 0 {
		return bad("bwlimit", "must not be negative")
	}
	for _, f := range r.setFields() {
		switch f {
		case "copy", "sample", "barcode", "force":
			return bad(f, "is not a field of a %s job", r.Kind)
		}
	}
	switch r.Kind {
	case KindBackup:
		if len(r.Paths) == 0 && r.Selection == "" && len(r.Sources) == 0 {
			return bad("paths", "a backup needs paths, a selection or sources")
		}
		if len(r.Sources) > 0 {
			if len(r.Paths) > 0 || len(r.Excludes) > 0 {
				return bad("sources", "back up paths or sources, not both in one backup")
			}
			if r.Streams > 1 {
				return bad("streams", "a backup of sources is one stream")
			}
			if r.Level != "" && r.Level != rules.LevelFull {
				return bad("level", "a backup of sources is a full backup")
			}
			for _, s := range r.Sources {
				if s.Kind == "" || strings.IndexByte(s.Command, 0) >= 0 || strings.IndexByte(s.Name, 0) >= 0 {
					return bad("sources", "each source needs a kind, and no NUL bytes")
				}
			}
		}
		if r.PartSize < 0 || r.PartSize > 1<<30 {
			return bad("part_size", "must be between 0 and 1 GiB")
		}
		for _, p := range r.Paths {
			if err := clientPath("paths", p); err != nil {
				return err
			}
		}
		for _, x := range r.Excludes {
			if err := rules.ExcludePattern(x); err != nil {
				return bad("excludes", "%v", err)
			}
		}
		switch r.Level {
		case "", rules.LevelFull, rules.LevelIncr, rules.LevelDiff:
		default:
			return bad("level", "unknown level %q (full, incr or diff)", r.Level)
		}
		if r.Compress != "" {
			if _, err := compress.ParseLevel(r.Compress); err != nil {
				return bad("compress", "%v", err)
			}
		}
		if r.Streams < 0 || r.Streams > MaxStreams {
			return bad("streams", "must be between 1 and %d", MaxStreams)
		}
		if r.Drive < 0 {
			return bad("drive", "must not be negative")
		}
		if r.FrameSize != 0 && (r.FrameSize < rules.MinFrameSize || r.FrameSize > rules.MaxFrameSize) {
			return bad("frame_size", "%d is not between %d and %d", r.FrameSize, rules.MinFrameSize, rules.MaxFrameSize)
		}
		if rules.Label(r.Label) != nil {
			return bad("label", "UTF-8 of at most %d bytes, without NUL", MaxLabelLen)
		}
	case KindRestore:
		if r.Saveset < 0 {
			return bad("saveset", "must be a saveset ID")
		}
		if r.Saveset == 0 && !r.Latest && r.At.IsZero() {
			return bad("saveset", "say which saveset to restore: an ID, latest or at")
		}
		into := r.ToCommand != "" || r.ToDB != "" || r.ToCluster != ""
		switch {
		case r.ToCommand != "" && r.ToDB != "", r.ToCluster != "" && (r.ToCommand != "" || r.ToDB != ""):
			return bad("to_db", "say one of to_command, to_db and to_cluster")
		case (r.WAL != "" || r.WALRestoreCommand != "") && r.ToCluster == "":
			return bad("wal", "recovery from a WAL archive goes with to_cluster")
		case r.WALRestoreCommand != "" && r.WAL == "":
			return bad("wal_restore_command", "goes with wal")
		case strings.ContainsAny(r.WAL+r.WALRestoreCommand, "\n\x00"):
			return bad("wal", "no newlines or NUL bytes")
		case r.ToCluster != "" && clientPath("to_cluster", r.ToCluster) != nil:
			return clientPath("to_cluster", r.ToCluster)
		case into && (r.To != "" || r.InPlace):
			return bad("to", "say one of to, in_place, to_command and to_db")
		case r.Jobs < 0 || r.Jobs > 64 || r.Jobs > 1 && r.ToDB == "":
			return bad("jobs", "pg_restore jobs (1 to 64) of a restore to_db")
		case into:
		case r.To == "" && !r.InPlace:
			return bad("to", "say where to restore: to (a folder on the client), in_place to write over the original places, to_command or to_db")
		case r.To != "" && r.InPlace:
			return bad("in_place", "say one of to and in_place, not both")
		}
		if r.To != "" {
			if err := clientPath("to", r.To); err != nil {
				return err
			}
		}
		if r.ToClient != "" {
			if err := rules.ClientName(r.ToClient); err != nil {
				return bad("to_client", "%v", err)
			}
		}
		for _, p := range r.Includes {
			if strings.IndexByte(p, 0) >= 0 {
				return bad("includes", "%q contains a NUL byte", p)
			}
			if _, err := path.Match(strings.Trim(p, "/"), ""); err != nil {
				return bad("includes", "%q: %v", p, err)
			}
		}
		for _, p := range r.RestorePaths {
			if _, err := rules.RestorePath(p); err != nil {
				return bad("restore_paths", "%v", err)
			}
		}
		switch r.Overwrite {
		case "", rules.OverwriteNever, rules.OverwriteOlder, rules.OverwriteAlways:
		default:
			return bad("overwrite", "unknown overwrite policy %q (never, older or always)", r.Overwrite)
		}
	default:
		return bad("kind", "unknown job kind %q (backup, restore, verify, copy, prune, catalog, scan or erase)", r.Kind)
	}
	return nil
}

// validateAdmin checks the request of a job that runs on the server alone:
// verify, copy, prune, catalog, scan and erase. It takes only its kind's
// fields: another kind's field is refused, by name, rather than ignored.
func (r *JobRequest) validateAdmin() error {
	if r.Client != "" {
		return bad("client", "a %s job runs on the server alone: it takes no client", r.Kind)
	}
	allowed := map[string]bool{}
	for _, f := range map[string][]string{
		KindVerify:  {"saveset", "level", "copy", "sample"},
		KindCopy:    {"saveset", "library", "drive", "verify"},
		KindPrune:   {},
		KindCatalog: {"library", "drive"},
		KindScan:    {"barcode", "drive"},
		KindErase:   {"barcode", "force", "drive"},
	}[r.Kind] {
		allowed[f] = true
	}
	for _, f := range r.setFields() {
		if !allowed[f] {
			return bad(f, "is not a field of a %s job", r.Kind)
		}
	}
	if allowed["saveset"] && r.Saveset <= 0 {
		return bad("saveset", "say which saveset: its ID")
	}
	if r.Drive < 0 {
		return bad("drive", "must not be negative")
	}
	switch r.Kind {
	case KindVerify:
		switch r.Level {
		case "", "media", "data":
		case "source":
			return bad("level", "source compares with the files on the client, which the server does not have: verify data, or restore on the client and compare")
		default:
			return bad("level", "unknown verify level %q (media or data)", r.Level)
		}
		if r.Copy < 0 {
			return bad("copy", "must be a copy number (1, 2, ...)")
		}
		if r.Sample < 0 || r.Sample > 100 {
			return bad("sample", "must be between 0 and 100 percent")
		}
	case KindCopy:
		if r.Library == "" {
			return bad("library", "say which library to copy to")
		}
	case KindScan, KindErase:
		if r.Barcode == "" {
			return bad("barcode", "say which tape")
		}
		if strings.IndexByte(r.Barcode, 0) >= 0 || len(r.Barcode) > 64 {
			return bad("barcode", "%q is not a barcode", r.Barcode)
		}
	}
	return nil
}

// setFields names (by JSON name) the fields of a request that are set,
// besides kind and client.
func (r *JobRequest) setFields() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(len(r.Paths) > 0, "paths")
	add(r.Selection != "", "selection")
	add(len(r.Excludes) > 0, "excludes")
	add(r.Level != "", "level")
	add(r.Compress != "", "compress")
	add(r.Library != "", "library")
	add(r.Drive != 0, "drive")
	add(r.Verify, "verify")
	add(r.Label != "", "label")
	add(r.FrameSize != 0, "frame_size")
	add(r.BWLimit != 0, "bwlimit")
	add(r.Streams != 0, "streams")
	add(r.Stream != 0, "stream")
	add(r.Policy != "", "policy")
	add(r.Pool != "", "pool")
	add(len(r.Sources) > 0, "sources")
	add(r.PartSize != 0, "part_size")
	add(r.ToCommand != "", "to_command")
	add(r.ToDB != "", "to_db")
	add(r.Jobs != 0, "jobs")
	add(r.ToCluster != "", "to_cluster")
	add(r.Saveset != 0, "saveset")
	add(r.Latest, "latest")
	add(!r.At.IsZero(), "at")
	add(r.To != "", "to")
	add(r.InPlace, "in_place")
	add(r.ToClient != "", "to_client")
	add(len(r.Includes) > 0, "includes")
	add(len(r.RestorePaths) > 0, "restore_paths")
	add(r.Overwrite != "", "overwrite")
	add(r.Sync, "sync")
	add(r.Copy != 0, "copy")
	add(r.Sample != 0, "sample")
	add(r.Barcode != "", "barcode")
	add(r.Force, "force")
	return out
}

// Validate checks a token request.
func (r *TokenRequest) Validate() error {
	life := time.Duration(r.ExpiresSeconds * float64(time.Second))
	if r.ExpiresSeconds != 0 && (life <= 0 || life > MaxTokenLife) {
		return bad("expires_seconds", "must be between 1s and 720h")
	}
	if r.Name != "" {
		if err := rules.ClientName(r.Name); err != nil {
			return bad("name", "%v", err)
		}
	}
	return nil
}

// Validate checks a client update.
func (u *ClientUpdate) Validate() error {
	if u.BWLimit != nil && *u.BWLimit < 0 {
		return bad("bwlimit", "must not be negative")
	}
	return nil
}

// Validate checks a policy run.
func (p *PolicyRun) Validate() error {
	switch p.Level {
	case "", rules.LevelFull, rules.LevelDiff, rules.LevelIncr, LevelScheduled:
		return nil
	}
	return bad("level", "unknown level %q (full, diff, incr or scheduled)", p.Level)
}

// Validate checks a library to create: a name, and sizes that are not
// negative (the library checks the rest of its configuration).
func (r *LibraryCreate) Validate() error {
	switch {
	case r.Name == "":
		return bad("name", "a library needs a name")
	case r.Slots < 0:
		return bad("slots", "must not be negative")
	case r.Drives < 0:
		return bad("drives", "must not be negative")
	case r.TapeSizeBytes < 0:
		return bad("tape_size_bytes", "must not be negative")
	case r.BlockSizeBytes < 0:
		return bad("block_size_bytes", "must not be negative")
	case r.BufferSizeBytes < 0:
		return bad("buffer_size_bytes", "must not be negative")
	case r.ChunkSizeBytes < 0:
		return bad("chunk_size_bytes", "must not be negative")
	case r.ChunkSizeBytes > 0 && r.S3 == "":
		return bad("chunk_size_bytes", "a chunk size is for a library on S3 (s3)")
	case r.Changer == "" && len(r.DriveDevices) > 0:
		return bad("drive_devices", "drive devices are for a tape library: give its changer too")
	case r.Changer != "" && len(r.DriveDevices) == 0:
		return bad("drive_devices", "a tape library needs at least one drive device (/dev/nstN)")
	case r.Changer != "" && r.S3 != "":
		return bad("changer", "a library is on a changer or on S3, not both")
	case r.Changer != "" && (r.Slots != 0 || r.Drives != 0):
		return bad("changer", "a tape library's slots are its changer's and its drives the drive devices given")
	case r.Node != "" && r.Dir != "":
		return bad("node", "a library on a storage node keeps its folder in the node's home (no dir)")
	}
	return nil
}

// Validate checks a library folder to register.
func (r *LibraryRegister) Validate() error {
	if r.Dir == "" {
		return bad("dir", "say which library folder to register")
	}
	return nil
}

// ValidAgentRun checks an agent run name (AgentBye.Run, the run parameter
// of an order poll): 1 to MaxAgentRunLen letters, digits, '-' or '_'.
func ValidAgentRun(run string) error {
	if run == "" || len(run) > MaxAgentRunLen {
		return bad("run", "an agent run is named by 1 to %d characters, not %d", MaxAgentRunLen, len(run))
	}
	for _, c := range []byte(run) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return bad("run", "%q: an agent run is named by letters, digits, '-' and '_'", run)
		}
	}
	return nil
}

// Validate checks an agent's goodbye.
func (b *AgentBye) Validate() error { return ValidAgentRun(b.Run) }

// Validate checks a WAL spool report's bounds; the server checks the
// names of clusters and files (plugin.ValidWALName).
func (r *WALSpoolReport) Validate() error {
	if len(r.Clusters) > MaxWALClusters {
		return bad("clusters", "%d clusters; at most %d", len(r.Clusters), MaxWALClusters)
	}
	seen := map[string]bool{}
	for i, c := range r.Clusters {
		f := func(name string) string { return fmt.Sprintf("clusters[%d].%s", i, name) }
		switch {
		case seen[c.Cluster]:
			return bad(f("cluster"), "%q twice", c.Cluster)
		case c.Files < 0:
			return bad(f("files"), "%d is negative", c.Files)
		case len(c.Cluster) > maxWALNameBytes || len(c.Oldest) > maxWALNameBytes || len(c.LastArchived) > maxWALNameBytes:
			return bad(f("cluster"), "names longer than %d bytes", maxWALNameBytes)
		case len(c.LastError) > MaxWALErrorLen:
			return bad(f("last_error"), "%d bytes; at most %d", len(c.LastError), MaxWALErrorLen)
		case (c.Files > 0) != (c.Oldest != ""):
			return bad(f("oldest"), "%q with %d files waiting", c.Oldest, c.Files)
		}
		for name, v := range map[string]float64{"oldest_seconds": c.OldestSeconds, "last_archived_seconds": c.LastArchivedSeconds,
			"last_error_seconds": c.LastErrorSeconds} {
			if !(v >= 0 && v < 100*365*24*3600) { // NaN fails too
				return bad(f(name), "%v is not an age in seconds", v)
			}
		}
		seen[c.Cluster] = true
	}
	return nil
}
