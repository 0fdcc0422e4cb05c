package engine

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
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/restorer"
	"github.com/kura-backup/kura/internal/rules"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/units"
	"github.com/kura-backup/kura/internal/walk"
)

// Levels of a backup.
const (
	LevelFull = rules.LevelFull
	LevelIncr = rules.LevelIncr
	LevelDiff = rules.LevelDiff
)

// BackupOptions say what to back up and how.
type BackupOptions struct {
	Paths     []string // what to back up (absolute or relative to the working folder)
	Selection string   // a saved selection set instead of Paths
	Library   string   // "" = the default library
	Drive     int      // 0 = any free drive
	Level     string   // full (default), incr, diff
	Compress  compress.Level
	Excludes  []string
	Verify    bool // run a data verify phase after the backup
	Label     string
	FrameSize int // 0 = the stream's default
	Workers   int // parallel small-file readers; 0 = default
	ReadAhead int // bytes of small files read ahead of the stream; 0 = 64 MiB

	// Producer makes the stream; nil = this machine's files (LocalProducer).
	// Paths are then taken as they are: the producer's machine resolves them.
	Producer Producer
	// Host names the machine the data comes from (default: this host).
	Host string
	// Policy names the policy this backup runs for (recorded with the
	// saveset, for retention); Pool is its tape pool. Without a pool the
	// backup writes to tapes outside any pool.
	Policy, Pool string
	// KeySuffix is added to the selection key, so that each stream of a
	// backup split over several drives finds its own base ("#2/3").
	KeySuffix string
	// Job is a job record made earlier (a queued job of the server); nil =
	// a new one.
	Job *catalog.Job
	// Sealed: the producer (a client's agent) encrypts the stream and the
	// index (seal, age). The parts get no label of their own (the label goes
	// to the producer, which puts it inside the encryption), the frames and
	// the index cannot be checked here, and the saveset is recorded as
	// encrypted.
	Sealed bool
	// Sources are commands and plug-ins to store instead of Paths (a
	// full backup, always); PartSize is the most of one output held in
	// memory as one entry (0: the producer's default).
	Sources  []plugin.Source
	PartSize int
}

// Result is what a job reports at its end.
type Result struct {
	Figures  monitor.Figures
	Warnings []string // the first maxWarnings warnings, each naming its path
	Level    string   // the level that actually ran (incr/diff become full without a base)
	Note     string   // e.g. "no full backup of this selection yet: ran a full backup"
}

const maxWarnings = restorer.MaxWarnings

// MaxLabelLen is the longest saveset label, in bytes, a backup accepts:
// the same limit for a local backup and a server's (api.JobRequest).
const MaxLabelLen = rules.MaxLabelLen

// ErrBadOption is returned (wrapped) for a backup option that is refused
// before anything runs: the CLI treats it as a usage error.
var ErrBadOption = errors.New("invalid option")

// checkDrive refuses a drive number (0: any) the library does not have,
// before a job is recorded for it.
func checkDrive(lib library.Changer, n int) error {
	if d := lib.Config().Drives; n < 0 || n > d {
		return library.NoDrive(lib.Config().Name, n, d)
	}
	return nil
}

// CheckLabel checks a saveset label: at most MaxLabelLen bytes of UTF-8,
// without NUL. Local backups and the server's requests both use it.
func CheckLabel(label string) error {
	if err := rules.Label(label); err != nil {
		return fmt.Errorf("%w: --label: %v", ErrBadOption, err)
	}
	return nil
}

// CheckFrameSize checks a stream frame size (0: the default).
func CheckFrameSize(n int) error {
	if err := rules.FrameSize(n); err != nil {
		return fmt.Errorf("%w: --frame-size: %v", ErrBadOption, err)
	}
	return nil
}

// ErrWarnings is returned (wrapped) by jobs that completed with warnings.
var ErrWarnings = errors.New("completed with warnings")

// savesetMeta is stored in the index file's meta blob: enough for `kura tape
// scan` to rebuild the catalog record from the media alone.
type savesetMeta struct {
	Saveset catalog.Saveset `json:"saveset"`
	Host    string          `json:"host"`
}

