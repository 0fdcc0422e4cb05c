package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/units"
)

// liveSavesets returns the unexpired savesets that have data or an index
// on a tape, or in a library when barcode is "": complete ones (restorable)
// and running ones (being written). Failed and incomplete savesets hold
// nothing that can be restored.
func (e *Env) liveSavesets(lib, barcode string) ([]*catalog.Saveset, error) {
	sets, err := e.Catalog.Savesets(catalog.SavesetFilter{Library: lib, Barcode: barcode,
		Statuses: []string{catalog.StatusComplete, catalog.StatusRunning}})
	if err != nil {
		return nil, err
	}
	var live []*catalog.Saveset
	for _, s := range sets {
		if !s.Expired {
			live = append(live, s)
		}
	}
	return live, nil
}

// RemoveLibrary deletes a library and its tapes. It refuses while any
// unexpired saveset lives on it.
func (e *Env) RemoveLibrary(name string) error {
	c, err := e.Changer(name)
	if err != nil {
		return err
	}
	// A folder or S3 library deletes its tapes; a tape library forgets
	// its state, its cartridges stay in the changer.
	lib, ok := c.(interface {
		library.Changer
		Remove() error
	})
	if !ok {
		return fmt.Errorf("removing library %s: %w", name, library.ErrUnsupported)
	}
	live, err := e.liveSavesets(name, "")
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return fmt.Errorf("library %s holds %s (first: %d); expire or erase them first", name, units.Count(int64(len(live)), "unexpired saveset"), live[0].ID)
	}
	// Copies of savesets on it count too: they may be the only copy online.
	all, err := e.liveSavesets("", "")
	if err != nil {
		return err
	}
	for _, s := range all {
		for _, c := range s.Copies {
			if c.Library == name {
				return fmt.Errorf("library %s holds copy %d of saveset %d; expire or erase it first", name, c.Copy, s.ID)
			}
		}
	}
	tapes, _ := lib.Tapes()
	if err := lib.Remove(); err != nil {
		return err
	}
	for _, t := range tapes {
		_ = e.Catalog.RemoveTape(t.Barcode)
	}
	return e.Catalog.RemoveLibrary(name)
}

// EraseTape relabels a tape: its data is gone. It refuses while the tape
// holds unexpired savesets, unless force, which expires them first (they
// can no longer be restored).
func (e *Env) EraseTape(barcode string, force bool) ([]int64, error) {
	lib, err := e.ChangerOfTape(barcode)
	if err != nil {
		return nil, err
	}
	live, err := e.liveSavesets("", barcode)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, s := range live {
		ids = append(ids, s.ID)
	}
	if len(live) > 0 && !force {
		return ids, fmt.Errorf("tape %s holds unexpired savesets %v; use --force to erase them anyway", barcode, ids)
	}
	for _, s := range live {
		if kept, dropped := withoutCopiesOn(s, barcode); len(dropped) > 0 && !onTape(s.Parts, s.IndexPart, barcode) {
			// Only copies of it are on this tape: the saveset stays, those
			// copies go.
			s.Copies = kept
			if err := e.Catalog.UpdateSaveset(s); err != nil {
				return ids, err
			}
			for _, n := range dropped {
				_ = os.Remove(filepath.Join(home.IndexDir(e.Home), fmt.Sprintf("%d.copy%d.idx", s.ID, n)))
			}
			continue
		}
		s.Expired = true
		if err := e.Catalog.UpdateSaveset(s); err != nil {
			return ids, err
		}
		_ = os.Remove(filepath.Join(home.IndexDir(e.Home), fmt.Sprintf("%d.idx", s.ID)))
	}
	return ids, lib.Erase(barcode)
}

// EraseOptions say how a tape erase job runs.
type EraseOptions struct {
	Force bool // erase even while unexpired savesets are on it (they are expired)
	Drive int  // drive of the tape's library; 0 = any free drive
	// Job is the queued job row the erase runs as (a server's queue); nil
	// records a new one.
	Job *catalog.Job
}

// EraseRecord is what a tape erase job keeps as its result
// (catalog.Job.Result).
type EraseRecord struct {
	Barcode string    `json:"barcode"`
	Erased  bool      `json:"erased"`
	Expired []int64   `json:"expired_savesets"` // savesets expired by --force (or those refusing without it)
	Tape    *TapeInfo `json:"tape,omitempty"`   // the tape as it is after the erase
}

