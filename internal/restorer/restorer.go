// Package restorer writes the entries of a saveset into a folder: it reads
// an index and a stream of frames and creates directories, files, links and
// devices under the target through an *at-syscall directory cursor, applies
// the overwrite policy and the metadata, makes hard links and reports
// warnings. It knows nothing of the catalog: the engine's local restore and
// the agent both give it a Store, the one reading the home's tapes, the
// other asking the server.
package restorer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/rules"
	"github.com/kura-backup/kura/internal/stream"
)

// Overwrite policies of a restore.
const (
	OverwriteNever  = rules.OverwriteNever
	OverwriteOlder  = rules.OverwriteOlder
	OverwriteAlways = rules.OverwriteAlways
)

// Options say what to restore and where.
type Options struct {
	To        string   // target folder; exactly one of To and InPlace
	InPlace   bool     // restore to the original places ("/"), over what is there
	Includes  []string // paths or globs; with Paths empty = everything (see Selection)
	Paths     []string // exact paths, taken literally (see Selection)
	Overwrite string   // never, older, always (default)
	Sync      bool     // wait until the restored files are on disk (one syncfs at the end)
}

// ErrRestoreTarget: a restore says neither where to write (To) nor that it
// may write over the original places (InPlace), or says both. Nothing is
// written over live files unless asked for.
var ErrRestoreTarget = errors.New("say where to restore: --to DIR, or --in-place to write over the original places")

// Target is the folder a restore writes into, or ErrRestoreTarget.
func Target(opts Options) (string, error) {
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

// Saveset is what the restorer needs to know of a saveset: its ID and the
// tapes its parts are on, in part order (for progress and the outcome).
type Saveset struct {
	ID    int64
	Tapes []string
}

// A Store gives a restore the savesets of a chain: their records, their
// indexes and their data. The engine's store reads the catalog and the
// tapes; an agent's store asks the server.
type Store interface {
	Saveset(id int64) (*Saveset, error)
	// OpenIndex opens a saveset's index; what is worth a warning (a
	// damaged cache rebuilt from tape) goes to warn.
	OpenIndex(ss *Saveset, warn func(msg string)) (*index.Reader, error)
	Data(ss *Saveset) (stream.FrameSource, error)
}

// Phase is the restore's phase record: its time and figures.
type Phase struct {
	Name       string
	Start      time.Time
	End        time.Time
	Files      int64
	Bytes      int64
	MediaBytes int64
	AvgRate    float64 // bytes/s
	PeakRate   float64 // highest 1-second rate, bytes/s
}

// Outcome is what a restore did: figures, warnings and what it read.
type Outcome struct {
	To           string
	Phase        Phase
	Files        int64
	Bytes        int64
	MediaBytes   int64
	Warnings     []string
	WarningCount int64
	Failed       int64 // files lost to damaged media
	Skipped      int64 // existing files kept by the overwrite policy
	Tapes        []string
	Sources      []int64 // savesets read, the chosen one included
}

// Job is where a restore's events go: the job they belong to, the clock
// and the sink of progress and warning events.
type Job struct {
	ID     int64
	Clock  monitor.Clock // nil: the system clock
	Events monitor.Sink  // nil: none
	Total  int64         // the bytes of file content expected (0: unknown), for progress
}

// Run writes a saveset's moment into opts.To (or "/" with InPlace) from
// store: the restoring half of a restore, without any catalog bookkeeping.
func Run(ctx context.Context, store Store, ss *Saveset, opts Options, job Job) (*Outcome, error) {
	to, err := Target(opts)
	if err != nil {
		return &Outcome{}, err
	}
	if job.Clock == nil {
		job.Clock = monitor.SystemClock{}
	}
	out := &Outcome{To: to}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return out, fmt.Errorf("restore target: %w", err)
	}
	root, err := os.OpenRoot(to)
	if err != nil {
		return out, fmt.Errorf("restore target: %w", err)
	}
	defer root.Close()
	r := &restoreRun{ctx: ctx, opts: opts, sel: Selection{Includes: opts.Includes, Paths: opts.Paths}.matcher(), ss: ss, job: job, root: root, store: store,
		phase: monitor.StartPhase(job.Clock, "restore"), sources: map[int64]*sourceReader{},
		asRoot: os.Geteuid() == 0, privXattrs: mayPrivilegedXattrs()}
	r.ticker.total = job.Total
	if len(ss.Tapes) > 0 {
		// The tape the restore starts on; each part opened then says its
		// own (tapeNoting in source).
		r.ticker.setTape(ss.Tapes[0])
	}
	runErr := r.run()
	r.close()
	r.warnSkippedXattrs()
	r.phase.End()
	start := r.phase.Source.Start()
	out.Phase = Phase{Name: r.phase.Name, Start: start, End: start.Add(r.phase.Elapsed()), Files: r.phase.Files.Total(),
		Bytes: r.phase.Source.Total(), MediaBytes: r.phase.Media.Total(), AvgRate: r.phase.Source.Average(),
		PeakRate: r.phase.Source.Peak()}
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

func (r *restoreRun) emit(ev monitor.Event) {
	if ev.Time.IsZero() {
		ev.Time = r.job.Clock.Now()
	}
	if r.job.Events != nil {
		r.job.Events.Event(ev)
	}
}

const progressEvery = 250 * time.Millisecond

// MaxWarnings is how many warnings a job keeps (the first ones); it counts
// them all.
const MaxWarnings = 1000

// smallFile: files up to this size are read whole and written by the
// file writers in parallel.
const smallFile = 1 << 20

// tick sends a progress event, a few per second at most.
func (r *restoreRun) tick(path string) {
	t, p := &r.ticker, r.phase
	now := r.job.Clock.Now()
	if now.Sub(t.last) < progressEvery {
		return
	}
	t.last = now
	r.emit(monitor.Event{Kind: monitor.Progress, JobID: r.job.ID, Phase: p.Name, Files: p.Files.Total(),
		Bytes: p.Source.Total(), Path: path, Rate: p.Source.Average(), Total: t.total, Tape: t.currentTape()})
}

// progressTicker limits progress events to a few per second; total is the
// phase's expected source bytes (0 when unknown); tape is the barcode of
// the tape in use, set by whoever opens one (setTape), from any goroutine.
type progressTicker struct {
	last  time.Time
	total int64
	tape  atomic.Pointer[string]
}

// setTape notes the tape the phase uses now.
func (t *progressTicker) setTape(barcode string) { t.tape.Store(&barcode) }

func (t *progressTicker) currentTape() string {
	if p := t.tape.Load(); p != nil {
		return *p
	}
	return ""
}

// tapeNoting is a FrameSource that tells a progress ticker which tape each
// part it opens is on.
type tapeNoting struct {
	src    stream.FrameSource
	tapes  []string
	ticker *progressTicker
}

var _ stream.FrameSource = tapeNoting{}

func (s tapeNoting) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	if loc.Part >= 0 && loc.Part < len(s.tapes) {
		s.ticker.setTape(s.tapes[loc.Part])
	}
	return s.src.OpenAt(loc)
}