// selectionKey names what a backup covers, so that incrementals find their
// base: the selection set's name, or the sorted paths.
func selectionKey(sel string, paths []string) string {
	if sel != "" {
		return sel
	}
	return "paths:" + strings.Join(paths, ",")
}

// ErrSourceLevel: a command or plug-in backup asked for another level than
// full (the output of a command has no "unchanged since").
var ErrSourceLevel = errors.New("command and plug-in backups are full backups")

// checkSources checks the commands and plug-ins of a backup before
// anything runs: valid, not mixed with paths, a full backup.
func checkSources(opts BackupOptions) error {
	if len(opts.Sources) == 0 {
		return errors.New("nothing to back up")
	}
	if len(opts.Paths) > 0 || len(opts.Excludes) > 0 {
		return fmt.Errorf("%w: back up paths or commands and plug-ins, not both in one backup", ErrBadOption)
	}
	if opts.Level != "" && opts.Level != LevelFull {
		return fmt.Errorf("%w: %w (not %s)", ErrBadOption, ErrSourceLevel, opts.Level)
	}
	if opts.PartSize < 0 || opts.PartSize > producer.MaxPartSize {
		return fmt.Errorf("%w: part size %d (at most %d)", ErrBadOption, opts.PartSize, producer.MaxPartSize)
	}
	for _, s := range opts.Sources {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrBadOption, err)
		}
	}
	return nil
}

// SourcesSaveset reports whether a saveset holds the output of commands
// or plug-ins (its paths are the sources' names, "command:NAME",
// "postgresql:DB"), not files of a machine (absolute paths).
func SourcesSaveset(ss *catalog.Saveset) bool {
	return len(ss.Paths) > 0 && !strings.HasPrefix(ss.Paths[0], "/")
}

// checkRemotePaths checks paths that another machine will resolve: they
// must be absolute and clean.
func checkRemotePaths(paths []string) error {
	if len(paths) == 0 {
		return errors.New("nothing to back up: give one or more paths or --selection")
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
			return fmt.Errorf("path %q: paths backed up through an agent must be absolute and clean", p)
		}
	}
	return nil
}

// resolvePaths turns the user's paths into sorted, absolute paths. A path
// that does not exist is the walk's business: a warning when other paths
// remain, a failed job when none does (walk.ErrNoRoots).
func resolvePaths(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("nothing to back up: give one or more paths or --selection")
	}
	var out []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// Backup runs a backup job to the end and returns its figures. A job with
