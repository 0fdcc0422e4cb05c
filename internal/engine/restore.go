package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/units"
)

// Overwrite policies of a restore.
const (
	OverwriteNever  = "never"
	OverwriteOlder  = "older"
	OverwriteAlways = "always"
)

// RestoreOptions say what to restore and where.
type RestoreOptions struct {
	SavesetID int64     // the saveset whose moment to restore (0: see Latest/At)
	Latest    bool      // the newest complete saveset (of Selection, if given)
	Selection string    // with Latest or At: which selection set
	At        time.Time // the newest complete saveset made at or before this time
	To        string    // target folder; exactly one of To and InPlace
	InPlace   bool      // restore to the original places ("/"), over what is there
	Includes  []string  // paths or globs; empty = everything
	Overwrite string    // never, older, always (default)
	Sync      bool      // wait until the restored files are on disk (one syncfs at the end)
}

// ErrRestoreTarget: a restore says neither where to write (To) nor that it
// may write over the original places (InPlace), or says both. Nothing is
// written over live files unless asked for.
var ErrRestoreTarget = errors.New("say where to restore: --to DIR, or --in-place to write over the original places")

// restoreTarget is the folder a restore writes into, or ErrRestoreTarget.
func restoreTarget(opts RestoreOptions) (string, error) {
	switch {
	case opts.InPlace && opts.To != "":
		return "", fmt.Errorf("%w (not both)", ErrRestoreTarget)
	case opts.InPlace:
		return "/", nil
	case opts.To == "":
		return "", ErrRestoreTarget
	}
	return opts.To, nil
}

// ChooseSaveset finds the saveset a restore means.
func (e *Env) ChooseSaveset(opts RestoreOptions) (*catalog.Saveset, error) {
	switch {
	case opts.SavesetID != 0:
		ss, err := e.Catalog.Saveset(opts.SavesetID)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, NotFound("no saveset %d (see `kura savesets`)", opts.SavesetID)
		}
		if err != nil {
			return nil, err
		}
		if ss.Expired {
			return nil, fmt.Errorf("saveset %d has expired; its data may be overwritten", ss.ID)
		}
		if ss.Status != "complete" {
			return nil, fmt.Errorf("saveset %d is %s, not complete: choose another (see `kura savesets`)", ss.ID, ss.Status)
		}
		return ss, nil
	case opts.Latest || !opts.At.IsZero():
		before := opts.At
		if !before.IsZero() {
			before = before.Add(time.Nanosecond) // at or before
		}
		ss, err := e.Catalog.LastSaveset(e.Client, opts.Selection, nil, before)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, NotFound("no complete saveset matches (see `kura savesets`)")
		}
		return ss, err
	}
	return nil, errors.New("say which saveset to restore: an ID, --latest or --at TIME")
}

// Restore restores a saveset's moment: the saveset and, for incrementals
// and differentials, the earlier savesets its unchanged files live in.
func (e *Env) Restore(ctx context.Context, opts RestoreOptions) (*Result, error) {
	return e.RestoreWith(ctx, nil, opts, func(ss *catalog.Saveset, jobID, total int64) (*RestoreOutcome, error) {
		return e.RestoreFiles(ctx, EnvStore{Env: e}, ss, opts, jobID, total)
	})
}

// RestoreOutcome is what the restoring side reports: figures, warnings and
// what it read. An agent sends it to the server, which records the job.
type RestoreOutcome struct {
	To           string        `json:"to"`
	Phase        catalog.Phase `json:"phase"`
	Files        int64         `json:"files"`
	Bytes        int64         `json:"bytes"`
	MediaBytes   int64         `json:"media_bytes"`
	Warnings     []string      `json:"warnings"`
	WarningCount int64         `json:"warning_count"`
	Failed       int64         `json:"failed"`  // files lost to damaged media
	Skipped      int64         `json:"skipped"` // existing files kept by the overwrite policy
	Tapes        []string      `json:"tapes"`
	Sources      []int64       `json:"sources"` // savesets read, the chosen one included
}

