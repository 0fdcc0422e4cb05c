package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/catalogbackup"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

// RegisterLibrary adds an existing library folder to the catalog (after the
// catalog was lost, or to take over a library from another home).
func (e *Env) RegisterLibrary(dir string) (library.Changer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	lib, err := library.OpenChanger(abs, e.TapeHardware)
	if err != nil {
		return nil, err
	}
	name := lib.Config().Name
	if rec, err := e.Catalog.Library(name); err == nil {
		if rec.Dir != abs {
			if _, err := library.OpenChanger(rec.Dir, e.TapeHardware); err == nil {
				return nil, fmt.Errorf("a library named %q is already registered at %s", name, rec.Dir)
			}
			// Its recorded folder holds no library any more (moved, or a
			// catalog restored on another machine): take it here.
			if err := e.Catalog.MoveLibrary(name, abs); err != nil {
				return nil, err
			}
		}
	} else if errors.Is(err, catalog.ErrNotFound) {
		if err := e.Catalog.AddLibrary(catalog.Library{Name: name, Dir: abs, Created: e.now()}); err != nil {
			return nil, err
		}
	} else {
		return nil, err
	}
	return lib, e.registerTapes(lib)
}

// ScanFound is what a scan found on one tape file.
type ScanFound struct {
	File      int    `json:"file"`
	Kind      string `json:"kind"` // "data", "index", "catalog", "encrypted", "unknown", "incomplete"
	SavesetID int64  `json:"saveset_id,omitempty"`
	Part      int    `json:"part,omitempty"`  // 1-based, as in the tape file's tag
	Added     bool   `json:"added,omitempty"` // a catalog record was (re)built from it
	Note      string `json:"note,omitempty"`
}

// Scan reads a tape and rebuilds the catalog records of the savesets whose
// index it holds (Bacula's bscan): from the media alone. It records no job
// (a catalog restore scans with it); ScanTape is the job.
func (e *Env) Scan(barcode string) ([]ScanFound, error) {
	lib, err := e.ChangerOfTape(barcode)
	if err != nil {
		return nil, err
	}
	t, err := lib.OpenTape(barcode)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return e.scanTape(context.Background(), t, nil)
}

// ScanOptions say how a tape scan job runs.
type ScanOptions struct {
	Drive int // drive of the tape's library; 0 = any free drive
	// Job is the queued job row the scan runs as (a server's queue); nil
	// records a new one.
	Job *catalog.Job
}

// ScanRecord is what a tape scan job keeps as its result
// (catalog.Job.Result).
type ScanRecord struct {
	Barcode string      `json:"barcode"`
	Found   []ScanFound `json:"found"`
	Rebuilt int         `json:"rebuilt"` // saveset records rebuilt
}

// ScanTape is Scan as a job: it loads the tape into a drive of its library
// (waiting for one), reads it, and records the job with what it found. A
// scan cancelled stops before the next tape file; the records it rebuilt
// stay (each is whole).
func (e *Env) ScanTape(ctx context.Context, barcode string, opts ScanOptions) (*ScanRecord, error) {
	lib, err := e.ChangerOfTape(barcode)
	if err != nil {
		return nil, err
	}
	if err := checkDrive(lib, opts.Drive); err != nil {
		return nil, err
	}
	job, held, ctx, err := e.beginJob(ctx, opts.Job, catalog.KindScan, fmt.Sprintf("scan of tape %s (library %s)", barcode, lib.Config().Name))
	if err != nil {
		return nil, err
	}
	defer held.Close()
	phase := e.startPhase(job, "scan")
	rec := &ScanRecord{Barcode: barcode, Found: []ScanFound{}}
	runErr := func() error {
		// The drive is leased in the catalog like a backup's, so a server
		// and a CLI on one home never both count on it.
		drv, err := e.takeDrive(ctx, job, lib, opts.Drive)
		if err != nil {
			return err
		}
		defer drv.Release()
		t, err := drv.Load(barcode)
		if err != nil {
			return err
		}
		e.logf(job, "library %s, drive %d: tape %s", lib.Config().Name, drv.Number(), barcode)
		job.Tapes = []string{barcode}
		found, err := e.scanTape(ctx, t, phase)
		rec.Found = append(rec.Found, found...)
		return err
	}()
	for _, f := range rec.Found {
		if f.Added {
			rec.Rebuilt++
		}
	}
	e.logf(job, "%s read, %s rebuilt", units.Count(int64(len(rec.Found)), "tape file"), units.Count(int64(rec.Rebuilt), "saveset record"))
	return rec, e.endJob(job, runErr, jobEnd{phase: phase, result: rec})
}