// EraseTapeJob is EraseTape as a job: it takes a drive of the tape's
// library (waiting for one, as relabelling a real tape needs the tape in a
// drive), checks that the tape is in no drive in use, and erases it. An
// erase cancelled before it has the drive erases nothing.
func (e *Env) EraseTapeJob(ctx context.Context, barcode string, opts EraseOptions) (*EraseRecord, error) {
	lib, err := e.ChangerOfTape(barcode)
	if err != nil {
		return nil, err
	}
	if err := checkDrive(lib, opts.Drive); err != nil {
		return nil, err
	}
	job, held, ctx, err := e.beginJob(ctx, opts.Job, catalog.KindErase, fmt.Sprintf("erase of tape %s (library %s)", barcode, lib.Config().Name))
	if err != nil {
		return nil, err
	}
	defer held.Close()
	phase := e.startPhase(job, "erase")
	rec := &EraseRecord{Barcode: barcode, Expired: []int64{}}
	runErr := func() error {
		// The drive is leased in the catalog like a backup's, so a server
		// and a CLI on one home never both count on it.
		drv, err := e.takeDrive(ctx, job, lib, opts.Drive)
		if err != nil {
			return err
		}
		defer drv.Release()
		// Through this drive: a tape in a drive someone uses is refused,
		// one left in an idle drive is taken from it.
		if _, err := drv.Load(barcode); err != nil {
			return err
		}
		if err := drv.Unload(); err != nil {
			return err
		}
		if err := canceled(ctx); err != nil {
			return err
		}
		e.logf(job, "library %s, drive %d: tape %s", lib.Config().Name, drv.Number(), barcode)
		job.Tapes = []string{barcode}
		ids, err := e.EraseTape(barcode, opts.Force)
		if ids != nil {
			rec.Expired = ids
		}
		if err != nil {
			return err
		}
		rec.Erased = true
		phase.Files.Add(1)
		if tapes, err := e.Tapes(lib.Config().Name); err == nil {
			for i := range tapes {
				if tapes[i].Barcode == barcode {
					rec.Tape = &tapes[i]
				}
			}
		}
		if len(ids) > 0 {
			e.logf(job, "savesets %v expired", ids)
		}
		return nil
	}()
	return rec, e.endJob(job, runErr, jobEnd{phase: phase, result: rec})
}

// TapeInfo is a tape with what the catalog knows of it.
type TapeInfo struct {
	library.TapeStatus
	Library  string  `json:"library"`
	Savesets []int64 `json:"savesets"`
	Pool     string  `json:"pool"` // "" is scratch
}

// Tapes lists the tapes of one library, or of all.
func (e *Env) Tapes(libName string) ([]TapeInfo, error) {
	libs, err := e.Catalog.Libraries()
	if err != nil {
		return nil, err
	}
	if libName != "" {
		rec, err := e.Catalog.Library(libName)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, Missing("library", "no library named %q", libName)
		}
		if err != nil {
			return nil, err
		}
		libs = []catalog.Library{rec}
	}
	pools, err := e.Catalog.TapePools()
	if err != nil {
		return nil, err
	}
	live, err := e.Catalog.LiveSavesetsByTape()
	if err != nil {
		return nil, err
	}
	var out []TapeInfo
	for _, rec := range libs {
		lib, err := e.ChangerOf(rec)
		if err != nil {
			return nil, fmt.Errorf("library %s: %w", rec.Name, err)
		}
		tapes, err := lib.Tapes()
		if err != nil {
			return nil, err
		}
		for _, t := range tapes {
			ti := TapeInfo{TapeStatus: t, Library: rec.Name, Savesets: []int64{}, Pool: pools[t.Barcode]}
			ti.Savesets = append(ti.Savesets, live[t.Barcode]...)
			out = append(out, ti)
		}
	}
	return out, nil
}

// onTape reports whether any of parts, or index, is on the tape.
func onTape(parts []catalog.Part, index catalog.Part, barcode string) bool {
	if index.Barcode == barcode {
		return true
	}
	for _, p := range parts {
		if p.Barcode == barcode {
			return true
		}
	}
	return false
}

// withoutCopiesOn splits a saveset's copies into those not on the tape and
// the numbers of those that are.
func withoutCopiesOn(s *catalog.Saveset, barcode string) (kept []catalog.Copy, dropped []int) {
	for _, c := range s.Copies {
		if onTape(c.Parts, c.IndexPart, barcode) {
			dropped = append(dropped, c.Copy)
		} else {
			kept = append(kept, c)
		}
	}
	return kept, dropped
}