// A SavesetStore gives a restore the savesets of a chain: their records,
// their indexes and their data. The local store reads the catalog and the
// tapes; an agent's store asks the server.
type SavesetStore interface {
	Saveset(id int64) (*catalog.Saveset, error)
	// OpenIndex opens a saveset's index; what is worth a warning (a
	// damaged cache rebuilt from tape) goes to warn.
	OpenIndex(ss *catalog.Saveset, warn func(msg string)) (*index.Reader, error)
	Data(ss *catalog.Saveset) (stream.FrameSource, error)
}

// EnvStore is the SavesetStore of a home: its catalog, index cache and tapes.
type EnvStore struct{ Env *Env }

var _ SavesetStore = EnvStore{}

// Saveset returns a saveset record from the catalog, as it is read: when
// the saveset's own tapes are offline and a copy's are all online, the
// record of that copy (copyView). Its index and data then come from the
// copy.
func (s EnvStore) Saveset(id int64) (*catalog.Saveset, error) {
	ss, err := s.Env.Catalog.Saveset(id)
	if err != nil {
		return nil, err
	}
	r, _, err := s.Env.readable(ss, true)
	if err != nil || r == nil {
		return ss, nil // reading it names what is offline
	}
	return r, nil
}

// OpenIndex opens a saveset's index, from the cache or its tape (a damaged
// cache is rebuilt from the tape and reported to warn).
func (s EnvStore) OpenIndex(ss *catalog.Saveset, warn func(msg string)) (*index.Reader, error) {
	return s.Env.openIndex(ss, warn)
}

// Data reads a saveset's tape files.
func (s EnvStore) Data(ss *catalog.Saveset) (stream.FrameSource, error) {
	return span.NewReader(s.Env.tapeOpener(), fromCatalogParts(ss.Parts)), nil
}

// RestoreFiles writes a saveset's moment into opts.To (or "/" with InPlace) from
// store: the restoring half of a restore, without any catalog bookkeeping.
// total is the expected number of bytes (0: unknown), for progress.
func (e *Env) RestoreFiles(ctx context.Context, store SavesetStore, ss *catalog.Saveset, opts RestoreOptions, jobID, total int64) (*RestoreOutcome, error) {
	to, err := restoreTarget(opts)
	if err != nil {
		return &RestoreOutcome{}, err
	}
	out := &RestoreOutcome{To: to}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return out, fmt.Errorf("restore target: %w", err)
	}
	root, err := os.OpenRoot(to)
	if err != nil {
		return out, fmt.Errorf("restore target: %w", err)
	}
	defer root.Close()
	job := &catalog.Job{ID: jobID}
	r := &restoreRun{env: e, ctx: ctx, opts: opts, ss: ss, job: job, root: root, store: store,
		phase: monitor.StartPhase(e.Clock, "restore"), sources: map[int64]*sourceReader{},
		asRoot: os.Geteuid() == 0}
	r.ticker.total = total
	if len(ss.Parts) > 0 {
		// The tape the restore starts on; each part opened then says its
		// own (tapeNoting in sourceFor).
		r.ticker.setTape(ss.Parts[0].Barcode)
	}
	runErr := r.run()
	r.close()
	r.phase.End()
	out.Phase = phaseRecord(r.phase)
	out.Files = r.files.Load()
	out.Bytes = r.phase.Source.Total()
	out.MediaBytes = r.phase.Media.Total()
	out.Warnings, out.WarningCount = r.warnings, r.nwarn
	out.Failed, out.Skipped = r.failed, r.skipped.Load()
	out.Tapes = r.tapes
	for id := range r.sources {
		out.Sources = append(out.Sources, id)
	}
	sort.Slice(out.Sources, func(i, j int) bool { return out.Sources[i] < out.Sources[j] })
	return out, runErr
}

