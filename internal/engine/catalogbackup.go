package engine

// The catalog protects itself. BackupCatalog writes a consistent snapshot
// of the catalog as one self-describing tape file (package catalogbackup);
// RestoreCatalog finds the newest good one on the tapes of the library
// folders alone, installs it, and brings back the savesets written after
// it with a tape scan.
//
// Ordering of a catalog backup:
//
//  1. job row "running" (kind catalog);
//  2. the snapshot (VACUUM INTO, one read transaction: consistent while
//     other connections and processes write), into a temporary folder in
//     the home, then its digest and its compressed form;
//  3. the tape file, finished with its filemark, then read back and checked;
//  4. the setting last_catalog_backup, then the job row "succeeded".
//
// A crash before 3 ends leaves an incomplete tape file (truncated by the
// next append) and a temporary folder catalog-backup.*.tmp in the home
// (harmless; delete it). The snapshot holds its own job as "running"; a
// restore from it marks that job succeeded, since the tape file exists.
//
// Ordering of a restore: the candidate is read through its checks (tape
// block CRCs, zstd checksums, size and SHA-256) into a temporary file in
// the home, fsynced and opened as a catalog; only then is the current
// catalog closed and the new one renamed over it (the old one first
// hard-linked to catalog.db.replaced-TIME when it held anything), and the
// home folder fsynced.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/catalogbackup"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

// SettingLastCatalogBackup is the catalog setting that records where the
// last catalog backup went (JSON of CatalogBackupResult).
const SettingLastCatalogBackup = "last_catalog_backup"

// catalogTagPrefix starts the tag of every catalog backup tape file.
const catalogTagPrefix = "catalog backup"

// ErrCatalogExists: RestoreCatalog would replace a catalog that holds
// savesets or jobs, and Force was not given.
var ErrCatalogExists = errors.New("the home already has a catalog")

// ErrNoCatalogBackup: no readable catalog backup was found.
var ErrNoCatalogBackup = errors.New("no good catalog backup found")

// CatalogBackupOptions say where a catalog backup goes.
type CatalogBackupOptions struct {
	Library string // "" = the default library
	Drive   int    // 0 = any free drive
	// Job is the queued job row the backup runs as (a server's queue); nil
	// records a new one.
	Job *catalog.Job
}

// CatalogBackupResult says where a catalog backup is: the result of
// BackupCatalog, and the setting last_catalog_backup.
type CatalogBackupResult struct {
	JobID         int64     `json:"job_id"`
	Library       string    `json:"library"`
	Barcode       string    `json:"barcode"`
	File          int       `json:"file"`
	Created       time.Time `json:"created"`
	Savesets      int       `json:"savesets"`
	LastSavesetID int64     `json:"last_saveset_id"`
	SchemaVersion int       `json:"schema_version"`
	DatabaseBytes int64     `json:"database_bytes"`
	TapeBytes     int64     `json:"tape_bytes"`
	SHA256        string    `json:"sha256"`
}

// LastCatalogBackup returns where the last catalog backup went, or nil
// when there has been none.
func (e *Env) LastCatalogBackup() (*CatalogBackupResult, error) {
	v, err := e.Catalog.Setting(SettingLastCatalogBackup)
	if err != nil || v == "" {
		return nil, err
	}
	var r CatalogBackupResult
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("setting %s: %w", SettingLastCatalogBackup, err)
	}
	return &r, nil
}

