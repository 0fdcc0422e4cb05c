package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
)

// Tape converts a tape of engine.Tapes.
func Tape(t engine.TapeInfo) api.Tape {
	out := api.Tape{Barcode: t.Barcode, Library: t.Library, Pool: t.Pool, Location: t.Location, Slot: t.Slot,
		Drive: t.Drive, MailSlot: t.MailSlot, State: string(t.State), MarkedFull: t.MarkedFull, UsedBytes: t.Used,
		CapacityBytes: t.Capacity, EarlyWarningBytes: t.EarlyWarning, Files: t.Files, Generation: t.Generation,
		Savesets: []int64{}, Error: t.Error}
	out.Savesets = append(out.Savesets, t.Savesets...)
	return out
}

// TapeLayout converts what a tape holds, as read from the medium.
func TapeLayout(l tape.Label, damage error, files []tape.FileInfo, filesErr error, used int64) api.TapeLayout {
	out := api.TapeLayout{Label: api.TapeLabel{Version: l.Version, Barcode: l.Barcode, Library: l.Library, BlockSize: l.BlockSize,
		Capacity: l.Capacity, EarlyWarning: l.EarlyWarning, Created: l.Created, Labelled: l.Labelled, Generation: l.Generation},
		Files: []api.TapeFile{}, UsedBytes: used}
	for _, f := range files {
		out.Files = append(out.Files, api.TapeFile{Number: f.Number, Status: string(f.Status), Bytes: f.Bytes, Blocks: f.Blocks,
			BlockSizeBytes: f.BlockSize, CRCTable: f.CRCTable, Written: f.Written, Tag: f.Tag})
	}
	if damage != nil {
		out.LabelDamage = damage.Error()
	}
	if filesErr != nil {
		out.FilesError = filesErr.Error()
	}
	return out
}

func (l *Local) Tapes(ctx context.Context, q api.TapeQuery) ([]api.Tape, error) {
	if q.Library == "" {
		// The default library is created on first use (or its folder,
		// left by a lost catalog, is reported).
		if _, err := l.env.Changer(""); err != nil {
			return nil, Err(err)
		}
	}
	all, err := l.tapes(q.Library)
	if err != nil || q.Pool == "" {
		return all, err
	}
	pool := q.Pool
	if pool == api.Scratch {
		pool = catalog.ScratchPool
	}
	out := []api.Tape{}
	for _, t := range all {
		if t.Pool == pool {
			out = append(out, t)
		}
	}
	return out, nil
}

// tapes lists the tapes of a library (or all) with those of barcodes
// first, or only those when barcodes is not empty.
func (l *Local) tapes(lib string, barcodes ...string) ([]api.Tape, error) {
	all, err := l.env.Tapes(lib)
	if err != nil {
		return nil, Err(err)
	}
	out := []api.Tape{}
	if len(barcodes) == 0 {
		for _, t := range all {
			out = append(out, Tape(t))
		}
		return out, nil
	}
	byCode := map[string]engine.TapeInfo{}
	for _, t := range all {
		byCode[t.Barcode] = t
	}
	for _, bc := range barcodes {
		t, ok := byCode[bc]
		if !ok {
			return nil, Err(engine.Missing("tape", "no tape %s", bc))
		}
		out = append(out, Tape(t))
	}
	return out, nil
}

func (l *Local) Tape(ctx context.Context, barcode string) (*api.Tape, error) {
	lib, err := l.env.Catalog.TapeLibrary(barcode)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Err(engine.Missing("tape", "no tape %s", barcode))
	}
	if err != nil {
		return nil, Err(err)
	}
	ts, err := l.tapes(lib, barcode)
	if err != nil {
		return nil, err
	}
	return &ts[0], nil
}

func (l *Local) TapeLayout(ctx context.Context, barcode string) (*api.TapeLayout, error) {
	lib, err := l.env.ChangerOfTape(barcode)
	if err != nil {
		return nil, Err(err)
	}
	t, err := lib.OpenTape(barcode)
	if err != nil {
		return nil, Err(err)
	}
	defer t.Close()
	files, ferr := t.Files()
	var damage error
	if lr, ok := t.(library.LabelReporter); ok {
		damage = lr.LabelDamage()
	}
	out := TapeLayout(t.Label(), damage, files, ferr, t.Used())
	return &out, nil
}

func (l *Local) AddTapes(ctx context.Context, lib string, req api.TapeAdd) ([]api.Tape, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	codes, err := l.env.AddTapes(lib, req.Count)
	if err != nil {
		return nil, Err(err)
	}
	if lib == "" {
		lib = engine.DefaultLibrary
	}
	return l.tapes(lib, codes...)
}

