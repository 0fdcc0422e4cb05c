package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/restorer"
	"github.com/kura-backup/kura/internal/rules"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/units"
)

// Overwrite policies of a restore.
const (
	OverwriteNever  = rules.OverwriteNever
	OverwriteOlder  = rules.OverwriteOlder
	OverwriteAlways = rules.OverwriteAlways
)

// RestoreOptions say what to restore and where.
type RestoreOptions struct {
	SavesetID int64     // the saveset whose moment to restore (0: see Latest/At)
	Latest    bool      // the newest complete saveset (of Selection, if given)
	Selection string    // with Latest or At: which selection set
	At        time.Time // the newest complete saveset made at or before this time
	To        string    // target folder; exactly one of To and InPlace
	InPlace   bool      // restore to the original places ("/"), over what is there
	Includes  []string  // paths or globs; with Paths empty = everything (see restorer.Selection)
	Paths     []string  // exact paths in the saveset, taken literally, a folder with its subtree
	Overwrite string    // never, older, always (default)
	Sync      bool      // wait until the restored files are on disk (one syncfs at the end)
	// Into is a command or database to restore one file into, instead of
	// To or InPlace (a command or plug-in saveset).
	Into plugin.Target
}

// selection is what the options select.
func (o RestoreOptions) selection() restorer.Selection {
	return restorer.Selection{Includes: o.Includes, Paths: o.Paths}
}

// ErrRestoreTarget: a restore says neither where to write (To) nor that it
// may write over the original places (InPlace), or says both.
var ErrRestoreTarget = restorer.ErrRestoreTarget

// ErrNothingToRestore: the --include patterns and --path paths of a restore select nothing
// in the saveset. A restore that would write nothing is not a success.
var ErrNothingToRestore = restorer.ErrNothingToRestore

// restoreTarget is the folder a restore writes into, or ErrRestoreTarget.
func restoreTarget(opts RestoreOptions) (string, error) {
	if opts.Into.IsSet() {
		if opts.To != "" || opts.InPlace {
			return "", fmt.Errorf("%w (not --to or --in-place as well as --to-command or --to-db)", ErrRestoreTarget)
		}
		if err := opts.Into.Validate(); err != nil {
			return "", fmt.Errorf("%w: %w", ErrBadOption, err)
		}
		if opts.Into.Database != "" {
			return "database " + opts.Into.Database, nil
		}
		if opts.Into.Cluster != "" {
			return "cluster folder " + opts.Into.Cluster, nil
		}
		return "a command", nil
	}
	return restorer.Target(restorer.Options{To: opts.To, InPlace: opts.InPlace})
}

// ChooseSaveset finds the saveset a restore means.
func (e *Env) ChooseSaveset(opts RestoreOptions) (*catalog.Saveset, error) {
	switch {
	case opts.SavesetID != 0:
		ss, err := e.Catalog.Saveset(opts.SavesetID)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, Missing("saveset", "no saveset %d", opts.SavesetID)
		}
		if err != nil {
			return nil, err
		}
		if ss.Expired {
			return nil, fmt.Errorf("saveset %d has expired; its data may be overwritten", ss.ID)
		}
		if ss.Status != "complete" {
			return nil, sayf(ErrNotComplete, "saveset %d is %s, not complete: choose another", ss.ID, ss.Status)
		}
		return ss, nil
	case opts.Selection == "" && opts.Into.Recovery.Cluster != "":
		// Point-in-time recovery from WAL archive C: the newest base
		// backup of cluster C (--cluster C), or one that names no cluster,
		// made at or before the moment.
		before := opts.At
		if !before.IsZero() {
			before = before.Add(time.Nanosecond)
		}
		// Known by its path, not its selection key: a policy's selection
		// set names its savesets after the set.
		sets, err := e.Catalog.Savesets(catalog.SavesetFilter{Clients: []string{e.Client}, Statuses: []string{catalog.StatusComplete}, Before: before})
		if err != nil {
			return nil, err
		}
		var best *catalog.Saveset
		for _, ss := range sets {
			if ss.Expired || (best != nil && (ss.Created.Before(best.Created) || ss.Created.Equal(best.Created) && ss.ID < best.ID)) {
				continue
			}
			if slices.Contains(ss.Paths, baseBackupPath+":"+opts.Into.Recovery.Cluster) || slices.Contains(ss.Paths, baseBackupPath) {
				best = ss
			}
		}
		if best == nil {
			return nil, Missing("saveset", "no complete base backup (--plugin postgresql-cluster) of cluster %s matches; give its saveset ID", opts.Into.Recovery.Cluster)
		}
		return best, nil
	case opts.Latest || !opts.At.IsZero():
		before := opts.At
		if !before.IsZero() {
			before = before.Add(time.Nanosecond) // at or before
		}
		ss, err := e.Catalog.LastSaveset(e.Client, opts.Selection, nil, before)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, Missing("saveset", "no complete saveset matches")
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
	job := restorer.Job{ID: jobID, Clock: e.Clock, Events: e.Events, Total: total}
	var o *restorer.Outcome
	var err error
	if opts.Into.IsSet() {
		o, err = restorer.Pipe(ctx, newRestorerStore(store, ss), restorerSaveset(ss), restorer.Into(ctx, opts.Into, opts.selection()), job)
	} else {
		ro := restorer.Options{To: opts.To, InPlace: opts.InPlace, Includes: opts.Includes, Paths: opts.Paths, Overwrite: opts.Overwrite, Sync: opts.Sync}
		o, err = restorer.Run(ctx, newRestorerStore(store, ss), restorerSaveset(ss), ro, job)
	}
	out := &RestoreOutcome{To: o.To, Phase: catalog.Phase(o.Phase), Files: o.Files, Bytes: o.Bytes,
		MediaBytes: o.MediaBytes, Warnings: o.Warnings, WarningCount: o.WarningCount, Failed: o.Failed,
		Skipped: o.Skipped, Tapes: o.Tapes, Sources: o.Sources}
	return out, err
}