// FinishRestore records a restore's outcome in its job and builds the result.
func (e *Env) FinishRestore(job *catalog.Job, ss *catalog.Saveset, opts RestoreOptions, out *RestoreOutcome, runErr error) (*Result, error) {
	if out == nil {
		out = &RestoreOutcome{}
	}
	if opts.Overwrite == "" {
		opts.Overwrite = OverwriteAlways
	}
	e.logf(job, "restore of saveset %d (%s of %s) to %s", ss.ID, ss.Level, ss.Created.Local().Format("2006-01-02 15:04:05"), out.To)
	job.Finished = e.now()
	job.Files = out.Files
	job.SourceBytes = out.Bytes
	job.MediaBytes = out.MediaBytes
	if !out.Phase.Start.IsZero() {
		job.Phases = []catalog.Phase{out.Phase}
	}
	job.AvgRate = out.Phase.AvgRate
	job.PeakRate = out.Phase.PeakRate
	job.Warnings, job.WarningCount = out.Warnings, out.WarningCount
	job.Tapes = out.Tapes
	if runErr == nil && out.Failed > 0 {
		runErr = fmt.Errorf("%s could not be restored from damaged media (each is listed)", units.Count(int64(out.Failed), "file"))
	}
	switch {
	case runErr != nil:
		job.State, job.Error = "failed", runErr.Error()
		if errors.Is(runErr, context.Canceled) {
			job.State = "canceled"
		}
	case out.WarningCount > 0:
		job.State = "warnings"
	default:
		job.State = "succeeded"
	}
	for _, id := range out.Sources {
		if id != ss.ID {
			e.logf(job, "read unchanged files from saveset %d", id)
		}
	}
	if runErr != nil {
		e.logf(job, "failed: %v", runErr)
	}
	e.logf(job, "%s: %s, %s written, %s", statusText(job.State), units.Count(job.Files, "entry"), units.FormatSize(job.SourceBytes), units.Count(job.WarningCount, "warning"))
	if err := e.Catalog.UpdateJob(job); err != nil && runErr == nil {
		runErr = err
	}
	res := &Result{Level: ss.Level, Warnings: out.Warnings, Figures: JobFigures(job, ss)}
	if out.Skipped > 0 {
		res.Note = fmt.Sprintf("%d existing files kept (--overwrite %s)", out.Skipped, opts.Overwrite)
	}
	res.Figures.MediaBytes = out.MediaBytes
	res.Figures.CompressionRatio = units.Ratio(res.Figures.SourceBytes, res.Figures.MediaBytes)
	e.emit(monitor.Event{Kind: monitor.JobEnded, JobID: job.ID, Message: job.State})
	if runErr != nil {
		return res, runErr
	}
	if out.WarningCount > 0 {
		return res, fmt.Errorf("restore %w: %s", ErrWarnings, units.Count(int64(out.WarningCount), "warning"))
	}
	return res, nil
}

type restoreRun struct {
	env    *Env
	ctx    context.Context
	opts   RestoreOptions
	ss     *catalog.Saveset
	job    *catalog.Job
	root   *os.Root
	store  SavesetStore
	phase  *monitor.Phase
	asRoot bool
	ticker progressTicker

	sources  map[int64]*sourceReader
	dirs     []index.Entry // directory metadata, applied last (deepest first)
	links    []index.Entry // hard links, made once their targets exist
	failed   int64         // files lost to damaged media
	skipped  atomic.Int64  // existing files kept by the overwrite policy
	warnings []string
	nwarn    int64
	tapes    []string

	cursor  *dirCursor // where entries are being created
	cur     *dirHandle // the cursor's directory, set by setDir
	copyBuf []byte

	mu    sync.Mutex // warnings and counters, shared with the file writers
	files atomic.Int64
	w     *fileWriters
}

func (r *restoreRun) warn(p, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nwarn++
	w := msg // a warning about the job, not one file
	if p != "" {
		w = displayPath(p) + ": " + msg
	}
	if len(r.warnings) < maxWarnings {
		r.warnings = append(r.warnings, w)
	}
	r.env.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: r.job.ID, Message: w, Path: p})
}

// warnIndex is the warning of an index read back from tape.
func (r *restoreRun) warnIndex(msg string) { r.warn("", msg) }

// sourceReader reads one saveset of the chain, forward only.
type sourceReader struct {
	ss *catalog.Saveset
	rd *stream.Reader
}