func (l *Local) ExportTape(ctx context.Context, barcode string) (*api.Tape, error) {
	lib, st, err := l.tapeStatus(barcode)
	if err != nil {
		return nil, Err(err)
	}
	if st.Drive != 0 {
		// Taken from its drive: not while a job holds that one.
		if err := l.driveHeld(lib.Config().Name, st.Drive); err != nil {
			return nil, Err(err)
		}
	}
	if err := lib.Export(barcode); err != nil {
		return nil, Err(err)
	}
	return l.Tape(ctx, barcode)
}

func (l *Local) ImportTape(ctx context.Context, barcode string) (*api.Tape, error) {
	if err := l.env.ImportTape(barcode); err != nil {
		return nil, Err(err)
	}
	return l.Tape(ctx, barcode)
}

func (l *Local) LabelTape(ctx context.Context, barcode string, req api.TapeLabelRequest) (*api.Tape, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	pool := req.Pool
	if pool == api.Scratch {
		pool = catalog.ScratchPool
	}
	if err := l.env.LabelTape(barcode, pool); err != nil {
		return nil, Err(err)
	}
	return l.Tape(ctx, barcode)
}

// ErrNotLoaded: unloading a tape that is in no drive.
var ErrNotLoaded = errors.New("tape is not in a drive")

// tapeStatus is a tape's place in its library.
// tapeStatus finds a tape's library and where the tape is in it.
func (l *Local) tapeStatus(barcode string) (library.Changer, library.TapeStatus, error) {
	lib, err := l.env.ChangerOfTape(barcode)
	if err != nil {
		return nil, library.TapeStatus{}, err
	}
	ts, err := lib.Tapes()
	if err != nil {
		return nil, library.TapeStatus{}, err
	}
	i := slices.IndexFunc(ts, func(t library.TapeStatus) bool { return t.Barcode == barcode })
	if i < 0 {
		return nil, library.TapeStatus{}, fmt.Errorf("library %s: tape %s: %w", lib.Config().Name, barcode, library.ErrUnknownTape)
	}
	return lib, ts[i], nil
}

func (l *Local) LoadTape(ctx context.Context, barcode string, req api.TapeLoad) (*api.Tape, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	lib, st, err := l.tapeStatus(barcode)
	if err != nil {
		return nil, Err(err)
	}
	if st.Drive != 0 && st.Drive != req.Drive {
		// Taken from the drive it is in: not while a job holds that one.
		if err := l.driveHeld(lib.Config().Name, st.Drive); err != nil {
			return nil, Err(err)
		}
	}
	d, release, err := l.holdDrive(lib, req.Drive)
	if err != nil {
		return nil, Err(err)
	}
	_, err = d.Load(barcode)
	if rerr := release(); err == nil {
		err = rerr
	}
	if err != nil {
		return nil, Err(err)
	}
	return l.Tape(ctx, barcode)
}

func (l *Local) UnloadTape(ctx context.Context, barcode string) (*api.Tape, error) {
	lib, st, err := l.tapeStatus(barcode)
	if err != nil {
		return nil, Err(err)
	}
	if st.Drive == 0 {
		return nil, Err(fmt.Errorf("cannot unload tape %s: it is in %s: %w", barcode, st.Location, ErrNotLoaded))
	}
	d, release, err := l.holdDrive(lib, st.Drive)
	if err != nil {
		return nil, Err(err)
	}
	err = d.Unload()
	if rerr := release(); err == nil {
		err = rerr
	}
	if err != nil {
		return nil, Err(err)
	}
	return l.Tape(ctx, barcode)
}

// DriveHeldError is library.ErrDriveBusy for a drive an admin action
// wanted: it names the job that holds the drive (JobID 0: no job, or
// none known).
type DriveHeldError struct {
	Library string
	Drive   int
	JobID   int64
	JobKind string
	Holder  string // the lease's holder; "" when only another process's lock is known
}

func (e *DriveHeldError) Error() string {
	what := fmt.Sprintf("drive %d of library %s is in use", e.Drive, e.Library)
	switch {
	case e.JobID != 0 && e.JobKind != "":
		return fmt.Sprintf("%s by job %d (%s)", what, e.JobID, e.JobKind)
	case e.JobID != 0:
		return fmt.Sprintf("%s by job %d", what, e.JobID)
	case e.Holder != "":
		return fmt.Sprintf("%s by %s", what, e.Holder)
	}
	return what + " by another process"
}

func (e *DriveHeldError) Is(target error) bool { return target == library.ErrDriveBusy }

// adminLease is how long an admin action holds a drive's lease at most;
// it releases it when done.
const adminLease = time.Minute