// warnings returns its result and an error wrapping ErrWarnings.
func (e *Env) Backup(ctx context.Context, opts BackupOptions) (*Result, error) {
	if err := CheckLabel(opts.Label); err != nil {
		return nil, err
	}
	if err := CheckFrameSize(opts.FrameSize); err != nil {
		return nil, err
	}
	if len(opts.Sources) > 0 {
		if err := checkSources(opts); err != nil {
			return nil, err
		}
	}
	paths, excludes := opts.Paths, opts.Excludes
	sourcesNote := ""
	if opts.Selection != "" {
		sel, err := e.Catalog.Selection(e.Client, opts.Selection)
		if err != nil {
			if errors.Is(err, catalog.ErrNotFound) {
				return nil, Missing("selection", "no selection %q", opts.Selection)
			}
			return nil, fmt.Errorf("selection %q: %w", opts.Selection, err)
		}
		paths = append(slices.Clone(sel.Paths), paths...)
		excludes = append(slices.Clone(sel.Excludes), excludes...)
		if len(sel.Sources) > 0 {
			for _, s := range sel.Sources {
				opts.Sources = append(opts.Sources, plugin.Source{Kind: s.Kind, Command: s.Command, Name: s.Name,
					Databases: s.Databases, AllDatabases: s.AllDatabases})
			}
			// A policy's incremental runs of a set of commands back up
			// in full: a command's output has no "unchanged since".
			level := opts.Level
			opts.Level = ""
			if err := checkSources(opts); err != nil {
				return nil, fmt.Errorf("selection %q: %w", opts.Selection, err)
			}
			if level != "" && level != LevelFull {
				sourcesNote = fmt.Sprintf("selection %s holds commands or plug-ins: a %s backup runs as a full backup", opts.Selection, level)
			}
		}
	}
	for _, x := range excludes {
		if err := walk.ValidatePattern(x); err != nil {
			return nil, err
		}
	}
	switch {
	case len(opts.Sources) > 0:
		// What is stored is named by the sources (never their command text).
		paths = nil
		for _, s := range opts.Sources {
			paths = append(paths, s.String())
		}
	case opts.Producer == nil:
		var err error
		if paths, err = resolvePaths(paths); err != nil {
			return nil, err
		}
	default:
		if err := checkRemotePaths(paths); err != nil {
			return nil, err
		}
	}
	level := opts.Level
	if level == "" {
		level = LevelFull
	}
	if level != LevelFull && level != LevelIncr && level != LevelDiff {
		return nil, fmt.Errorf("unknown level %q (full, incr or diff)", level)
	}
	selKey := selectionKey(opts.Selection, paths) + opts.KeySuffix
	if len(opts.Sources) > 0 && opts.Selection == "" {
		selKey = "sources:" + strings.Join(paths, ",") + opts.KeySuffix
	}

	res := &Result{Level: level, Note: sourcesNote}
	var base *catalog.Saveset
	var err error
	switch level {
	case LevelDiff:
		base, err = e.Catalog.LastSaveset(e.Client, selKey, []string{LevelFull}, time.Time{})
	case LevelIncr:
		base, err = e.Catalog.LastSaveset(e.Client, selKey, nil, time.Time{})
	}
	if errors.Is(err, catalog.ErrNotFound) {
		res.Note = fmt.Sprintf("no earlier full backup of %s: running a full backup", selKey)
		level, base, err = LevelFull, nil, nil
		res.Level = level
	}
	if err != nil {
		return nil, err
	}

	lib, err := e.Changer(opts.Library)
	if err != nil {
		return nil, err
	}
	libCfg := lib.Config()
	if err := checkDrive(lib, opts.Drive); err != nil {
		return nil, err
	}
	// Never back up the library or the home into itself.
	skip := []string{libCfg.Dir, e.Home}

	job := opts.Job
	if job == nil {
		job = &catalog.Job{}
	}
	job.Client, job.Selection, job.Level = e.Client, selKey, level
	job, lease, ctx, err := e.holdJob(ctx, job, catalog.KindBackup)
	if err != nil {
		return nil, err
	}
	defer lease.Close()
	start := job.Started
	ss := &catalog.Saveset{JobID: job.ID, Client: e.Client, Selection: selKey, Level: level, Status: "running",
		Created: start, Paths: paths, Label: opts.Label, Codec: opts.Compress.String(), Library: libCfg.Name, Policy: opts.Policy}
	if opts.Sealed {
		if opts.Producer == nil {
			return nil, fmt.Errorf("%w: only a client's agent encrypts a backup", ErrNotSealable)
		}
		ss.Encryption = seal.Scheme
	}
	if base != nil {
		ss.BaseID = base.ID
	}
	// The saveset and the job's record of it, in one commit.
	if err := e.createJobSaveset(ss, job); err != nil {
		job.Error = err.Error()
		return nil, err
	}

	b := &backupRun{env: e, ctx: ctx, opts: opts, job: job, ss: ss, base: base, lib: lib,
		paths: paths, excludes: excludes, skip: skip, res: res}
	// The last backup of the same selection and level is a good guess of
	// the size (0, unknown, without one): progress shows a percentage and
	// the time left.
	if last, err := e.Catalog.LastSaveset(e.Client, selKey, []string{level}, time.Time{}); err == nil {
		b.ticker.total = last.SourceBytes
	}
	runErr := b.run()
	return b.finish(runErr)
}