func (r *restoreRun) source(id int64) (*sourceReader, error) {
	if s := r.sources[id]; s != nil {
		return s, nil
	}
	ss, err := r.store.Saveset(id)
	if err != nil {
		return nil, fmt.Errorf("saveset %d, which holds unchanged files of this backup: %w", id, err)
	}
	idx, err := r.store.OpenIndex(ss, r.warnIndex)
	if err != nil {
		return nil, err
	}
	frames := idx.Frames()
	idx.Close()
	src, err := r.store.Data(ss)
	if err != nil {
		return nil, err
	}
	src = tapeNoting{src: src, parts: ss.Parts, ticker: &r.ticker}
	rd, err := stream.NewReader(src, frames, stream.ReaderOptions{OnFrame: func(_, compressed int) { r.phase.Media.Add(int64(compressed)) }})
	if err != nil {
		return nil, err
	}
	for _, p := range ss.Parts {
		r.tapes = appendUnique(r.tapes, p.Barcode)
	}
	s := &sourceReader{ss: ss, rd: rd}
	r.sources[id] = s
	return s, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func fromCatalogParts(parts []catalog.Part) []span.Part {
	out := make([]span.Part, len(parts))
	for i, p := range parts {
		out[i] = span.Part{Barcode: p.Barcode, File: p.File, Bytes: p.Bytes}
	}
	return out
}

func (r *restoreRun) close() {
	r.w.wait()
	for _, s := range r.sources {
		s.rd.Close()
	}
	if r.cursor != nil {
		r.cursor.release()
	}
}

// included reports whether a path is selected by the --include patterns: a
// pattern selects a path equal to it or below it, or matching it as a glob
// (against the whole path or the base name).
func included(p string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		if includedBy(p, pat) {
			return true
		}
	}
	return false
}

// includedBy reports whether one --include pattern selects index path p.
func includedBy(p, pat string) bool {
	pat = strings.Trim(pat, "/")
	if pat == "" || p == pat || strings.HasPrefix(p, pat+"/") {
		return true
	}
	if ok, _ := path.Match(pat, p); ok {
		return true
	}
	ok, _ := path.Match(pat, path.Base(p))
	return ok
}

// ErrNothingToRestore: the --include patterns of a restore select nothing
// in the saveset. A restore that would write nothing is not a success.
var ErrNothingToRestore = errors.New("nothing to restore")

// safeName checks an index path before it touches the disk: relative,
// clean, no "..". os.Root then keeps every operation inside the target,
// symlinks included.
func safeName(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("unsafe path %q in saveset", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("unsafe path %q in saveset", p)
		}
	}
	return nil
}

func (r *restoreRun) run() error {
	r.w = newFileWriters(r)
	c, err := newDirCursor(r.root)
	if err != nil {
		return fmt.Errorf("restore target: %w", err)
	}
	r.cursor = c
	idx, err := r.store.OpenIndex(r.ss, r.warnIndex)
	if err != nil {
		return err
	}
	defer idx.Close()
	it := idx.Iter()
	for it.Next() {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		r.invalid(it)
		e := *it.Entry()
		if !included(e.Path, r.opts.Includes) {
			continue
		}
		if err := safeName(e.Path); err != nil {
			r.warn(e.Path, err.Error()+"; skipped")
			continue
		}
		r.env.tick(&r.ticker, r.job.ID, r.phase, e.Path)
		if err := r.restoreEntry(&e); err != nil {
			var de *damageError
			switch {
			case errors.Is(err, errFatal):
				return err
			case errors.As(err, &de):
				r.notRestored(e.Path, de.err)
			default:
				r.warn(e.Path, err.Error())
			}
		}
	}
	r.invalid(it)
	if err := it.Err(); err != nil {
		return fmt.Errorf("reading the index of saveset %d: %w", r.ss.ID, err)
	}
	r.w.wait()
	for i := range r.links {
		l := &r.links[i]
		if err := r.makeLink(l); err != nil {
			r.warn(l.Path, "hard link: "+err.Error())
		}
	}
	for i := len(r.dirs) - 1; i >= 0; i-- {
		d := &r.dirs[i]
		if err := r.applyMeta(d.Path, d, true); err != nil {
			r.warn(d.Path, err.Error())
		}
	}
	if !r.opts.Sync {
		// Like GNU tar, restic and Bareos, a restore leaves writing back to
		// the kernel: the data is still safe on tape, and the restore can
		// be run again. --sync waits until it is on disk.
		return nil
	}
	f, err := r.root.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("flushing the restored files to disk: %w", err)
	}
	return nil
}

// invalid warns of the index entries the iterator skipped: each costs
// itself, and the rest of the saveset restores.
func (r *restoreRun) invalid(it *index.Iter) {
	for _, b := range it.Invalid() {
		if len(r.opts.Includes) == 0 || included(b.Path, r.opts.Includes) {
			r.warn(b.Path, b.Error()+"; skipped")
		}
	}
}