// scanTape scans every tape file of t; phase (when not nil) counts the
// tape files and bytes read.
func (e *Env) scanTape(ctx context.Context, t tape.Device, phase *monitor.Phase) ([]ScanFound, error) {
	files, err := t.Files()
	if err != nil {
		return nil, err
	}
	var found []ScanFound
	var stopped error
	for _, fi := range files {
		if stopped = ctx.Err(); stopped != nil {
			break
		}
		f := ScanFound{File: fi.Number}
		if fi.Status != tape.FileComplete {
			f.Kind = "incomplete"
			f.Note = "an unfinished tape file (a job that did not complete); ignored"
			found = append(found, f)
			continue
		}
		if err := e.scanFile(t, fi, &f); err != nil {
			if f.Kind == "" {
				f.Kind = "unknown"
			}
			f.Note = err.Error()
		}
		found = append(found, f)
		if phase != nil {
			phase.Files.Add(1)
			phase.Source.Add(fi.Bytes)
			phase.Media.Add(fi.Bytes)
		}
	}
	// A failed saveset's data parts have no index to rebuild a record
	// from, but their ID is taken all the same.
	var top int64
	for _, f := range found {
		top = max(top, f.SavesetID)
	}
	if err := e.Catalog.ReserveSavesetIDs(top); err != nil {
		return found, err
	}
	return found, stopped
}

func (e *Env) scanFile(t tape.Device, fi tape.FileInfo, f *ScanFound) error {
	fr, err := t.Open(fi.Number)
	if err != nil {
		return err
	}
	defer fr.Close()
	head := make([]byte, 8)
	if _, err := io.ReadFull(fr, head); err != nil {
		if strings.HasPrefix(fi.Tag, catalogTagPrefix) {
			f.Kind = "catalog"
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("too short to be a saveset: %w", err)
		}
		return err
	}
	if m := binary.LittleEndian.Uint32(head); m&0xFFFFFFF0 == 0x184D2A50 {
		if _, err := fr.Seek(0, io.SeekStart); err != nil {
			return err
		}
		// A catalog backup has a label frame of its own kind.
		if cl, err := catalogbackup.ReadLabel(fr); err == nil {
			f.Kind = "catalog"
			f.Note = catalogBackupNote(cl)
			return nil
		} else if !errors.Is(err, catalogbackup.ErrNotBackup) {
			f.Kind = "catalog"
			return fmt.Errorf("a damaged catalog backup: %w", err)
		}
		if _, err := fr.Seek(0, io.SeekStart); err != nil {
			return err
		}
		l, err := stream.ReadLabelFrame(fr)
		if err != nil {
			return err
		}
		f.Kind, f.SavesetID, f.Part = "data", int64(l.SavesetID), l.Part+1
		return nil
	}
	if bytes.HasPrefix([]byte(seal.Magic), head) {
		// The data or the index of an encrypted saveset: only its
		// client's key tells which, and what it holds.
		f.Kind = "encrypted"
		f.Note = "an age file: the data or the index of an encrypted saveset (its client's key opens it); no record is rebuilt from it"
		return nil
	}
	if !bytes.HasPrefix(head, []byte("KURAIDX")) {
		return errors.New("not a Kura saveset or index")
	}
	// An index: copy it to a temporary file and read its meta.
	if _, err := fr.Seek(0, io.SeekStart); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(home.IndexDir(e.Home), "scan.*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := io.Copy(tmp, fr); err != nil {
		return err
	}
	r, err := index.OpenFile(tmp.Name())
	if err != nil {
		return err
	}
	var meta savesetMeta
	err = json.Unmarshal(r.Meta(), &meta)
	r.Close()
	if err != nil {
		return fmt.Errorf("index meta: %w", err)
	}
	ss := meta.Saveset
	f.Kind, f.SavesetID = "index", ss.ID
	ss.IndexPart = catalog.Part{Barcode: t.Label().Barcode, File: fi.Number, Bytes: fi.Bytes}
	ss.Status = "complete"
	ss.JobID = 0
	if old, err := e.Catalog.Saveset(ss.ID); err == nil {
		if old.Status != catalog.StatusIncomplete {
			f.Note = "already in the catalog"
			return nil
		}
		// Its process died after the index reached the tape (or it was
		// being written when the catalog was backed up): the tape says it
		// is complete.
		ss.JobID = old.JobID
		if err := e.Catalog.UpdateSaveset(&ss); err != nil {
			return err
		}
		f.Note = "was incomplete in the catalog; complete on tape"
	} else if err := e.Catalog.CreateSaveset(&ss); err != nil {
		return err
	}
	for _, p := range ss.Parts {
		if _, err := e.Catalog.TapeLibrary(p.Barcode); errors.Is(err, catalog.ErrNotFound) {
			f.Note = fmt.Sprintf("data also on tape %s, which this catalog does not know: register its library", p.Barcode)
		}
	}
	dst := filepath.Join(home.IndexDir(e.Home), fmt.Sprintf("%d.idx", ss.ID))
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := writeFileAtomic(dst, tmp); err != nil {
		return err
	}
	f.Added = true
	return nil
}