// FinishRestore records a restore's outcome in its job, ends the job and
// builds the result.
func (e *Env) FinishRestore(job *catalog.Job, ss *catalog.Saveset, opts RestoreOptions, out *RestoreOutcome, runErr error) (*Result, error) {
	if out == nil {
		out = &RestoreOutcome{}
	}
	if opts.Overwrite == "" {
		opts.Overwrite = OverwriteAlways
	}
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
	for _, id := range out.Sources {
		if id != ss.ID {
			e.logf(job, "read unchanged files from saveset %d", id)
		}
	}
	runErr = e.endJob(job, runErr, jobEnd{summary: fmt.Sprintf("%s, %s written, %s", units.Count(job.Files, "entry"),
		units.FormatSize(job.SourceBytes), units.Count(job.WarningCount, "warning"))})
	res := &Result{Level: ss.Level, Warnings: out.Warnings, Figures: JobFigures(job, ss)}
	if out.Skipped > 0 {
		res.Note = fmt.Sprintf("%d existing files kept (--overwrite %s)", out.Skipped, opts.Overwrite)
	}
	res.Figures.MediaBytes = out.MediaBytes
	res.Figures.CompressionRatio = units.Ratio(res.Figures.SourceBytes, res.Figures.MediaBytes)
	if runErr != nil {
		return res, runErr
	}
	if out.WarningCount > 0 {
		return res, fmt.Errorf("restore %w: %s", ErrWarnings, units.Count(int64(out.WarningCount), "warning"))
	}
	return res, nil
}

// restorerStore is a SavesetStore as the restorer reads it: the records it
// hands out are kept, for the store's index and data calls.
type restorerStore struct {
	store SavesetStore
	mu    sync.Mutex
	recs  map[int64]*catalog.Saveset
}

func newRestorerStore(store SavesetStore, ss *catalog.Saveset) *restorerStore {
	return &restorerStore{store: store, recs: map[int64]*catalog.Saveset{ss.ID: ss}}
}

func restorerSaveset(ss *catalog.Saveset) *restorer.Saveset {
	out := &restorer.Saveset{ID: ss.ID}
	for _, p := range ss.Parts {
		out.Tapes = append(out.Tapes, p.Barcode)
	}
	return out
}

func (s *restorerStore) rec(ss *restorer.Saveset) (*catalog.Saveset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recs[ss.ID]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("saveset %d: %w", ss.ID, catalog.ErrNotFound)
}