// backupRun is one backup job in progress.
type backupRun struct {
	env      *Env
	ctx      context.Context
	opts     BackupOptions
	job      *catalog.Job
	ss       *catalog.Saveset
	base     *catalog.Saveset
	lib      library.Changer
	paths    []string
	excludes []string
	skip     []string
	res      *Result

	phase    *monitor.Phase
	ticker   progressTicker
	warnMu   sync.Mutex
	warnings []string
	nwarn    int64
	tapes    []string
	files    int64
}

func (b *backupRun) warn(path, msg string) {
	b.warnMu.Lock()
	defer b.warnMu.Unlock()
	b.nwarn++
	w := msg // a warning about the job, not one file
	if path != "" {
		w = displayPath(path) + ": " + msg
	}
	if len(b.warnings) < maxWarnings {
		b.warnings = append(b.warnings, w)
	}
	b.env.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: b.job.ID, Message: w, Path: path})
}

func (b *backupRun) run() error {
	e := b.env
	msg := fmt.Sprintf("backup (%s) of %s into saveset %d", b.ss.Level, strings.Join(b.paths, ", "), b.ss.ID)
	if b.base != nil {
		msg += fmt.Sprintf(", changes since saveset %d (%s of %s)", b.base.ID, b.base.Level, b.base.Created.Local().Format("2006-01-02 15:04:05"))
	}
	e.announceJob(b.job, msg)
	if b.res.Note != "" {
		e.logf(b.job, "%s", b.res.Note)
	}
	b.phase = e.startPhase(b.job, "backup")
	defer b.phase.End()

	drv, err := e.takeDrive(b.ctx, b.job, b.lib, b.opts.Drive)
	if err != nil {
		return err
	}
	defer drv.Release()
	host := b.opts.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	if b.opts.FrameSize == 0 {
		b.opts.FrameSize = stream.DefaultFrameSize
	}
	label := stream.Label{Format: "kura-saveset", Version: 1, SavesetID: uint64(b.ss.ID), JobID: uint64(b.job.ID),
		Client: e.Client, Host: host, Selection: b.ss.Selection, Paths: b.paths, Level: b.ss.Level,
		Base: uint64(b.ss.BaseID), Created: b.ss.Created, Codec: b.opts.Compress.String(), FrameSize: b.opts.FrameSize, Label: b.opts.Label}
	partLabel := &label
	if b.opts.Sealed {
		partLabel = nil
	}
	tw, err := e.newTapeWriter(b.job, b.lib, drv, b.opts.Pool, partLabel, fmt.Sprintf("saveset %d data", b.ss.ID))
	if err != nil {
		return err
	}
	defer func() { b.tapes = tw.tapes }()
	tw.noteTape = b.ticker.setTape
	b.ticker.setTape(tw.barcode)
	defer b.precount()()
	sw := tw.sw
	swDone := false
	defer func() {
		if !swDone {
			sw.Abort()
		}
	}()
	// The index goes to a temporary file in the home, renamed into place
	// once the saveset is complete.
	idxPath := filepath.Join(home.IndexDir(e.Home), fmt.Sprintf("%d.idx", b.ss.ID))
	idxTmp, err := os.CreateTemp(home.IndexDir(e.Home), fmt.Sprintf("%d.idx.*.tmp", b.ss.ID))
	if err != nil {
		return err
	}
	defer os.Remove(idxTmp.Name())
	defer idxTmp.Close()

	spec := ProduceSpec{JobID: b.job.ID, Paths: b.paths, Excludes: b.excludes, Skip: b.skip,
		Compress: b.opts.Compress, FrameSize: b.opts.FrameSize, Workers: b.opts.Workers, ReadAhead: b.opts.ReadAhead,
		Sources: b.opts.Sources, PartSize: b.opts.PartSize}
	if len(spec.Sources) > 0 {
		spec.Paths = nil
	}
	if b.opts.Sealed {
		spec.Sealed, spec.Label = true, stream.LabelFrame(label)
	}
	if b.base != nil {
		spec.BaseID = b.base.ID
		if b.opts.Producer == nil {
			r, err := e.openIndex(b.base, func(m string) { b.warn("", m) })
			if err != nil {
				return fmt.Errorf("reading the index of base saveset %d: %w", b.base.ID, err)
			}
			defer r.Close()
			spec.Base = r
		}
	}
	producer := b.opts.Producer
	if producer == nil {
		producer = LocalProducer{}
	}
	if _, onNode := b.lib.(interface{ Node() string }); onNode && b.opts.Producer != nil {
		// A storage node's library: a producer that can (an agent's,
		// through the server) has the node write the frames itself.
		spec.Span = &SpanTarget{Device: tw.cur, Barcode: tw.barcode, Label: partLabel,
			Tag: fmt.Sprintf("saveset %d data", b.ss.ID)}
		if tw.allow != nil {
			tapes, err := b.lib.Tapes()
			if err != nil {
				return err
			}
			spec.Span.Allow = []string{}
			for _, t := range tapes {
				if tw.allow(t.Barcode, t.State == library.StateBlank) {
					spec.Span.Allow = append(spec.Span.Allow, t.Barcode)
				}
			}
		}
	}
	hooks := ProduceHooks{Phase: b.phase, Warn: b.warn,
		Tick: func(path string) { e.tick(&b.ticker, b.job.ID, b.phase, path) }}
	prod, err := producer.Produce(b.ctx, spec, sw, idxTmp, hooks)
	if err != nil {
		return err
	}
	b.files = prod.Files
	frames := prod.Frames
	var parts []span.Part
	if prod.Parts != nil {
		// The frames went to tape on the library's own machine.
		sw.Abort()
		swDone = true
		if err := tw.wroteElsewhere(prod.Tapes); err != nil {
			return err
		}
		parts = prod.Parts
		b.ss.MediaBytes = prod.MediaBytes
	} else {
		parts, err = sw.Finish()
		swDone = true
		if err != nil {
			return err
		}
		b.ss.MediaBytes = sw.Bytes()
	}
	b.ss.Parts = toCatalogParts(parts)
	// The phase counted the frames; the part labels and filemarks are on tape
	// too. Count them in the phase so that its Media is the job's.
	b.phase.Media.Add(b.ss.MediaBytes - b.phase.Media.Total())
	b.ss.Files = b.files
	b.ss.SourceBytes = b.phase.Source.Total()
	b.ss.IndexEntries = prod.Entries
	meta := savesetMeta{Host: host, Saveset: *b.ss}
	meta.Saveset.Status = "complete"
	mb, _ := json.Marshal(meta)
	if err := prod.FinishIndex(frames, mb); err != nil {
		return fmt.Errorf("writing the index: %w", err)
	}
	if err := idxTmp.Sync(); err != nil {
		return err
	}
	size, err := idxTmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	b.ss.IndexBytes = size
	if b.opts.Sealed {
		// Nothing of an encrypted index can be checked without the key
		// but that it is an age file: a clear index is not taken as one.
		head := make([]byte, len(seal.Magic))
		if _, err := idxTmp.ReadAt(head, 0); err != nil || !seal.IsSealed(head) {
			return fmt.Errorf("%w: the index of an encrypted saveset is not an age file", ErrBadIndex)
		}
	} else if prod.Untrusted {
		if err := checkIndex(idxTmp, size, prod.Entries, frames); err != nil {
			return fmt.Errorf("%w: %w", ErrBadIndex, err)
		}
	}

	// The index tape file follows the data, on the tape in the drive (or the
	// next one if it does not fit before early warning).
	if b.ss.IndexPart, err = tw.appendIndex(idxTmp, size, fmt.Sprintf("saveset %d index", b.ss.ID), b.ss.Parts); err != nil {
		return err
	}
	e.logf(b.job, "index: tape %s, tape file %d, %s, %s (%.1f bytes per entry)", b.ss.IndexPart.Barcode, b.ss.IndexPart.File,
		units.Count(b.ss.IndexEntries, "entry"), units.FormatSize(size), float64(size)/float64(max(b.ss.IndexEntries, 1)))
	if err := idxTmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(idxTmp.Name(), idxPath); err != nil {
		return err
	}
	if err := fsyncDir(filepath.Dir(idxPath)); err != nil {
		return err
	}
	return nil
}