// driveHeld returns a *DriveHeldError when a job holds drive n of library
// lib — a live lease in the catalog, or a running job of this process
// (DriveJob) — and nil when none does.
func (l *Local) driveHeld(lib string, n int) error {
	leases, err := l.env.Catalog.LiveDriveLeases(l.env.Clock.Now())
	if err != nil {
		return err
	}
	for _, dl := range leases {
		if dl.Library != lib || dl.Drive != n {
			continue
		}
		held := &DriveHeldError{Library: lib, Drive: n, JobID: dl.JobID, Holder: dl.Holder}
		if dl.JobID != 0 {
			if j, err := l.env.Catalog.Job(dl.JobID); err == nil {
				held.JobKind = j.Kind
			}
		}
		return held
	}
	if l.DriveJob != nil {
		if id := l.DriveJob(lib, n); id != 0 {
			held := &DriveHeldError{Library: lib, Drive: n, JobID: id}
			if j, err := l.env.Catalog.Job(id); err == nil {
				held.JobKind = j.Kind
			}
			return held
		}
	}
	return nil
}

// holdDrive takes drive n of lib for an admin action, without waiting:
// its lease in the catalog (where jobs take theirs), then the drive's
// lock. A drive a job holds is refused with a *DriveHeldError naming the
// job. release gives both back.
func (l *Local) holdDrive(lib library.Changer, n int) (d library.Drive, release func() error, err error) {
	cfg := lib.Config()
	if n < 1 || n > cfg.Drives {
		return nil, nil, library.NoDrive(cfg.Name, n, cfg.Drives)
	}
	if err := l.driveHeld(cfg.Name, n); err != nil {
		return nil, nil, err
	}
	holder, err := adminHolder()
	if err != nil {
		return nil, nil, err
	}
	cat := l.env.Catalog
	if _, err := cat.AcquireDriveLease(cfg.Name, n, holder, 0, l.env.Clock.Now(), adminLease); err != nil {
		if errors.Is(err, catalog.ErrLeaseHeld) {
			if held := l.driveHeld(cfg.Name, n); held != nil {
				return nil, nil, held
			}
			return nil, nil, &DriveHeldError{Library: cfg.Name, Drive: n}
		}
		return nil, nil, err
	}
	dropLease := func() error {
		err := cat.ReleaseDriveLease(cfg.Name, n, holder, 0)
		if errors.Is(err, catalog.ErrLeaseLost) {
			return nil // it expired: nobody else can have the drive's lock while we hold it
		}
		return err
	}
	// A done context: Acquire tries the lock once and does not wait.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	d, err = lib.Acquire(now, n)
	if err != nil {
		_ = dropLease()
		if errors.Is(err, library.ErrDriveBusy) {
			return nil, nil, &DriveHeldError{Library: cfg.Name, Drive: n}
		}
		return nil, nil, err
	}
	return d, func() error {
		err := d.Release()
		if e := dropLease(); err == nil {
			err = e
		}
		return err
	}, nil
}

// adminHolder names one admin action of this process in a drive lease.
func adminHolder() (string, error) {
	host, _ := os.Hostname()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s:%d:admin-%s", host, os.Getpid(), hex.EncodeToString(b[:])), nil
}

// Drives lists the drives of one library, or of all.
func (l *Local) Drives(ctx context.Context, lib string) ([]api.Drive, error) {
	recs, err := l.env.Catalog.Libraries()
	if err != nil {
		return nil, Err(err)
	}
	if _, err := l.env.Catalog.Library(lib); lib != "" && errors.Is(err, catalog.ErrNotFound) {
		return nil, Err(engine.Missing("library", "no library named %q", lib))
	}
	out := []api.Drive{}
	for _, rec := range recs {
		if lib != "" && rec.Name != lib {
			continue
		}
		opened, err := l.env.ChangerOf(rec)
		if err != nil {
			return nil, Err(fmt.Errorf("library %s: %w", rec.Name, err))
		}
		ds, err := opened.Drives()
		if err != nil {
			return nil, Err(err)
		}
		for _, d := range ds {
			out = append(out, Drive(rec.Name, d))
		}
	}
	return out, nil
}

// SetDrive tunes drive n of a library.
func (l *Local) SetDrive(ctx context.Context, libName string, n int, req api.DriveUpdate) (*api.Drive, error) {
	if err := req.Validate(); err != nil {
		return nil, Err(err)
	}
	lib, err := l.env.Changer(libName)
	if err != nil {
		return nil, Err(err)
	}
	ds, err := lib.Drives()
	if err != nil {
		return nil, Err(err)
	}
	if n < 1 || n > len(ds) {
		return nil, Err(library.NoDrive(libName, n, len(ds)))
	}
	bs, buf := ds[n-1].BlockSize, ds[n-1].BufferSize
	if req.BlockSizeBytes != 0 {
		bs = req.BlockSizeBytes
	}
	if req.BufferSizeBytes != 0 {
		buf = req.BufferSizeBytes
	}
	if err := lib.SetDrive(n, bs, buf); err != nil {
		return nil, Err(err)
	}
	if ds, err = lib.Drives(); err != nil {
		return nil, Err(err)
	}
	d := Drive(lib.Config().Name, ds[n-1])
	return &d, nil
}
