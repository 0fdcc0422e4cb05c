package server

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
)

// The jobs that run on the server alone, without an agent: verify, copy,
// prune, catalog backup, tape scan and tape erase. They are queued, run
// and cancelled like backups and restores; those that write or read a tape
// in a drive (copy, catalog, scan, erase) take a drive through the queue.

// serverOnly reports whether a job kind runs without an agent.
func serverOnly(kind string) bool {
	switch kind {
	case api.KindVerify, api.KindCopy, api.KindPrune, api.KindCatalog, api.KindScan, api.KindErase:
		return true
	}
	return false
}

// needsDrive reports whether a job kind takes a drive through the queue.
func needsDrive(kind string) bool {
	switch kind {
	case api.KindBackup, api.KindCopy, api.KindCatalog, api.KindScan, api.KindErase:
		return true
	}
	return false
}

// needsTape reports whether a job kind writes to a writable tape (the
// queue waits for one before it gives the drive).
func needsTape(kind string) bool {
	switch kind {
	case api.KindBackup, api.KindCopy, api.KindCatalog:
		return true
	}
	return false
}

// driveLibrary names the library whose drive a job takes: the tape's, for
// a scan or an erase.
func (s *Server) driveLibrary(req api.JobRequest) (string, error) {
	if req.Kind == api.KindScan || req.Kind == api.KindErase {
		lib, err := s.env.ChangerOfTape(req.Barcode)
		if err != nil {
			return "", err
		}
		return lib.Config().Name, nil
	}
	return req.Library, nil
}

// validateServerOnly checks what a server-only job names against the
// server's state.
func (s *Server) validateServerOnly(req *api.JobRequest) error {
	if req.Saveset != 0 {
		ss, err := s.env.Catalog.Saveset(req.Saveset)
		if errors.Is(err, catalog.ErrNotFound) {
			return service.Err(engine.Missing("saveset", "no saveset %d", req.Saveset))
		}
		if err != nil {
			return err
		}
		if req.Copy != 0 && !slices.ContainsFunc(ss.Copies, func(c catalog.Copy) bool { return c.Copy == req.Copy }) {
			return service.Err(engine.Missing("copy", "saveset %d has no copy %d", ss.ID, req.Copy))
		}
	}
	if !needsDrive(req.Kind) {
		return nil
	}
	name, err := s.driveLibrary(*req)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) || errors.Is(err, catalog.ErrNotFound) {
			return service.Err(err)
		}
		return badField("barcode", "%v", err)
	}
	lib, err := s.env.Changer(name)
	if errors.Is(err, engine.ErrNodeOffline) {
		return nil // the queue waits for the node, saying so
	}
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) || errors.Is(err, catalog.ErrNotFound) {
			return service.Err(err)
		}
		return badField("library", "%v", err)
	}
	if n := lib.Config().Drives; req.Drive > n {
		return badField("drive", "library %s has drives 1 to %d, not %d", lib.Config().Name, n, req.Drive)
	}
	return nil
}

// runServerOnly runs a server-only job in the engine, as the queued row j,
// in the drive the queue gave it.
func (s *Server) runServerOnly(ctx context.Context, j *catalog.Job, rj *runningJob) error {
	req, env := rj.req, s.jobEnv("")
	var err error
	switch req.Kind {
	case api.KindVerify:
		o := engine.VerifyOptions{Level: req.Level, Sample: req.Sample, Job: j}
		if req.Copy > 0 {
			_, err = env.VerifyCopy(ctx, req.Saveset, req.Copy, o)
		} else {
			_, err = env.Verify(ctx, req.Saveset, o)
		}
	case api.KindCopy:
		_, err = env.Copy(ctx, req.Saveset, engine.CopyOptions{Library: req.Library, Drive: rj.drive, Verify: req.Verify, Job: j})
	case api.KindPrune:
		_, err = env.Prune(ctx, engine.PruneOptions{Job: j})
	case api.KindCatalog:
		_, err = env.BackupCatalog(ctx, engine.CatalogBackupOptions{Library: rj.lib, Drive: rj.drive, Job: j})
	case api.KindScan:
		_, err = env.ScanTape(ctx, req.Barcode, engine.ScanOptions{Drive: rj.drive, Job: j})
	case api.KindErase:
		_, err = env.EraseTapeJob(ctx, req.Barcode, engine.EraseOptions{Force: req.Force, Drive: rj.drive, Job: j})
	}
	return err
}

// getPrunePlan answers what a prune would do now: a dry run is a query,
// not a job, and changes nothing.
func (s *Server) getPrunePlan(w http.ResponseWriter, r *http.Request) error {
	res, err := s.env.Prune(r.Context(), engine.PruneOptions{DryRun: true})
	if err != nil {
		return err
	}
	return writeJSON(w, res)
}