func toCatalogParts(parts []span.Part) []catalog.Part {
	out := make([]catalog.Part, len(parts))
	for i, p := range parts {
		out[i] = catalog.Part{Barcode: p.Barcode, File: p.File, Bytes: p.Bytes}
	}
	return out
}

// finish records the outcome in the catalog, runs the verify phase, ends
// the job and builds the result.
func (b *backupRun) finish(runErr error) (*Result, error) {
	e := b.env
	end := e.now()
	ss, job := b.ss, b.job
	e.endPhase(job, b.phase)
	ss.Finished = end
	if runErr == nil {
		// A job another process reclaimed (its lease lost) never marks its
		// saveset complete: the reclaimer recorded it incomplete.
		runErr = e.stillHeld(job)
	}
	if runErr != nil {
		b.files = b.phase.Files.Total()
	}
	ss.Files = b.files
	ss.SourceBytes = b.phase.Source.Total()
	ss.Status = catalog.StatusComplete
	if runErr != nil {
		ss.Status = catalog.StatusFailed
	}
	job.Files = b.files
	job.SourceBytes = ss.SourceBytes
	job.MediaBytes = b.phase.Media.Total()
	if ss.MediaBytes > 0 {
		job.MediaBytes = ss.MediaBytes // everything on tape, part labels included
	}
	job.Tapes = b.tapes
	job.Warnings = b.warnings
	job.WarningCount = b.nwarn
	job.AvgRate = b.phase.Source.Average()
	job.PeakRate = b.phase.Source.Peak()
	if err := e.Catalog.UpdateSaveset(ss); err != nil && runErr == nil {
		runErr = err
	}

	var errText string
	if runErr == nil && b.opts.Verify {
		level := VerifyData
		if ss.Encryption != "" {
			// No key here: the block checksums over the ciphertext are
			// what can be checked (a data verify runs on the agent).
			level = VerifyMedia
			e.logf(job, "verify: saveset %d is encrypted: checking its media (block checksums) here", ss.ID)
		}
		vr, verr := e.verifySaveset(b.ctx, ss, VerifyOptions{Level: level}, job.ID)
		if vr != nil {
			job.Phases = append(job.Phases, vr.phase)
			for _, w := range vr.Warnings {
				b.warn("", w)
			}
			job.Warnings, job.WarningCount = b.warnings, b.nwarn
		}
		if verr != nil {
			errText = "verify: " + verr.Error()
			runErr = verr
		}
	}
	runErr = e.endJob(job, runErr, jobEnd{finished: end, errText: errText,
		summary: fmt.Sprintf("%s, %s read, %s on tape, %s", units.Count(job.Files, "file"), units.FormatSize(job.SourceBytes),
			units.FormatSize(job.MediaBytes), units.Count(job.WarningCount, "warning"))})
	b.res.Warnings = b.warnings
	b.res.Figures = JobFigures(job, ss)
	if runErr != nil {
		return b.res, runErr
	}
	if b.nwarn > 0 {
		return b.res, fmt.Errorf("backup %w: %s", ErrWarnings, units.Count(int64(b.nwarn), "warning"))
	}
	return b.res, nil
}