type restoreRun struct {
	ctx    context.Context
	opts   Options
	sel    *matcher // what opts select
	ss     *Saveset
	job    Job
	root   *os.Root
	store  Store
	phase  *monitor.Phase
	asRoot bool
	ticker progressTicker

	privXattrs  bool         // may set security.* and trusted.* attributes
	privSkipped atomic.Int64 // entries whose security.*/trusted.* attributes were skipped

	xattrUnsupported atomic.Int64 // entries with attributes the target's file system refused as unsupported

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

	head head // the file entry restored last, which parts append to

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
		w = index.DisplayPath(p) + ": " + msg
	}
	if len(r.warnings) < MaxWarnings {
		r.warnings = append(r.warnings, w)
	}
	r.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: r.job.ID, Message: w, Path: p})
}

// warnIndex is the warning of an index read back from tape.
func (r *restoreRun) warnIndex(msg string) { r.warn("", msg) }

// sourceReader reads one saveset of the chain, forward only.
type sourceReader struct {
	ss *Saveset
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
	src = tapeNoting{src: src, tapes: ss.Tapes, ticker: &r.ticker}
	rd, err := stream.NewReader(src, frames, stream.ReaderOptions{OnFrame: func(_, compressed int) { r.phase.Media.Add(int64(compressed)) }})
	if err != nil {
		return nil, err
	}
	for _, t := range ss.Tapes {
		r.tapes = appendUnique(r.tapes, t)
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

func (r *restoreRun) close() {
	r.w.wait()
	for _, s := range r.sources {
		s.rd.Close()
	}
	if r.cursor != nil {
		r.cursor.release()
	}
}

// ErrNothingToRestore: the --include patterns or --path paths of a restore select nothing
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
		if e.Type == index.TypeFile && e.Flags&index.FlagPart != 0 {
			// A part of a command's output: appended to the file before
			// it, when that file was restored (included or not).
			if err := r.appendPart(&e); err != nil {
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
			continue
		}
		r.head = head{}
		if !r.sel.selects(e.Path) {
			continue
		}
		if err := safeName(e.Path); err != nil {
			r.warn(e.Path, err.Error()+"; skipped")
			continue
		}
		r.tick(e.Path)
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
		if r.sel.selects(b.Path) {
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
		r.setHead(e, true)
		return nil
	}
	if err != nil {
		return err
	}
	r.setHead(e, false)
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
	if e.Size <= smallFile && e.Flags&index.FlagSparse == 0 {
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
	var n int64
	if data := s.rd.Extents(); data != nil {
		n, err = r.writeSparse(f, s.rd, data, e.Size, h)
	} else {
		n, err = io.CopyBuffer(io.MultiWriter(f, h), s.rd, r.copyBuf)
	}
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

// writeSparse writes a sparse file's data extents where they belong and
// leaves its holes as holes (the file is new and empty: what is never
// written reads as zeros and takes no room); the file gets its size at the
// end even when it ends in a hole. h gets the logical content. It returns
// the logical bytes restored.
func (r *restoreRun) writeSparse(f *os.File, rd *stream.Reader, data []stream.Extent, size int64, h *stream.Digest) (int64, error) {
	var pos int64
	for _, x := range data {
		if err := rd.Discard(x.Offset - pos); err != nil {
			return pos, err
		}
		stream.HashZeros(h, x.Offset-pos)
		k, err := io.CopyBuffer(io.MultiWriter(io.NewOffsetWriter(f, x.Offset), h), io.LimitReader(rd, x.Length), r.copyBuf)
		if err == nil && k < x.Length {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return x.Offset + k, err
		}
		pos = x.End()
	}
	if err := rd.Discard(size - pos); err != nil {
		return pos, err
	}
	stream.HashZeros(h, size-pos)
	if err := f.Truncate(size); err != nil {
		return pos, err
	}
	return size, nil
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
		if r.asRoot {
			if err := f.Chown(int(e.UID), int(e.GID)); err != nil {
				return err
			}
		}
		r.setXattrs(e, func(name string, value []byte) error { return unix.Fsetxattr(fd, name, value, 0) })
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
	if len(e.Xattrs) > 0 {
		// l*xattr have no *at form: the entry is named through the
		// directory's descriptor, and a symlink's own attributes are set.
		at := "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
		r.setXattrs(e, func(k string, v []byte) error { return unix.Lsetxattr(at, k, v, 0) })
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
	if !r.sel.selects(l.Link) {
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