// BackupCatalog writes a consistent snapshot of the catalog as one tape
// file on a writable tape of a library, in a drive of its own, and records
// it as a job. It is safe to run while backups run.
func (e *Env) BackupCatalog(ctx context.Context, opts CatalogBackupOptions) (*CatalogBackupResult, error) {
	lib, err := e.Changer(opts.Library)
	if err != nil {
		return nil, err
	}
	job, held, ctx, err := e.beginJob(ctx, opts.Job, catalog.KindCatalog, fmt.Sprintf("catalog backup to library %s", lib.Config().Name))
	if err != nil {
		return nil, err
	}
	defer held.Close()
	phase := e.startPhase(job, "catalog")
	rec, runErr := e.backupCatalog(ctx, lib, opts, job)
	if runErr == nil {
		// A job another process reclaimed records no catalog backup.
		runErr = e.stillHeld(job)
	}
	if runErr == nil {
		b, _ := json.Marshal(rec)
		runErr = e.Catalog.SetSetting(SettingLastCatalogBackup, string(b))
	}
	if runErr == nil {
		phase.Source.Add(rec.DatabaseBytes)
		phase.Media.Add(rec.TapeBytes)
		job.Tapes = []string{rec.Barcode}
		e.logf(job, "catalog of %s (%s) on tape %s, tape file %d (%s)", units.Count(int64(rec.Savesets), "saveset"),
			units.FormatSize(rec.DatabaseBytes), rec.Barcode, rec.File, units.FormatSize(rec.TapeBytes))
	}
	var result any
	if rec != nil {
		result = rec
	}
	if err := e.endJob(job, runErr, jobEnd{phase: phase, result: result}); err != nil {
		return nil, err
	}
	return rec, nil
}