// errFatal marks errors that stop the whole restore (media, not one file).
var errFatal = errors.New("restore stopped")

// damageError is a file lost to damaged media: it is not restored, the
// restore goes on, and the job fails at its end naming every such file.
type damageError struct{ err error }

func (d *damageError) Error() string { return d.err.Error() }

func (r *restoreRun) notRestored(p string, err error) {
	r.failed++
	r.warn(p, "NOT RESTORED, damaged on media: "+err.Error())
}

func (r *restoreRun) restoreEntry(e *index.Entry) error {
	switch e.Type {
	case index.TypeDir:
		dir, base := splitPath(e.Path)
		if err := r.setDir(dir); err != nil {
			return err
		}
		if err := r.cursor.mkdir(base); err != nil {
			return err
		}
		r.dirs = append(r.dirs, *e)
		r.counted()
		return nil
	case index.TypeHardlink:
		r.links = append(r.links, *e)
		return nil
	}
	dir, base := splitPath(e.Path)
	if err := r.setDir(dir); err != nil {
		return err
	}
	// Create first, and apply the overwrite policy only when something is
	// in the way: restoring into an empty folder costs no extra lookup.
	err := r.create(base, e)
	if errors.Is(err, fs.ErrExist) {
		if !r.mayWrite(base, e) {
			return nil
		}
		err = r.create(base, e)
	}
	if errors.Is(err, errQueued) {
		return nil
	}
	if err != nil {
		return err
	}
	r.counted()
	if e.Type != index.TypeFile {
		return r.applyMeta(base, e, false)
	}
	return nil
}

// counted adds one restored entry.
func (r *restoreRun) counted() {
	r.files.Add(1)
	r.phase.Files.Add(1)
}

// create makes one non-directory entry; fs.ErrExist when the name is taken.
func (r *restoreRun) create(base string, e *index.Entry) error {
	var err error
	switch e.Type {
	case index.TypeFile:
		return r.restoreFile(base, e)
	case index.TypeSymlink:
		err = unix.Symlinkat(e.Link, r.cur.fd, base)
	case index.TypeFifo:
		err = unix.Mkfifoat(r.cur.fd, base, 0o600)
	case index.TypeChar, index.TypeBlock:
		mode := uint32(unix.S_IFCHR)
		if e.Type == index.TypeBlock {
			mode = unix.S_IFBLK
		}
		err = unix.Mknodat(r.cur.fd, base, mode|0o600, int(e.Rdev))
	default:
		return fmt.Errorf("unknown entry type %d; skipped", e.Type)
	}
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	}
	return err
}

// setDir makes dir (relative to the target) the current directory for
// entry creation, created if needed.
func (r *restoreRun) setDir(dir string) error {
	if err := r.cursor.to(dir); err != nil {
		r.cur = nil
		return err
	}
	r.cur = r.cursor.cur()
	return nil
}

// splitPath splits an index path into its parent ("" at the top) and name.
func splitPath(p string) (dir, base string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// mayWrite applies the overwrite policy to an existing entry and clears the
// way for the new one.
func (r *restoreRun) mayWrite(base string, e *index.Entry) bool {
	return r.clearWay(r.cur.fd, base, e)
}

// clearWay is mayWrite for any directory: safe to call from the file
// writers (it only uses the directory's descriptor).
func (r *restoreRun) clearWay(dirfd int, base string, e *index.Entry) bool {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		r.warn(e.Path, "cannot check existing file: "+err.Error())
		return false
	}
	switch r.opts.Overwrite {
	case OverwriteNever:
		r.skipped.Add(1)
		return false
	case OverwriteOlder:
		if st.Mtim.Nano() >= e.MTime {
			r.skipped.Add(1)
			return false
		}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		r.warn(e.Path, "a directory is in the way; not restored")
		return false
	}
	if err := unix.Unlinkat(dirfd, base, 0); err != nil {
		r.warn(e.Path, "cannot replace existing file: "+err.Error())
		return false
	}
	return true
}

