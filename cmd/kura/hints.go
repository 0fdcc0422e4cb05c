package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/bench"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/restorer"
	"github.com/kura-backup/kura/internal/tape/s3tape"
)

// The words that tell a user which command to run next live here, in the
// CLI, and only here: the engine and the server say what is wrong (and,
// for a name that names nothing, what kind of thing it is), the CLI says
// where to look and what to run. Errors of this process are recognised by
// their sentinels (errors.Is, errors.As); errors of a server by their code
// and field (service.Err gives them). TestNoCommandWordsBelowTheCLI keeps
// such words out of internal/.

// seeAlso is where to look for each kind of thing a name can name.
var seeAlso = map[string]string{
	"saveset":   "kura savesets",
	"library":   "kura vtl list",
	"tape":      "kura tape list",
	"selection": "kura selection list",
	"policy":    "kura policy list",
	"client":    "kura client list",
	"job":       "kura jobs list",
	"copy":      "kura savesets --json",
}

// objectStoreHint follows an object store's refusal: where the credentials
// and the bucket come from.
const objectStoreHint = " (the credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE, of the process that opens the library — the server's for a server — and the bucket must exist; docs/operations.md, \"A library on S3\")"

// registerHint says how to register a library found in folder dir.
func registerHint(dir string) string {
	return fmt.Sprintf(": run `kura vtl register %s`, then `kura tape scan BARCODE` for each tape with files (docs/operations.md, \"Disaster recovery\")", dir)
}

// noTapeHint says how to get a writable tape (pool: one the pool accepts).
func noTapeHint(pool bool) string {
	if pool {
		return ": add tapes with `kura tape add` or let retention recycle some"
	}
	return ": add tapes with `kura tape add`"
}

const (
	savesetsHint = " (see `kura savesets`)"
	importHint   = "; bring them back with `kura tape import BARCODE`"
	tokenHint    = "; make a new one with `kura token create`"
)

// withHint is err's message with the words that say what to run next,
// when err is of a kind the user can act on, locally or from a server.
func withHint(err error) string {
	msg := err.Error()
	h := hint(err)
	if h == "" || strings.Contains(msg, "`kura ") {
		return msg // no hint, or a server of before the hints moved here
	}
	return msg + h
}

// hint is what withHint adds to err ("" for nothing).
func hint(err error) string {
	var (
		ae  *api.Error
		nf  *engine.NotFoundError
		ul  *engine.UnregisteredLibraryError
		nm  *engine.NoMatchError
		nss *engine.NoSelectionSetError
		nt  *library.NoTapeError
		nd  *bench.NoDataError
	)
	switch {
	case errors.As(err, &nf):
		return see(nf.What)
	case errors.As(err, &ul):
		return registerHint(ul.Dir)
	case errors.Is(err, engine.ErrNotComplete):
		return savesetsHint
	case errors.As(err, &nm):
		if slices.ContainsFunc(nm.Picks, func(k restorer.Pick) bool { return !k.Literal }) {
			return fmt.Sprintf(" (see `kura ls %d`; paths have no leading /)", nm.Saveset)
		}
		return fmt.Sprintf(" (see `kura ls %d`)", nm.Saveset) // --path takes one either way
	case errors.Is(err, engine.ErrTapesOffline):
		return importHint
	case errors.Is(err, engine.ErrNoCopyLibrary):
		return see("library")
	case errors.Is(err, engine.ErrPolicyClient):
		return see("client")
	case errors.Is(err, engine.ErrPolicySelection):
		return " (make one with `kura selection create`)"
	case errors.As(err, &nss):
		client := ""
		if nss.Client != "" {
			client = " --client " + nss.Client
		}
		return fmt.Sprintf(" (make one with `kura selection create%s %s PATH…`)", client, nss.Selection)
	case errors.As(err, &nt):
		return noTapeHint(nt.Pool)
	case errors.Is(err, agent.ErrNotEnrolled):
		return ": run `kura agent enroll --server URL --token TOKEN` first"
	case errors.As(err, &nd):
		return fmt.Sprintf(" (make the data with `kura bench gen --out %s`)", nd.Dir)
	case errors.Is(err, s3tape.ErrNoCredentials), errors.Is(err, s3tape.ErrNoBucket), errors.Is(err, s3tape.ErrAccessDenied):
		return objectStoreHint
	case errors.As(err, &ae):
		return remoteHint(ae)
	}
	return ""
}

// remoteHint is the hint for an error a server answered: by its code and
// the field service.Err gave it (a name or a folder the CLI cannot know
// stays a placeholder).
func remoteHint(ae *api.Error) string {
	switch ae.Code {
	case api.CodeNotFound:
		return see(ae.Field)
	case api.CodeTokenUsed, api.CodeTokenExpired:
		return tokenHint
	case api.CodeConflict:
		switch ae.Field {
		case api.FieldUnregisteredLibrary:
			return registerHint("DIR")
		case api.FieldNoTape:
			return noTapeHint(false)
		case api.FieldNoPoolTape:
			return noTapeHint(true)
		case api.FieldTapesOffline:
			return importHint
		case api.FieldNotComplete:
			return savesetsHint
		}
	case api.CodeBadRequest:
		if ae.Field == api.FieldObjectStore {
			return objectStoreHint
		}
	}
	return ""
}

// see is " (see `kura …`)" for a kind of thing, or "" for a kind with no
// listing.
func see(what string) string {
	if s, ok := seeAlso[what]; ok {
		return " (see `" + s + "`)"
	}
	return ""
}

// catalogNotes are a catalog restore's notes in words, with the commands
// that the notes asking the user to act need.
func catalogNotes(notes []engine.CatalogNote) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		switch n.Kind {
		case engine.NoteLostLibrary:
			out[i] = n.Text + ": bring its folder back and run `kura catalog restore --force --vtl-dir DIR` with every library folder, or `kura vtl register DIR`"
		case engine.NoteExportedTape:
			out[i] = fmt.Sprintf("tape %s is exported: import it, and scan it with `kura tape scan %s` if it was written after %s",
				n.Barcode, n.Barcode, n.Since.Local().Format("2006-01-02 15:04:05"))
		default:
			out[i] = n.Text
		}
	}
	return out
}

// jobErrorText is a finished job's error with the words that say what to
// run next, from the code and field the job recorded with it (a job run
// by a server, or by an earlier command, has only its text and kind).
func jobErrorText(j *api.Job) string {
	if j.Error == "" || j.ErrorCode == "" {
		return j.Error
	}
	return withHint(&api.Error{Code: j.ErrorCode, Field: j.ErrorField, Message: j.Error})
}

// verifyFailed reports whether a failed job failed because a verify found
// problems (exit 4): by its error code, or, for a job recorded before jobs
// kept one, by its text.
func verifyFailed(j *api.Job) bool {
	if j.ErrorCode != "" {
		return j.ErrorCode == api.CodeVerifyFailed
	}
	return strings.HasPrefix(j.Error, "verify") || strings.Contains(j.Error, engine.ErrVerify.Error())
}