func (e *Env) backupCatalog(ctx context.Context, lib library.Changer, opts CatalogBackupOptions, job *catalog.Job) (*CatalogBackupResult, error) {
	tmp, err := os.MkdirTemp(e.Home, "catalog-backup.*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	created := e.now()
	snap := filepath.Join(tmp, "catalog.db")
	if err := e.Catalog.Snapshot(snap); err != nil {
		return nil, err
	}
	label, err := snapshotLabel(snap)
	if err != nil {
		return nil, err
	}
	label.Created, label.JobID = created.UTC(), job.ID
	label.Host, _ = os.Hostname()
	db, err := os.Open(snap)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if label.Size, label.SHA256, err = catalogbackup.Digest(db); err != nil {
		return nil, err
	}
	// Compressed first, so that its size is known when a tape is chosen.
	packed, err := private.OpenFile(filepath.Join(tmp, "catalog.kura"), os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, err
	}
	defer packed.Close()
	if _, err := db.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	cw, err := catalogbackup.NewWriter(packed, label)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(cw, db); err != nil {
		return nil, err
	}
	if err := cw.Close(); err != nil {
		return nil, err
	}
	size, err := packed.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	e.logf(job, "snapshot: %s (last ID %d), schema version %d, %s, %s compressed, sha256 %s",
		units.Count(int64(label.Savesets), "saveset"), label.LastSavesetID, label.SchemaVersion, units.FormatSize(label.Size), units.FormatSize(size), label.SHA256)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	drv, err := e.takeDrive(ctx, job, lib, opts.Drive)
	if err != nil {
		return nil, err
	}
	defer drv.Release()
	// Like an ad-hoc backup, the catalog goes to tapes outside any pool.
	allow, err := e.poolFilter(catalog.ScratchPool)
	if err != nil {
		return nil, err
	}
	var (
		t       tape.Device
		barcode string
		full    []string
	)
	for {
		if t, barcode, err = drv.LoadWritableIf(allow, full...); err != nil {
			return nil, fmt.Errorf("no tape for the catalog backup: %w", err)
		}
		if err := e.knowTape(lib, barcode); err != nil {
			return nil, err
		}
		// It must fit before early warning, or the tape is full and the
		// next one is taken, as for a saveset's index; an empty tape takes
		// it in any case (up to its capacity).
		if t.Label().EarlyWarning-t.Used() >= size || t.Used() == 0 {
			break
		}
		if err := lib.MarkFull(barcode); err != nil {
			return nil, err
		}
		e.logf(job, "tape %s has no room for %s before its early-warning point: marked full", barcode, units.FormatSize(size))
		full = append(full, barcode)
	}
	e.logf(job, "library %s, drive %d: tape %s", lib.Config().Name, drv.Number(), barcode)
	fw, err := t.Append(fmt.Sprintf("%s %s", catalogTagPrefix, label.Created.Format(time.RFC3339)))
	if err != nil {
		return nil, err
	}
	if _, err := packed.Seek(0, io.SeekStart); err != nil {
		fw.Abort()
		return nil, err
	}
	if _, err := io.Copy(fw, packed); err != nil {
		fw.Abort()
		return nil, fmt.Errorf("writing the catalog backup to tape %s: %w", barcode, err)
	}
	info, err := fw.Finish()
	if err != nil {
		return nil, fmt.Errorf("writing the catalog backup to tape %s: %w", barcode, err)
	}
	// Read it back through every check a restore makes.
	if err := checkCatalogFile(t, info.Number); err != nil {
		return nil, fmt.Errorf("the catalog backup on tape %s, tape file %d does not read back: %w", barcode, info.Number, err)
	}
	return &CatalogBackupResult{JobID: job.ID, Library: lib.Config().Name, Barcode: barcode, File: info.Number,
		Created: label.Created, Savesets: label.Savesets, LastSavesetID: label.LastSavesetID, SchemaVersion: label.SchemaVersion,
		DatabaseBytes: label.Size, TapeBytes: info.Bytes, SHA256: label.SHA256}, nil
}

// snapshotLabel opens a snapshot as a catalog and describes it. The file
// stays a catalog that Open accepts (in WAL mode, as Open leaves it).
func snapshotLabel(path string) (catalogbackup.Label, error) {
	var l catalogbackup.Label
	c, err := catalog.Open(path)
	if err != nil {
		return l, fmt.Errorf("the catalog snapshot does not open: %w", err)
	}
	defer removeSidecars(path)
	defer c.Close()
	if l.SchemaVersion, err = c.SchemaVersion(); err != nil {
		return l, err
	}
	sets, err := c.Savesets(catalog.SavesetFilter{})
	if err != nil {
		return l, err
	}
	l.Savesets = len(sets)
	for _, s := range sets {
		l.LastSavesetID = max(l.LastSavesetID, s.ID)
	}
	libs, err := c.Libraries()
	if err != nil {
		return l, err
	}
	for _, lib := range libs {
		l.Libraries = append(l.Libraries, catalogbackup.Library{Name: lib.Name, Dir: lib.Dir})
	}
	return l, nil
}

// removeSidecars removes what SQLite leaves beside a database it has closed.
func removeSidecars(path string) {
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
}

// checkCatalogFile reads a catalog backup tape file to its end.
func checkCatalogFile(t tape.Device, n int) error {
	fr, err := t.Open(n)
	if err != nil {
		return err
	}
	defer fr.Close()
	r, err := catalogbackup.NewReader(fr)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	return err
}

func catalogBackupNote(l catalogbackup.Label) string {
	return fmt.Sprintf("catalog backup of %s (%s, last ID %d)",
		l.Created.Local().Format("2006-01-02 15:04:05"), units.Count(int64(l.Savesets), "saveset"), l.LastSavesetID)
}

// CatalogCopy is one catalog backup found on a tape.
type CatalogCopy struct {
	Library    string               `json:"library"`
	LibraryDir string               `json:"library_dir"`
	Barcode    string               `json:"barcode"`
	File       int                  `json:"file"`
	Written    time.Time            `json:"written"`         // the tape file's filemark
	Bytes      int64                `json:"bytes"`           // of the tape file
	Label      *catalogbackup.Label `json:"label,omitempty"` // nil when unreadable
	Error      string               `json:"error,omitempty"` // why it cannot be used
}

func (c CatalogCopy) created() time.Time {
	if c.Label != nil {
		return c.Label.Created
	}
	return c.Written
}

func (c CatalogCopy) where() string {
	return fmt.Sprintf("tape %s, tape file %d", c.Barcode, c.File)
}

// catalogLibraryDirs returns the library folders to search: the ones given,
// or every library in the home's vtl folder.
func (e *Env) catalogLibraryDirs(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		base := filepath.Join(e.Home, "vtl")
		ents, err := os.ReadDir(base)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, d := range ents {
			p := filepath.Join(base, d.Name())
			if _, err := os.Stat(filepath.Join(p, "library.json")); d.IsDir() && err == nil {
				dirs = append(dirs, p)
			}
		}
		if len(dirs) == 0 {
			return nil, fmt.Errorf("no library folder in %s: give the library folders with --vtl-dir", base)
		}
	}
	var out []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out, nil
}

