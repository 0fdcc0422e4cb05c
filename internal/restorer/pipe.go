package restorer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/stream"
)

// A Sink takes one restored file instead of a folder: a command's
// standard input, a database. Close says whether the receiver took it
// (its exit status); Abort ends it after a failure.
type Sink interface {
	io.WriteCloser
	Abort()
}

// PipeOptions say which file of a saveset to restore into a sink.
type PipeOptions struct {
	Selection // which files may be chosen; everything = every file
	// Want narrows the files further (nil: every file), e.g. to database
	// dumps; the restore needs exactly one file left.
	Want func(path string) bool
	// Open starts the receiver of the chosen file.
	Open func(path string) (Sink, error)
}

// ErrAmbiguous: a restore into a command or a database found more than
// one file to restore; --include chooses one.
var ErrAmbiguous = errors.New("more than one file to restore")

// Pipe restores one file of a saveset (all its parts, in order) into the
// sink PipeOptions.Open gives. The file is chosen from the saveset's
// own entries (a command's saveset is always a full backup).
func Pipe(ctx context.Context, store Store, ss *Saveset, opts PipeOptions, job Job) (*Outcome, error) {
	if job.Clock == nil {
		job.Clock = monitor.SystemClock{}
	}
	out := &Outcome{}
	r := &restoreRun{ctx: ctx, ss: ss, job: job, store: store,
		phase: monitor.StartPhase(job.Clock, "restore"), sources: map[int64]*sourceReader{}}
	r.ticker.total = job.Total
	if len(ss.Tapes) > 0 {
		r.ticker.setTape(ss.Tapes[0])
	}
	runErr := r.pipe(opts)
	r.close()
	r.phase.End()
	start := r.phase.Source.Start()
	out.Phase = Phase{Name: r.phase.Name, Start: start, End: start.Add(r.phase.Elapsed()), Files: r.phase.Files.Total(),
		Bytes: r.phase.Source.Total(), MediaBytes: r.phase.Media.Total(), AvgRate: r.phase.Source.Average(),
		PeakRate: r.phase.Source.Peak()}
	out.Files = r.files.Load()
	out.Bytes = r.phase.Source.Total()
	out.MediaBytes = r.phase.Media.Total()
	out.Warnings, out.WarningCount = r.warnings, r.nwarn
	out.Tapes = r.tapes
	out.Sources = []int64{ss.ID}
	return out, runErr
}

func (r *restoreRun) pipe(opts PipeOptions) error {
	idx, err := r.store.OpenIndex(r.ss, r.warnIndex)
	if err != nil {
		return err
	}
	// The chosen file and its parts.
	var chosen []index.Entry
	var names []string
	sel := opts.matcher()
	it := idx.Iter()
	for it.Next() {
		e := *it.Entry()
		if e.Type != index.TypeFile {
			continue
		}
		if e.Flags&index.FlagPart != 0 {
			if len(names) == 1 && len(chosen) > 0 && strings.HasPrefix(e.Path, chosen[0].Path+plugin.PartSuffix) {
				chosen = append(chosen, e)
			}
			continue
		}
		if !sel.selects(e.Path) || (opts.Want != nil && !opts.Want(e.Path)) {
			continue
		}
		names = append(names, index.DisplayPath(e.Path))
		if len(names) == 1 {
			chosen = append(chosen, e)
		}
	}
	err = it.Err()
	idx.Close()
	if err != nil {
		return fmt.Errorf("reading the index of saveset %d: %w", r.ss.ID, err)
	}
	switch {
	case len(names) == 0:
		return fmt.Errorf("%w: no file of saveset %d is selected", ErrNothingToRestore, r.ss.ID)
	case len(names) > 1:
		return fmt.Errorf("%w: saveset %d holds %s; choose one with --include or --path", ErrAmbiguous, r.ss.ID, strings.Join(names, ", "))
	}
	for _, e := range chosen {
		if e.Flags&index.FlagUnchanged != 0 {
			return fmt.Errorf("%s: its content is in saveset %d: restore that saveset", index.DisplayPath(e.Path), e.Source)
		}
	}
	sink, err := opts.Open(chosen[0].Path)
	if err != nil {
		return err
	}
	if r.copyBuf == nil {
		r.copyBuf = make([]byte, 1<<20)
	}
	for i := range chosen {
		e := &chosen[i]
		r.tick(e.Path)
		if err := r.pipeEntry(sink, e); err != nil {
			sink.Abort()
			return err
		}
	}
	if err := sink.Close(); err != nil {
		return err
	}
	r.counted()
	return nil
}

// pipeEntry copies one entry's content into the sink and checks its digest.
func (r *restoreRun) pipeEntry(sink Sink, e *index.Entry) error {
	s, err := r.open(e)
	if err != nil {
		return fmt.Errorf("%s: %w", index.DisplayPath(e.Path), err)
	}
	dg := stream.NewDigest()
	n, err := io.CopyBuffer(io.MultiWriter(sink, dg), s.rd, r.copyBuf)
	r.phase.Source.Add(n)
	if err != nil {
		return fmt.Errorf("%s: %w", index.DisplayPath(e.Path), err)
	}
	if stream.SumDigest(dg) != e.Digest {
		return fmt.Errorf("%s: saveset %d: content does not match its digest", index.DisplayPath(e.Path), s.ss.ID)
	}
	return nil
}

// Into are the options of a restore into a command or a database (a
// database takes a pg_dump file; --include chooses among several).
func Into(ctx context.Context, t plugin.Target, sel Selection) PipeOptions {
	po := PipeOptions{Selection: sel, Open: func(name string) (Sink, error) { return t.Open(ctx, name) }}
	switch {
	case t.Database != "":
		po.Want = func(p string) bool { return plugin.DumpDatabase(p) != "" || plugin.MariaDBDatabase(p) != "" }
	case t.Cluster != "":
		po.Want = func(p string) bool { return p == plugin.ClusterBase || p == plugin.MariaDBPhysical }
	}
	return po
}
