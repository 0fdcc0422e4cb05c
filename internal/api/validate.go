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
	if err := rules.ClientName(r.Client); err != nil {
		return bad("client", "%v", err)
	}
	if r.Stream != 0 {
		return bad("stream", "is set by the server for each part of a split backup; ask for streams instead")
	}
	if r.BWLimit < 0 {
		return bad("bwlimit", "must not be negative")
	}
	switch r.Kind {
	case KindBackup:
		if len(r.Paths) == 0 && r.Selection == "" {
			return bad("paths", "a backup needs paths or a selection")
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
		switch {
		case r.To == "" && !r.InPlace:
			return bad("to", "say where to restore: to (a folder on the client), or in_place to write over the original places")
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
		switch r.Overwrite {
		case "", rules.OverwriteNever, rules.OverwriteOlder, rules.OverwriteAlways:
		default:
			return bad("overwrite", "unknown overwrite policy %q (never, older or always)", r.Overwrite)
		}
	default:
		return bad("kind", "unknown job kind %q (backup or restore; verify runs through the console)", r.Kind)
	}
	return nil
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
	case "", rules.LevelFull, rules.LevelDiff, rules.LevelIncr:
		return nil
	}
	return bad("level", "unknown level %q (full, diff or incr)", p.Level)
}

// Validate checks a console request.
func (c *ConsoleRequest) Validate() error {
	if c.Client != "" {
		if err := rules.ClientName(c.Client); err != nil {
			return bad("client", "%v", err)
		}
	}
	return nil
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