// displayPath is the one way a file is named in warnings (index.DisplayPath).
func displayPath(p string) string { return index.DisplayPath(p) }

// JobFigures turns a job record into the Job Monitor figures.
func JobFigures(job *catalog.Job, ss *catalog.Saveset) monitor.Figures {
	f := monitor.Figures{JobID: job.ID, Kind: job.Kind, Level: job.Level, Files: job.Files,
		SourceBytes: job.SourceBytes, MediaBytes: job.MediaBytes,
		Tapes: job.Tapes, Warnings: job.WarningCount, Status: statusText(job.State)}
	if ss != nil {
		f.SavesetID = ss.ID
	}
	if f.Tapes == nil {
		f.Tapes = []string{}
	}
	if len(job.Phases) > 0 {
		p := job.Phases[0]
		f.AvgKBps = p.AvgRate / 1024
		f.PeakKBps = p.PeakRate / 1024
	}
	f.ElapsedSeconds = job.Finished.Sub(job.Started).Seconds()
	f.CompressionRatio = units.Ratio(job.SourceBytes, job.MediaBytes)
	for _, p := range job.Phases {
		f.Phases = append(f.Phases, monitor.PhaseFigures{Name: p.Name, Files: p.Files, SourceBytes: p.Bytes,
			MediaBytes: p.MediaBytes, AvgKBps: units.KBps(p.AvgRate), PeakKBps: units.KBps(p.PeakRate),
			ElapsedSeconds: p.End.Sub(p.Start).Seconds(), CompressionRatio: units.Ratio(p.Bytes, p.MediaBytes)})
	}
	return f
}