func (r *restoreRun) restoreFile(base string, e *index.Entry) error {
	if e.Size <= smallFile {
		// Read the content here (the stream is read in order), then let a
		// writer create the file while the next one is decoded.
		data, err := r.content(e)
		if err != nil {
			return err
		}
		r.w.add(&fileJob{dir: r.cur.acquire(), base: base, e: *e, data: data})
		return errQueued
	}
	fd, err := createAt(r.cur.fd, base)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), e.Path)
	// Damage on media costs the files it holds, not the restore: the
	// partial file is removed, the file is named, and the next entry is
	// read from the next good frame.
	damaged := func(err error) error {
		f.Close()
		_ = unix.Unlinkat(r.cur.fd, base, 0)
		return err
	}
	s, err := r.open(e)
	if err != nil {
		return damaged(err)
	}
	h := stream.NewDigest()
	if r.copyBuf == nil {
		r.copyBuf = make([]byte, 1<<20) // few, large writes for large files
	}
	n, err := io.CopyBuffer(io.MultiWriter(f, h), s.rd, r.copyBuf)
	r.phase.Source.Add(n)
	if err != nil {
		return damaged(&damageError{err: fmt.Errorf("saveset %d: %w", s.ss.ID, err)})
	}
	if d := stream.SumDigest(h); d != e.Digest {
		return damaged(&damageError{err: errors.New("content does not match its digest")})
	}
	if err := r.applyFileMeta(f, e); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// errQueued: the file went to the writers, which count it.
var errQueued = errors.New("queued")

// createAt creates a file in a directory opened through the root. base is
// one path component, so a plain openat relative to the directory stays
// inside the target; O_NOFOLLOW|O_EXCL refuse a symlink or anything else
// in the way (fs.ErrExist).
func createAt(dirfd int, base string) (int, error) {
	fd, err := unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EEXIST) {
		return -1, fs.ErrExist
	}
	if err != nil {
		return -1, &fs.PathError{Op: "create", Path: base, Err: err}
	}
	return fd, nil
}

// open positions the saveset that holds e's content at e and checks that
// the stream and the index agree.
func (r *restoreRun) open(e *index.Entry) (*sourceReader, error) {
	src := int64(r.ss.ID)
	if e.Flags&index.FlagUnchanged != 0 {
		src = int64(e.Source)
	}
	s, err := r.source(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errFatal, err)
	}
	if err := s.rd.SeekTo(e.Offset); err != nil {
		return nil, &damageError{err: fmt.Errorf("saveset %d: %w", src, err)}
	}
	hdr, err := s.rd.Next()
	if errors.Is(err, stream.ErrEntry) {
		// One bad entry in the stream costs this file, not the saveset.
		return nil, fmt.Errorf("saveset %d: %w; skipped", src, err)
	}
	if err != nil {
		return nil, &damageError{err: fmt.Errorf("saveset %d: %w", src, err)}
	}
	if hdr.Path != e.Path || hdr.Size != e.Size {
		return nil, fmt.Errorf("saveset %d: the stream holds %s (%d bytes) at offset %d where the index expects this file (%d bytes); skipped",
			src, index.ShortPath(hdr.Path), hdr.Size, e.Offset, e.Size)
	}
	return s, nil
}

// content reads a small file's content and checks its digest.
func (r *restoreRun) content(e *index.Entry) ([]byte, error) {
	if e.Size == 0 {
		return nil, nil
	}
	s, err := r.open(e)
	if err != nil {
		return nil, err
	}
	buf := r.w.buffer(e.Size)
	if _, err := io.ReadFull(s.rd, buf); err != nil {
		r.w.free(len(buf))
		return nil, &damageError{err: fmt.Errorf("saveset %d: %w", s.ss.ID, err)}
	}
	r.phase.Source.Add(e.Size)
	h := stream.NewDigest()
	h.Write(buf)
	if stream.SumDigest(h) != e.Digest {
		r.w.free(len(buf))
		return nil, &damageError{err: errors.New("content does not match its digest")}
	}
	return buf, nil
}

func (r *restoreRun) applyFileMeta(f *os.File, e *index.Entry) error {
	return setFileMeta(r, int(f.Fd()), e)
}