// FindCatalogBackups lists the catalog backups on the tapes of library
// folders (none given: every library in the home's vtl folder), newest
// first, reading the media alone: it needs no catalog. A tape file tagged
// as a catalog backup whose label cannot be read is listed with its Error.
// An exported tape cannot be read; it is named in notes.
func (e *Env) FindCatalogBackups(dirs []string) (copies []CatalogCopy, notes []string, err error) {
	if dirs, err = e.catalogLibraryDirs(dirs); err != nil {
		return nil, nil, err
	}
	for _, dir := range dirs {
		lib, err := library.OpenChanger(dir, e.TapeHardware)
		if err == nil {
			var tapes []library.TapeStatus
			if tapes, err = lib.Tapes(); err == nil {
				copies, notes = findCatalogBackups(lib, tapes, copies, notes)
			}
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("library folder %s: %v", dir, err))
		}
	}
	sort.SliceStable(copies, func(i, j int) bool { return copies[i].created().After(copies[j].created()) })
	return copies, notes, nil
}

// findCatalogBackups adds the catalog backups on the tapes of one library.
func findCatalogBackups(lib library.Changer, tapes []library.TapeStatus, copies []CatalogCopy, notes []string) ([]CatalogCopy, []string) {
	name, dir := lib.Config().Name, lib.Config().Dir
	for _, ts := range tapes {
		if ts.MailSlot > 0 {
			notes = append(notes, fmt.Sprintf("tape %s of library %s is exported: import it to search it too", ts.Barcode, name))
			continue
		}
		t, err := lib.OpenTape(ts.Barcode)
		if err != nil {
			notes = append(notes, fmt.Sprintf("tape %s of library %s: %v", ts.Barcode, name, err))
			continue
		}
		files, err := t.Files()
		if err != nil {
			notes = append(notes, fmt.Sprintf("tape %s of library %s: %v", ts.Barcode, name, err))
		}
		for _, fi := range files {
			if fi.Status != tape.FileComplete {
				continue
			}
			c := CatalogCopy{Library: name, LibraryDir: dir, Barcode: ts.Barcode, File: fi.Number, Written: fi.Written, Bytes: fi.Bytes}
			l, err := readCatalogLabel(t, fi.Number)
			switch {
			case err == nil:
				c.Label = &l
			case errors.Is(err, catalogbackup.ErrNotBackup):
				continue
			case errors.Is(err, catalogbackup.ErrLabelDamaged) || errors.Is(err, catalogbackup.ErrUnsupported) ||
				strings.HasPrefix(fi.Tag, catalogTagPrefix):
				c.Error = err.Error()
			default:
				continue // another tape file whose first block is damaged
			}
			copies = append(copies, c)
		}
		t.Close()
	}
	return copies, notes
}

func readCatalogLabel(t tape.Device, n int) (catalogbackup.Label, error) {
	fr, err := t.Open(n)
	if err != nil {
		return catalogbackup.Label{}, err
	}
	defer fr.Close()
	return catalogbackup.ReadLabel(fr)
}

// CatalogRestoreOptions say which catalog backup to restore.
type CatalogRestoreOptions struct {
	// LibraryDirs are the library folders to search and to register; none:
	// every library in the home's vtl folder.
	LibraryDirs []string
	// Barcode and File pick one catalog backup (File 0: the newest on that
	// tape); none: the newest good one.
	Barcode string
	File    int
	// Force replaces a catalog that holds savesets or jobs (moved aside to
	// catalog.db.replaced-TIME, its index cache to index.replaced-TIME).
	Force bool
	// NoScan leaves the tapes written after the backup to `kura tape scan`
	// (listed in Rescan) instead of scanning them.
	NoScan bool
}

// CatalogRestoreResult says what RestoreCatalog did.
type CatalogRestoreResult struct {
	From     CatalogCopy   `json:"from"`
	Skipped  []CatalogCopy `json:"skipped,omitempty"`  // newer catalog backups that failed their checks
	Replaced string        `json:"replaced,omitempty"` // where the replaced catalog was moved
	// Scanned are the tapes written after the backup, scanned for the
	// savesets made since; Rebuilt the savesets that came back from them.
	Scanned []string `json:"scanned"`
	Rebuilt []int64  `json:"rebuilt"`
	// Rescan are the tapes to scan with `kura tape scan` (NoScan, or a
	// scan that failed).
	Rescan []string      `json:"rescan,omitempty"`
	Notes  []CatalogNote `json:"notes,omitempty"`
}