func statusText(state string) string {
	switch state {
	case catalog.StateSucceeded:
		return "completed"
	case catalog.StateWarnings:
		return "completed with warnings"
	}
	return state
}

// checkIndex reads an index back whole (every block's checksum) and checks
// that it holds the entries and the frame table of the stream on tape.
func checkIndex(f io.ReaderAt, size, entries int64, frames []index.Frame) error {
	r, err := index.Open(f, size)
	if err != nil {
		return err
	}
	if r.Len() != entries {
		return fmt.Errorf("%d entries, the stream ended with %d", r.Len(), entries)
	}
	got := r.Frames()
	if len(got) != len(frames) {
		return fmt.Errorf("%d frames, %d went to tape", len(got), len(frames))
	}
	for i, fr := range frames {
		if g := got[i]; g.CSize != fr.CSize || g.Part != fr.Part || g.PartOffset != fr.PartOffset {
			return fmt.Errorf("frame %d: %d bytes at part %d offset %d; on tape %d bytes at part %d offset %d",
				i, g.CSize, g.Part, g.PartOffset, fr.CSize, fr.Part, fr.PartOffset)
		}
	}
	n := int64(0)
	it := r.Iter()
	for it.Next() {
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	if n != entries {
		return fmt.Errorf("%d entries read back, %d listed", n, entries)
	}
	return nil
}

// Bounds of a backup's pre-count: past either, it gives up and the
// progress goes on without a total.
var (
	precountMaxTime    = 20 * time.Second
	precountMaxEntries = 2_000_000
)

// errPrecountBound ends a pre-count that reached precountMaxEntries.
var errPrecountBound = errors.New("pre-count bound reached")

// precount gives a backup with nothing to go by (no earlier backup of the
// selection at its level) a total: a quick walk of the selection, run
// beside the backup, counting the bytes of its regular files (stat only,
// no file is read). When it finishes, progress shows a percentage and the
// time left from then on. It never delays the backup: it gives up after
// precountMaxTime or precountMaxEntries entries, and the backup's end
// stops it. Only a full backup of this machine's files is pre-counted (an
// incremental's size is what changed, which a walk does not know; an
// agent's files are on the agent). The returned func stops it and waits.
func (b *backupRun) precount() (stop func()) {
	if b.ticker.total > 0 || b.ss.Level != LevelFull || b.opts.Producer != nil || len(b.opts.Sources) > 0 {
		return func() {}
	}
	ctx, cancel := context.WithTimeout(b.ctx, precountMaxTime)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var bytes int64
		entries := 0
		err := walk.Walk(ctx, b.paths, walk.Options{Excludes: b.excludes, SkipPaths: b.skip}, func(it *walk.Item) error {
			if entries++; entries > precountMaxEntries {
				return errPrecountBound
			}
			if it.Entry.Type == index.TypeFile {
				bytes += it.Entry.Size
			}
			return nil
		}, nil)
		if err != nil || bytes == 0 {
			return // gave up, or the backup ended first: no total
		}
		b.ticker.estimate.Store(bytes)
		// Say so now, not at the next tick of the backup.
		b.env.emit(monitor.Event{Kind: monitor.Progress, JobID: b.job.ID, Phase: b.phase.Name, Files: b.phase.Files.Total(),
			Bytes: b.phase.Source.Total(), Rate: b.phase.Source.Average(), Total: bytes, Tape: b.ticker.currentTape()})
	}()
	return func() {
		cancel()
		<-done
	}
}