// applyMeta sets ownership, mode and times of a non-file entry, without
// following symlinks. For directories, name is relative to the target root.
func (r *restoreRun) applyMeta(name string, e *index.Entry, isDir bool) error {
	var dirfd int
	if isDir {
		dir, base := splitPath(e.Path)
		if err := r.setDir(dir); err != nil {
			return err
		}
		h, err := r.cursor.openDir(base)
		if err != nil {
			return err
		}
		defer h.release()
		f, fd := h.f, h.fd
		for k, v := range e.Xattrs {
			if err := unix.Fsetxattr(fd, k, []byte(v), 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
				r.warn(e.Path, fmt.Sprintf("xattr %s: %v", k, err))
			}
		}
		if r.asRoot {
			if err := f.Chown(int(e.UID), int(e.GID)); err != nil {
				return err
			}
		}
		if err := f.Chmod(fileMode(e.Mode) | os.ModeDir); err != nil {
			return err
		}
		ts := []unix.Timespec{unix.NsecToTimespec(e.MTime), unix.NsecToTimespec(e.MTime)}
		return unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH)
	}
	dirfd = r.cur.fd
	if r.asRoot {
		if err := unix.Fchownat(dirfd, name, int(e.UID), int(e.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	if e.Type != index.TypeSymlink {
		if err := unix.Fchmodat(dirfd, name, e.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(e.MTime), unix.NsecToTimespec(e.MTime)}
	return unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func (r *restoreRun) makeLink(l *index.Entry) error {
	if err := safeName(l.Link); err != nil {
		return err
	}
	if !included(l.Link, r.opts.Includes) {
		return fmt.Errorf("its target %s was not restored", l.Link)
	}
	if fi, err := r.root.Lstat(l.Path); err == nil {
		if r.opts.Overwrite == OverwriteNever || fi.IsDir() {
			return nil
		}
		if err := r.root.Remove(l.Path); err != nil {
			return err
		}
	}
	if err := r.root.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return err
	}
	if err := r.root.Link(l.Link, l.Path); err != nil {
		return err
	}
	r.counted()
	return nil
}

// fileMode turns stored unix permission bits (07777) into an os.FileMode.
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

// chainPlan is what checkChain found before a restore.
type chainPlan struct {
	total int64            // bytes of file content the restore will write
	ss    *catalog.Saveset // the chosen saveset, or the copy it is read through
	notes []string         // one line per saveset read from a copy, for the job log
	// warnings found while planning (a damaged index cache rebuilt), for
	// the job's warnings.
	warnings []string
	// unmatched are the --include patterns that select nothing (warnings
	// of the restore; when all do, checkChain fails with ErrNothingToRestore).
	unmatched []string
}

// checkChain makes sure that every saveset a restore will read exists, is
// complete, and that its tapes are online, before anything is written. With
// copies, a saveset whose own tapes are offline is read from a copy whose
// tapes are all online (see readable); only when no copy is either does the
// restore fail, naming the saveset's own exported tapes with the command
// that brings them back.
func (e *Env) checkChain(ss *catalog.Saveset, includes []string, copies bool) (*chainPlan, error) {
	plan := &chainPlan{ss: ss}
	var offline []string
	// use finds the record to read s through (nil: none is online).
	use := func(s *catalog.Saveset) (*catalog.Saveset, error) {
		r, off, err := e.readable(s, copies)
		if err != nil {
			return nil, err
		}
		if r == nil {
			for _, b := range off {
				offline = appendUnique(offline, b)
			}
			return nil, nil
		}
		if r != s {
			plan.notes = append(plan.notes, copyNote(s, r, off))
		}
		return r, nil
	}
	top, err := use(ss)
	if err != nil {
		return nil, err
	}
	if top != nil {
		plan.ss = top
	}
	// Without a readable record the cached index still names the chain,
	// so that the error lists every tape to bring back.
	idx, err := e.openIndex(plan.ss, func(m string) { plan.warnings = append(plan.warnings, m) })
	if err != nil {
		if len(offline) > 0 {
			return nil, offlineError(offline)
		}
		return nil, err
	}
	need := map[int64]bool{}
	matched := make([]bool, len(includes))
	it := idx.Iter()
	for it.Next() {
		en := it.Entry()
		in := len(includes) == 0
		for i, pat := range includes {
			// Each pattern is tried until it has matched once, and on
			// files until one pattern takes the file.
			if (!matched[i] || (!in && en.Type == index.TypeFile)) && includedBy(en.Path, pat) {
				matched[i], in = true, true
			}
		}
		if en.Type != index.TypeFile || !in {
			continue
		}
		plan.total += en.Size
		if en.Flags&index.FlagUnchanged != 0 && int64(en.Source) != ss.ID {
			need[int64(en.Source)] = true
		}
	}
	err = it.Err()
	idx.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the index of saveset %d: %w", ss.ID, err)
	}
	for i, pat := range includes {
		if !matched[i] {
			plan.unmatched = append(plan.unmatched, pat)
		}
	}
	if len(includes) > 0 && len(plan.unmatched) == len(includes) {
		return nil, fmt.Errorf("%w: no path in saveset %d matches --include %s (see `kura ls %d`; paths have no leading /)",
			ErrNothingToRestore, ss.ID, strings.Join(includes, ", --include "), ss.ID)
	}
	ids := make([]int64, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		s, err := e.Catalog.Saveset(id)
		if err != nil {
			return nil, fmt.Errorf("saveset %d, which holds unchanged files of saveset %d: %w", id, ss.ID, err)
		}
		if s.Status != catalog.StatusComplete || s.Expired {
			return nil, fmt.Errorf("saveset %d, which holds unchanged files of saveset %d, is %s", id, ss.ID, savesetState(s))
		}
		if _, err := use(s); err != nil {
			return nil, err
		}
	}
	if len(offline) > 0 {
		return nil, offlineError(offline)
	}
	return plan, nil
}

// offlineError names the exported tapes a restore needs.
func offlineError(barcodes []string) error {
	sort.Strings(barcodes)
	return fmt.Errorf("this restore needs tapes that are exported (offline): %s; bring them back with `kura tape import BARCODE`",
		strings.Join(barcodes, ", "))
}

// RestoreWith runs a restore: it chooses the saveset, checks that its
// chain is readable (reading a copy where a saveset's own tapes are
// offline), records the job (job is a queued record, or nil for a new
// one), calls run with the saveset record to read, the job's ID and the
// expected bytes, and records run's outcome. A local restore runs
// RestoreFiles; the server's run has an agent write the files.
func (e *Env) RestoreWith(ctx context.Context, job *catalog.Job, opts RestoreOptions,
	run func(ss *catalog.Saveset, jobID, total int64) (*RestoreOutcome, error)) (*Result, error) {
	switch opts.Overwrite {
	case "":
		opts.Overwrite = OverwriteAlways
	case OverwriteNever, OverwriteOlder, OverwriteAlways:
	default:
		return nil, fmt.Errorf("unknown --overwrite %q (never, older or always)", opts.Overwrite)
	}
	to, err := restoreTarget(opts)
	if err != nil {
		return nil, err
	}
	ss, err := e.ChooseSaveset(opts)
	if err != nil {
		return nil, err
	}
	plan, err := e.checkChain(ss, opts.Includes, true)
	if err != nil {
		return nil, err
	}
	if job == nil {
		job = &catalog.Job{}
	}
	job.Kind, job.State, job.Client, job.Selection = "restore", "running", e.Client, ss.Selection
	job.SavesetID, job.Level, job.Started, job.Reason = ss.ID, ss.Level, e.now(), ""
	for _, n := range plan.notes {
		e.logf(job, "%s", n)
	}
	lock, err := e.startJob(job)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	e.emit(monitor.Event{Kind: monitor.JobStarted, JobID: job.ID, Message: fmt.Sprintf("restore of saveset %d (%s of %s) to %s",
		ss.ID, ss.Level, ss.Created.Local().Format("2006-01-02 15:04:05"), to)})
	out, runErr := run(plan.ss, job.ID, plan.total)
	if out == nil {
		out = &RestoreOutcome{To: to}
	}
	for _, w := range plan.warnings {
		e.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: job.ID, Message: w})
	}
	out.Warnings = append(append([]string{}, plan.warnings...), out.Warnings...)
	out.WarningCount += int64(len(plan.warnings))
	for _, pat := range plan.unmatched {
		// Like a missing path of a backup: the rest is restored, the job
		// ends with warnings.
		out.Warnings = append([]string{fmt.Sprintf("--include %s: matches nothing in saveset %d", pat, ss.ID)}, out.Warnings...)
		out.WarningCount++
	}
	return e.FinishRestore(job, plan.ss, opts, out, runErr)
}
