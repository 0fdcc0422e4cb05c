// Package service is Kura's service layer: every admin action of
// api.Service run in this process on a Kura home. The CLI without a server
// calls it directly; the server's handlers call it for the requests they
// receive; the CLI with a server calls apiclient.Client, which implements
// the same interface over HTTPS. One implementation of each action, one
// set of wire types, one error mapping: a verb prints the same and exits
// the same in both modes.
//
// Local never prints. It takes and returns the plain wire types of
// internal/api and converts the catalog's, the library's and the engine's
// records itself; its errors are *api.Error (Err), which keep the error
// they were made from for errors.Is.
package service

import (
	"errors"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape/s3tape"
)

// Local is api.Service on an open Kura home.
type Local struct {
	env *engine.Env
	// DriveJob, when set, names the job of this process that holds drive
	// n of library lib, or returns 0; the server sets it to its running
	// jobs. Admin actions on a drive (load, unload) refuse a held drive
	// and name the job.
	DriveJob func(lib string, n int) int64
	submit   func(api.JobRequest) ([]int64, error) // the server's job queue; nil without a server
	now      func() time.Time                      // the clock of schedules
}

var _ api.Service = (*Local)(nil)

// New returns the service of env; env stays the caller's to close.
//
// The jobs env runs from now on record the API's code and field of their
// errors (Classify).
func New(env *engine.Env) *Local {
	env.ClassifyError = Classify
	return &Local{env: env, now: time.Now}
}

// Classify is the API's code and field of err, as Err gives them.
func Classify(err error) (code, field string) {
	var ae *api.Error
	if errors.As(Err(err), &ae) {
		return ae.Code, ae.Field
	}
	return "", ""
}

// Env is the home the service runs on.
func (l *Local) Env() *engine.Env { return l.env }

// Err converts an error of the layers below to an *api.Error with the
// stable code a client acts on: invalid input is bad_request (naming the
// field), a name that names nothing is not_found (naming what), something
// that exists already or is in the wrong state is conflict, the rest is
// internal. nil stays nil; an *api.Error passes through.
func Err(err error) error {
	if err == nil {
		return nil
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return err
	}
	var fe *api.FieldError
	var nf *engine.NotFoundError
	var nt *library.NoTapeError
	switch {
	case errors.Is(err, engine.ErrVerify):
		return api.Wrap(api.CodeVerifyFailed, "", err)
	case errors.As(err, &fe):
		return api.Wrap(api.CodeBadRequest, fe.Field, err)
	case errors.As(err, &nf):
		return api.Wrap(api.CodeNotFound, nf.What, err)
	case errors.Is(err, engine.ErrUnregisteredLibrary):
		return api.Wrap(api.CodeConflict, api.FieldUnregisteredLibrary, err)
	case errors.As(err, &nt) && nt.Pool:
		return api.Wrap(api.CodeConflict, api.FieldNoPoolTape, err)
	case errors.Is(err, library.ErrNoTape):
		return api.Wrap(api.CodeConflict, api.FieldNoTape, err)
	case errors.Is(err, engine.ErrTapesOffline):
		return api.Wrap(api.CodeConflict, api.FieldTapesOffline, err)
	case errors.Is(err, engine.ErrNotComplete):
		return api.Wrap(api.CodeConflict, api.FieldNotComplete, err)
	case errors.Is(err, engine.ErrPolicyClient):
		return api.Wrap(api.CodeBadRequest, "client", err)
	case errors.Is(err, engine.ErrPolicySelection), errors.Is(err, engine.ErrNoSelectionSet):
		return api.Wrap(api.CodeBadRequest, "selection", err)
	case errors.Is(err, library.ErrNoDrive):
		return api.Wrap(api.CodeNotFound, "drive", err)
	case errors.Is(err, library.ErrUnknownTape):
		return api.Wrap(api.CodeNotFound, "tape", err)
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, catalog.ErrNotFound):
		return api.Wrap(api.CodeNotFound, "", err)
	case errors.Is(err, s3tape.ErrNoCredentials), errors.Is(err, s3tape.ErrNoBucket), errors.Is(err, s3tape.ErrAccessDenied):
		return api.Wrap(api.CodeBadRequest, api.FieldObjectStore, err)
	case errors.Is(err, api.ErrInvalid), errors.Is(err, catalog.ErrInvalid), errors.Is(err, engine.ErrBadOption),
		errors.Is(err, library.ErrInvalidConfig):
		return api.Wrap(api.CodeBadRequest, "", err)
	case errors.Is(err, catalog.ErrExists), errors.Is(err, library.ErrExists), errors.Is(err, library.ErrNotEmpty),
		errors.Is(err, library.ErrDriveBusy), errors.Is(err, library.ErrExported), errors.Is(err, library.ErrNotExported),
		errors.Is(err, library.ErrNoFreeSlot), errors.Is(err, library.ErrMailSlotsFull), errors.Is(err, ErrNotLoaded),
		errors.Is(err, engine.ErrTapeInUse), errors.Is(err, engine.ErrNoDataPath), errors.Is(err, library.ErrUnsupported),
		errors.Is(err, library.ErrNoDevice), errors.Is(err, library.ErrChanger), errors.Is(err, library.ErrTapeLibrary),
		errors.Is(err, engine.ErrSealed), errors.Is(err, engine.ErrNotSealable),
		errors.Is(err, engine.ErrOnNode), errors.Is(err, engine.ErrNodeOffline):
		return api.Wrap(api.CodeConflict, "", err)
	}
	return api.Wrap(api.CodeInternal, "", err)
}