func (s *restorerStore) Saveset(id int64) (*restorer.Saveset, error) {
	ss, err := s.store.Saveset(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.recs[id] = ss
	s.mu.Unlock()
	return restorerSaveset(ss), nil
}

func (s *restorerStore) OpenIndex(ss *restorer.Saveset, warn func(msg string)) (*index.Reader, error) {
	r, err := s.rec(ss)
	if err != nil {
		return nil, err
	}
	return s.store.OpenIndex(r, warn)
}

func (s *restorerStore) Data(ss *restorer.Saveset) (stream.FrameSource, error) {
	r, err := s.rec(ss)
	if err != nil {
		return nil, err
	}
	return s.store.Data(r)
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

// chainPlan is what checkChain found before a restore.
type chainPlan struct {
	total int64            // bytes of file content the restore will write
	ss    *catalog.Saveset // the chosen saveset, or the copy it is read through
	notes []string         // one line per saveset read from a copy, for the job log
	// warnings found while planning (a damaged index cache rebuilt), for
	// the job's warnings.
	warnings []string
	// unmatched are the --include patterns and --path paths that select
	// nothing (warnings of the restore; when all do, checkChain fails
	// with ErrNothingToRestore).
	unmatched []restorer.Pick
}

// checkChain makes sure that every saveset a restore will read exists, is
// complete, and that its tapes are online, before anything is written. With
// copies, a saveset whose own tapes are offline is read from a copy whose
// tapes are all online (see readable); only when no copy is either does the
// restore fail, naming the saveset's own exported tapes with the command
// that brings them back.
func (e *Env) checkChain(ss *catalog.Saveset, sel restorer.Selection, copies bool) (*chainPlan, error) {
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
	if ss.Encryption != "" {
		if err := e.sealedChain(ss, plan, use); err != nil {
			return nil, err
		}
		if len(offline) > 0 {
			return nil, offlineError(offline)
		}
		return plan, nil
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
	tally := sel.Tally()
	it := idx.Iter()
	for it.Next() {
		en := it.Entry()
		if !tally.Add(en.Path, en.Type == index.TypeFile) || en.Type != index.TypeFile {
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
	plan.unmatched = tally.Unmatched()
	if !sel.All() && len(plan.unmatched) == len(sel.Picks()) {
		return nil, &NoMatchError{Saveset: ss.ID, Picks: sel.Picks()}
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

// sealedChain is checkChain's look at the chain of an encrypted saveset,
// whose index only its client's agent reads: the chain is every base down
// to the full (what an incremental's unchanged files can refer to), the
// bytes to write the saveset's source bytes, and the includes are matched
// by the agent.
func (e *Env) sealedChain(ss *catalog.Saveset, plan *chainPlan, use func(*catalog.Saveset) (*catalog.Saveset, error)) error {
	plan.total = ss.SourceBytes
	for cur := ss; cur.BaseID != 0; {
		s, err := e.Catalog.Saveset(cur.BaseID)
		if err != nil {
			return fmt.Errorf("saveset %d, the base of saveset %d: %w", cur.BaseID, cur.ID, err)
		}
		if s.Status != catalog.StatusComplete || s.Expired {
			return fmt.Errorf("saveset %d, the base of saveset %d, is %s", s.ID, cur.ID, savesetState(s))
		}
		if _, err := use(s); err != nil {
			return err
		}
		cur = s
	}
	return nil
}

// joinPicks lists --include patterns and --path paths as a user typed them.
func joinPicks(picks []restorer.Pick) string {
	out := make([]string, len(picks))
	for i, k := range picks {
		out[i] = k.String()
	}
	return strings.Join(out, ", ")
}

// offlineError names the exported tapes a restore needs.
func offlineError(barcodes []string) error {
	sort.Strings(barcodes)
	return sayf(ErrTapesOffline, "this restore needs tapes that are exported (offline): %s", strings.Join(barcodes, ", "))
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
	paths := make([]string, len(opts.Paths))
	for i, p := range opts.Paths {
		if paths[i], err = rules.RestorePath(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
		}
	}
	opts.Paths = paths
	ss, err := e.ChooseSaveset(opts)
	if err != nil {
		return nil, err
	}
	if opts.InPlace && SourcesSaveset(ss) {
		// Its files have no original place: a name such as stdout or
		// postgresql/app.dump would land in "/".
		return nil, fmt.Errorf("%w: saveset %d holds the output of commands or plug-ins (%s): restore it --to DIR, --to-command or --to-db, not --in-place",
			ErrBadOption, ss.ID, strings.Join(ss.Paths, ", "))
	}
	plan, err := e.checkChain(ss, opts.selection(), true)
	if err != nil {
		return nil, err
	}
	if job == nil {
		job = &catalog.Job{}
	}
	job.Client, job.Selection, job.SavesetID, job.Level = e.Client, ss.Selection, ss.ID, ss.Level
	for _, n := range plan.notes {
		e.logf(job, "%s", n)
	}
	job, lease, _, err := e.beginJob(ctx, job, catalog.KindRestore, fmt.Sprintf("restore of saveset %d (%s of %s) to %s",
		ss.ID, ss.Level, ss.Created.Local().Format("2006-01-02 15:04:05"), to))
	if err != nil {
		return nil, err
	}
	defer lease.Close()
	out, runErr := run(plan.ss, job.ID, plan.total)
	if out == nil {
		out = &RestoreOutcome{To: to}
	}
	for _, w := range plan.warnings {
		e.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: job.ID, Message: w})
	}
	out.Warnings = append(append([]string{}, plan.warnings...), out.Warnings...)
	out.WarningCount += int64(len(plan.warnings))
	for _, k := range plan.unmatched {
		// Like a missing path of a backup: the rest is restored, the job
		// ends with warnings.
		out.Warnings = append([]string{fmt.Sprintf("%s: matches nothing in saveset %d", k, ss.ID)}, out.Warnings...)
		out.WarningCount++
	}
	return e.FinishRestore(job, plan.ss, opts, out, runErr)
}