// CatalogNote is one thing a catalog restore has to say. Most are words
// only; a note of a Kind asks the user to act, and carries what the CLI
// needs to say how.
type CatalogNote struct {
	Text string `json:"text"`
	// Kind is "", NoteLostLibrary (the folder Dir of library Library is
	// gone) or NoteExportedTape (tape Barcode is exported; it holds
	// savesets the catalog lacks if it was written after Since).
	Kind    string    `json:"kind,omitempty"`
	Library string    `json:"library,omitempty"`
	Dir     string    `json:"dir,omitempty"`
	Barcode string    `json:"barcode,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// The kinds of CatalogNote that ask the user to act.
const (
	NoteLostLibrary  = "lost_library"
	NoteExportedTape = "exported_tape"
)

// plainNotes are notes of words only.
func plainNotes(texts []string) []CatalogNote {
	out := make([]CatalogNote, len(texts))
	for i, t := range texts {
		out[i] = CatalogNote{Text: t}
	}
	return out
}

// RestoreCatalog installs a catalog backup found on the tapes of library
// folders as the home's catalog: the newest one that passes every check
// (or the one asked for). The home's catalog must hold no savesets and no
// jobs (it was lost, and Open made a new, empty one), unless Force. Then
// the library folders are matched with the libraries the catalog records,
// and the tapes written after the backup are scanned for the savesets made
// since (unless NoScan). It must not run while another process uses the
// home (a running server): restore with the server stopped.
func (e *Env) RestoreCatalog(ctx context.Context, opts CatalogRestoreOptions) (*CatalogRestoreResult, error) {
	if opts.File != 0 && opts.Barcode == "" {
		return nil, errors.New("a tape file number needs the tape's barcode")
	}
	dirs, err := e.catalogLibraryDirs(opts.LibraryDirs)
	if err != nil {
		return nil, err
	}
	holds, err := e.catalogHolds()
	if err != nil {
		return nil, err
	}
	if holds != "" && !opts.Force {
		return nil, fmt.Errorf("%w holding %s in %s: restoring a catalog backup replaces it only with --force (it is kept as catalog.db.replaced-TIME)",
			ErrCatalogExists, holds, e.Home)
	}
	copies, notes, err := e.FindCatalogBackups(dirs)
	if err != nil {
		return nil, err
	}
	res := &CatalogRestoreResult{Notes: plainNotes(notes), Scanned: []string{}, Rebuilt: []int64{}}
	var cands []CatalogCopy
	for _, c := range copies {
		if opts.Barcode == "" || (c.Barcode == opts.Barcode && (opts.File == 0 || c.File == opts.File)) {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		what := "the tapes of " + strings.Join(dirs, ", ")
		if opts.Barcode != "" {
			what = "tape " + opts.Barcode
			if opts.File != 0 {
				what += fmt.Sprintf(", tape file %d", opts.File)
			}
		}
		if len(notes) > 0 {
			what += " (" + strings.Join(notes, "; ") + ")"
		}
		return nil, fmt.Errorf("%w: no catalog backup on %s", ErrNoCatalogBackup, what)
	}
	var tmp string
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.Label != nil {
			p, err := e.extractCatalog(c)
			if err == nil {
				tmp, res.From = p, c
				break
			}
			c.Error = err.Error()
		}
		res.Skipped = append(res.Skipped, c)
	}
	if tmp == "" {
		var why []string
		for _, c := range res.Skipped {
			why = append(why, c.where()+": "+c.Error)
		}
		return nil, fmt.Errorf("%w: %s", ErrNoCatalogBackup, strings.Join(why, "; "))
	}
	defer os.Remove(tmp)
	if err := e.installCatalog(tmp, holds != "", res); err != nil {
		return nil, err
	}
	if err := e.afterCatalogRestore(ctx, dirs, opts, res); err != nil {
		return res, err
	}
	return res, nil
}

// catalogHolds describes what the open catalog holds that a restore would
// lose ("" for nothing: no savesets, jobs, clients or policies; libraries
// and tapes come back from their folders).
func (e *Env) catalogHolds() (string, error) {
	sets, err := e.Catalog.Savesets(catalog.SavesetFilter{})
	if err != nil {
		return "", err
	}
	jobs, err := e.Catalog.Jobs(1)
	if err != nil {
		return "", err
	}
	clients, err := e.Catalog.Clients()
	if err != nil {
		return "", err
	}
	policies, err := e.Catalog.Policies()
	if err != nil {
		return "", err
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{len(sets), "savesets"}, {len(jobs), "job history"}, {len(clients), "clients"}, {len(policies), "policies"}} {
		if p.n > 0 {
			parts = append(parts, p.what)
		}
	}
	if len(sets) > 0 {
		parts[0] = units.Count(int64(len(sets)), "saveset")
	}
	return strings.Join(parts, ", "), nil
}

// extractCatalog reads a catalog backup through its checks into a
// temporary file in the home, fsynced, and opens it as a catalog.
func (e *Env) extractCatalog(c CatalogCopy) (string, error) {
	lib, err := library.OpenChanger(c.LibraryDir, e.TapeHardware)
	if err != nil {
		return "", err
	}
	t, err := lib.OpenTape(c.Barcode)
	if err != nil {
		return "", err
	}
	defer t.Close()
	fr, err := t.Open(c.File)
	if err != nil {
		return "", err
	}
	defer fr.Close()
	r, err := catalogbackup.NewReader(fr)
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := os.CreateTemp(e.Home, "catalog.db.restore-*.tmp")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
			removeSidecars(f.Name())
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	cat, err := catalog.Open(f.Name())
	if err != nil {
		return "", fmt.Errorf("not a catalog this program can use: %w", err)
	}
	if err := cat.Close(); err != nil {
		return "", err
	}
	removeSidecars(f.Name())
	ok = true
	return f.Name(), nil
}

// installCatalog puts the restored catalog in place of the open one and
// reopens it.
func (e *Env) installCatalog(tmp string, keepOld bool, res *CatalogRestoreResult) error {
	if e.Catalog.Dialect() != "sqlite" {
		return e.installCatalogInto(tmp, keepOld, res)
	}
	path := home.CatalogPath(e.Home)
	if err := e.Catalog.Close(); err != nil {
		return err
	}
	reopen := func() error {
		c, err := catalog.Open(path)
		if err != nil {
			return fmt.Errorf("reopening the catalog: %w", err)
		}
		jobs, err := job.NewRegistry(c, e.Jobs.Options())
		if err != nil {
			c.Close()
			return err
		}
		e.Catalog, e.Jobs = c, jobs
		return nil
	}
	// The last connection to close removes the write-ahead log; one left
	// behind means another process has the catalog open.
	if _, err := os.Stat(path + "-wal"); err == nil {
		if rerr := reopen(); rerr != nil {
			return rerr
		}
		return fmt.Errorf("the catalog %s is open in another process (a running kura server?): stop it, then restore", path)
	}
	os.Remove(path + "-shm")
	if keepOld {
		stamp := e.replacedStamp()
		res.Replaced = path + ".replaced-" + stamp
		if err := os.Link(path, res.Replaced); err != nil {
			if rerr := reopen(); rerr != nil {
				return rerr
			}
			return fmt.Errorf("keeping the old catalog: %w", err)
		}
		// Its cached indexes may be of savesets the restored catalog numbers
		// differently: they come back from tape when needed.
		idx := home.IndexDir(e.Home)
		if err := os.Rename(idx, idx+".replaced-"+stamp); err != nil && !errors.Is(err, os.ErrNotExist) {
			if rerr := reopen(); rerr != nil {
				return rerr
			}
			return fmt.Errorf("moving the index cache aside: %w", err)
		}
		if err := private.MkdirAll(idx); err != nil {
			return err
		}
		res.Notes = append(res.Notes, CatalogNote{Text: fmt.Sprintf("the replaced catalog is %s, its index cache %s", res.Replaced, idx+".replaced-"+stamp)})
	}
	if err := os.Rename(tmp, path); err != nil {
		if rerr := reopen(); rerr != nil {
			return rerr
		}
		return err
	}
	if err := fsyncDir(e.Home); err != nil {
		return err
	}
	return reopen()
}

// replacedStamp is the suffix, .replaced-STAMP, under which a restore keeps
// the catalog and index cache it replaces: the time, made unique.
func (e *Env) replacedStamp() string {
	path := home.CatalogPath(e.Home)
	stamp := e.now().UTC().Format("20060102T150405Z")
	for i := 2; ; i++ {
		_, err1 := os.Lstat(path + ".replaced-" + stamp)
		_, err2 := os.Lstat(home.IndexDir(e.Home) + ".replaced-" + stamp)
		if errors.Is(err1, os.ErrNotExist) && errors.Is(err2, os.ErrNotExist) {
			return stamp
		}
		stamp = fmt.Sprintf("%s.%d", e.now().UTC().Format("20060102T150405Z"), i)
	}
}

// installCatalogInto restores the catalog backup tmp (a SQLite snapshot)
// into a catalog that is not a file in the home (PostgreSQL): its records
// are replaced by the backup's in one transaction. The replaced ones are
// first kept as a SQLite snapshot, catalog.db.replaced-TIME in the home.
func (e *Env) installCatalogInto(tmp string, keepOld bool, res *CatalogRestoreResult) error {
	src, err := catalog.Open(tmp)
	if err != nil {
		return err
	}
	defer func() {
		src.Close()
		removeSidecars(tmp)
	}()
	if keepOld {
		stamp, path := e.replacedStamp(), home.CatalogPath(e.Home)
		res.Replaced = path + ".replaced-" + stamp
		if err := e.Catalog.Snapshot(res.Replaced); err != nil {
			return fmt.Errorf("keeping the old catalog: %w", err)
		}
		idx := home.IndexDir(e.Home)
		if err := os.Rename(idx, idx+".replaced-"+stamp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("moving the index cache aside: %w", err)
		}
		if err := private.MkdirAll(idx); err != nil {
			return err
		}
		res.Notes = append(res.Notes, CatalogNote{Text: fmt.Sprintf("the replaced catalog is %s (a SQLite copy of %s), its index cache %s", res.Replaced, e.Catalog, idx+".replaced-"+stamp)})
	}
	if _, err := e.Catalog.ReplaceWith(src); err != nil {
		return err
	}
	return nil
}

// afterCatalogRestore matches the library folders with the restored
// catalog, closes the catalog backup's own job, and brings back the
// savesets written after the backup.
func (e *Env) afterCatalogRestore(ctx context.Context, dirs []string, opts CatalogRestoreOptions, res *CatalogRestoreResult) error {
	from := res.From
	note := func(format string, args ...any) {
		res.Notes = append(res.Notes, CatalogNote{Text: fmt.Sprintf(format, args...)})
	}

	// The snapshot holds its own job as running: the tape file says it
	// succeeded.
	if job, err := e.Catalog.Job(from.Label.JobID); err == nil && job.State == catalog.StateRunning && job.Kind == catalog.KindCatalog {
		job.State, job.Finished = catalog.StateSucceeded, from.Written
		job.Tapes, job.SourceBytes, job.MediaBytes = []string{from.Barcode}, from.Label.Size, from.Bytes
		e.logf(job, "completed: on tape %s, tape file %d (this is the catalog backup that was restored)", from.Barcode, from.File)
		// Its lease, as the snapshot has it, is released with the end.
		save := e.Catalog.UpdateJob
		if l, err := e.Catalog.JobLease(job.ID); err == nil {
			save = func(j *catalog.Job) error { return e.Catalog.FinishLeasedJob(j, l.Holder) }
		}
		if err := save(job); err != nil {
			return err
		}
	}
	rec := CatalogBackupResult{JobID: from.Label.JobID, Library: from.Library, Barcode: from.Barcode, File: from.File,
		Created: from.Label.Created, Savesets: from.Label.Savesets, LastSavesetID: from.Label.LastSavesetID,
		SchemaVersion: from.Label.SchemaVersion, DatabaseBytes: from.Label.Size, TapeBytes: from.Bytes, SHA256: from.Label.SHA256}
	b, _ := json.Marshal(rec)
	if err := e.Catalog.SetSetting(SettingLastCatalogBackup, string(b)); err != nil {
		return err
	}

	// The library folders found here replace the ones the catalog recorded
	// (the home may be new, or the folders moved); libraries made after the
	// backup are registered; tapes added after it too.
	for _, dir := range dirs {
		lib, err := library.OpenChanger(dir, e.TapeHardware)
		if err != nil {
			note("library folder %s: %v", dir, err)
			continue
		}
		name := lib.Config().Name
		rec, err := e.Catalog.Library(name)
		switch {
		case errors.Is(err, catalog.ErrNotFound):
			if err := e.Catalog.AddLibrary(catalog.Library{Name: name, Dir: dir, Created: e.now()}); err != nil {
				return err
			}
			note("library %s (%s) is newer than the catalog backup: registered", name, dir)
		case err != nil:
			return err
		case rec.Dir != dir:
			if err := e.Catalog.MoveLibrary(name, dir); err != nil {
				return err
			}
			note("library %s: now in %s (the catalog backup had %s)", name, dir, rec.Dir)
		}
	}
	libs, err := e.Catalog.Libraries()
	if err != nil {
		return err
	}
	var open []library.Changer
	for _, rec := range libs {
		if rec.Node != "" {
			// On a storage node: reached through it (Nodes), never as a
			// folder of this machine.
			lib, err := e.ChangerOf(rec)
			if err != nil {
				note("library %s: %v; its tapes are not scanned", rec.Name, err)
				continue
			}
			if err := e.registerTapes(lib); err != nil {
				note("library %s: %v", rec.Name, err)
			}
			open = append(open, lib)
			continue
		}
		lib, err := library.OpenChanger(rec.Dir, e.TapeHardware)
		if err != nil {
			res.Notes = append(res.Notes, CatalogNote{Text: fmt.Sprintf("library %s is not in %s", rec.Name, rec.Dir),
				Kind: NoteLostLibrary, Library: rec.Name, Dir: rec.Dir})
			continue
		}
		if err := e.registerTapes(lib); err != nil {
			note("library %s: %v", rec.Name, err)
		}
		open = append(open, lib)
	}

	// Jobs that were running when the snapshot was taken ran on the
	// catalog this one replaced: whatever their processes do now, they
	// never write here again.
	if _, err := e.Catalog.ReclaimJobs(e.Jobs.Options().Clock.Now(), func(string) string {
		return "ran on the catalog that the restore replaced"
	}); err != nil {
		return err
	}

	// Savesets made after the snapshot are on tape files written after
	// it. The filemark's clock is the tape's, the label's the job's: take
	// the earlier of the two.
	since := from.Label.Created
	if from.Written.Before(since) {
		since = from.Written
	}
	var newer []string
	for _, lib := range open {
		tapes, err := lib.Tapes()
		if err != nil {
			note("library %s: %v", lib.Config().Name, err)
			continue
		}
		for _, ts := range tapes {
			if ts.MailSlot > 0 {
				res.Notes = append(res.Notes, CatalogNote{
					Text: fmt.Sprintf("tape %s is exported: import it, and scan it if it was written after %s",
						ts.Barcode, from.Label.Created.Local().Format("2006-01-02 15:04:05")),
					Kind: NoteExportedTape, Barcode: ts.Barcode, Since: from.Label.Created})
				continue
			}
			t, err := lib.OpenTape(ts.Barcode)
			if err != nil {
				note("tape %s: %v", ts.Barcode, err)
				continue
			}
			files, err := t.Files()
			t.Close()
			if err != nil {
				note("tape %s: %v", ts.Barcode, err)
			}
			for _, fi := range files {
				if fi.Status == tape.FileComplete && !fi.Written.Before(since) && !strings.HasPrefix(fi.Tag, catalogTagPrefix) {
					newer = append(newer, ts.Barcode)
					break
				}
			}
		}
	}
	if opts.NoScan {
		res.Rescan = newer
		return nil
	}
	for _, bc := range newer {
		if err := ctx.Err(); err != nil {
			res.Rescan = append(res.Rescan, bc)
			continue
		}
		found, err := e.Scan(bc)
		if err != nil {
			note("scanning tape %s: %v", bc, err)
			res.Rescan = append(res.Rescan, bc)
			continue
		}
		res.Scanned = append(res.Scanned, bc)
		for _, f := range found {
			if f.Added {
				res.Rebuilt = append(res.Rebuilt, f.SavesetID)
			}
		}
	}
	slices.Sort(res.Rebuilt)
	return ctx.Err()
}
