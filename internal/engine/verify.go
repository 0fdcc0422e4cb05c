package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

// Verify levels.
const (
	VerifyMedia  = "media"  // every block's checksum: is the media readable?
	VerifyData   = "data"   // decode the stream, re-hash every file against the index
	VerifySource = "source" // data, and compare with the files on disk now
)

// VerifyOptions say how deep to verify.
type VerifyOptions struct {
	Level  string  // media, data (default) or source
	Sample float64 // percent of files to check at the data level; 0 or 100 = all
	// Job is the queued job row the verify runs as (a server's queue);
	// nil records a new one.
	Job *catalog.Job
}

// Problem is one thing verify found wrong.
type Problem struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// VerifyResult is the outcome of a verify.
type VerifyResult struct {
	Figures  monitor.Figures `json:"figures"`
	Level    string          `json:"level"`
	Checked  int64           `json:"checked_files"`
	Problems []Problem       `json:"problems"`
	// Warnings are what verify repaired without a problem in the saveset
	// (a damaged index cache rebuilt from its tape).
	Warnings []string `json:"warnings"`
	phase    catalog.Phase
}

// ErrVerify is returned (wrapped) when verify found damage or differences.
var ErrVerify = errors.New("verify found problems")

// Verify checks a saveset as its own job.
func (e *Env) Verify(ctx context.Context, id int64, opts VerifyOptions) (*VerifyResult, error) {
	ss, err := e.Catalog.Saveset(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("saveset", "no saveset %d", id)
	}
	if err != nil {
		return nil, err
	}
	if opts.Level == VerifySource && SourcesSaveset(ss) {
		return nil, fmt.Errorf("%w: saveset %d holds the output of commands or plug-ins (%s), not files on disk: verify media or data", ErrBadOption, ss.ID, strings.Join(ss.Paths, ", "))
	}
	return e.verifyJob(ctx, ss, opts, fmt.Sprintf("saveset %d (%s of %s)", ss.ID, ss.Level, ss.Created.Local().Format("2006-01-02 15:04:05")))
}

// verifyJob runs a verify of the saveset record read (a saveset, or the
// view of one of its copies) as a job of its own; what names it in the log.
func (e *Env) verifyJob(ctx context.Context, read *catalog.Saveset, opts VerifyOptions, what string) (*VerifyResult, error) {
	level := opts.Level
	if level == "" {
		level = VerifyData
	}
	// A verify job's level is the verify level (media, data, source).
	job := opts.Job
	if job == nil {
		job = &catalog.Job{}
	}
	job.Client, job.Selection, job.SavesetID, job.Level = read.Client, read.Selection, read.ID, level
	job, held, ctx, err := e.beginJob(ctx, job, catalog.KindVerify, fmt.Sprintf("verify (%s) of %s", level, what))
	if err != nil {
		return nil, err
	}
	defer held.Close()
	res, verr := e.verifySaveset(ctx, read, opts, job.ID)
	var rec *VerifyRecord
	if res != nil {
		e.logf(job, "%s checked, %s", units.Count(int64(res.Checked), "file"), units.Count(int64(len(res.Problems)), "problem"))
		job.Phases = []catalog.Phase{res.phase}
		job.Files, job.SourceBytes, job.MediaBytes = res.phase.Files, res.phase.Bytes, res.phase.MediaBytes
		job.AvgRate, job.PeakRate = res.phase.AvgRate, res.phase.PeakRate
		for _, p := range res.Problems {
			if len(job.Warnings) < maxWarnings {
				job.Warnings = append(job.Warnings, p.Path+": "+p.Problem)
			}
			job.WarningCount++
		}
		for _, w := range res.Warnings {
			if len(job.Warnings) < maxWarnings {
				job.Warnings = append(job.Warnings, w)
			}
			job.WarningCount++
		}
		rec = &VerifyRecord{Level: res.Level, Checked: res.Checked, Problems: res.Problems, Warnings: res.Warnings}
	}
	if verr == nil && res != nil && len(res.Warnings) > 0 {
		verr = fmt.Errorf("verify %w: %d warnings", ErrWarnings, len(res.Warnings))
	}
	if rec == nil {
		verr = e.endJob(job, verr, jobEnd{})
	} else {
		verr = e.endJob(job, verr, jobEnd{result: rec})
	}
	if res != nil {
		res.Figures = JobFigures(job, read)
	}
	return res, verr
}

// VerifyRecord is what a verify job keeps as its result
// (catalog.Job.Result): a VerifyResult without its figures, which the job
// has.
type VerifyRecord struct {
	Level    string    `json:"level"`
	Checked  int64     `json:"checked_files"`
	Problems []Problem `json:"problems"`
	Warnings []string  `json:"warnings"`
}

// verifySaveset runs the verify phase; it is also the verify phase of a
// backup job (--verify).
func (e *Env) verifySaveset(ctx context.Context, ss *catalog.Saveset, opts VerifyOptions, jobID int64) (*VerifyResult, error) {
	if opts.Level == "" {
		opts.Level = VerifyData
	}
	if opts.Level != VerifyMedia && opts.Level != VerifyData && opts.Level != VerifySource {
		return nil, fmt.Errorf("unknown verify level %q (media, data or source)", opts.Level)
	}
	if opts.Sample < 0 || opts.Sample > 100 {
		return nil, fmt.Errorf("--sample must be between 0 and 100 percent")
	}
	phase := monitor.StartPhase(e.Clock, "verify")
	e.emit(monitor.Event{Kind: monitor.PhaseStarted, JobID: jobID, Phase: "verify"})
	v := &verifyRun{env: e, ctx: ctx, ss: ss, opts: opts, phase: phase, jobID: jobID}
	v.labels()
	var err error
	if opts.Level == VerifyMedia {
		err = v.media()
	} else {
		err = v.data()
	}
	phase.End()
	e.emit(monitor.Event{Kind: monitor.PhaseEnded, JobID: jobID, Phase: "verify"})
	res := &VerifyResult{Level: opts.Level, Checked: v.checked, Problems: v.problems, Warnings: v.warnings, phase: phaseRecord(phase)}
	if res.Problems == nil {
		res.Problems = []Problem{}
	}
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	if err != nil {
		return res, err
	}
	if len(v.problems) > 0 {
		return res, fmt.Errorf("saveset %d: %w: %d", ss.ID, ErrVerify, len(v.problems))
	}
	return res, nil
}

type verifyRun struct {
	env      *Env
	ctx      context.Context
	ss       *catalog.Saveset
	opts     VerifyOptions
	phase    *monitor.Phase
	jobID    int64
	ticker   progressTicker // total: the bytes to check, from the catalog or the index
	checked  int64
	problems []Problem
	warnings []string
}

// problem records a problem with the file at path (an index path), named
// as warnings name files (displayPath).
func (v *verifyRun) problem(path, msg string) {
	v.problems = append(v.problems, Problem{Path: displayPath(path), Problem: msg})
}

// mediaProblemAt records a problem with a piece of media (a tape, a
// label) named as it is, not as a file.
func (v *verifyRun) mediaProblemAt(what, msg string) {
	v.problems = append(v.problems, Problem{Path: what, Problem: msg})
}

// mediaProblem records a problem with a tape file as a whole.
func (v *verifyRun) mediaProblem(p catalog.Part, msg string) {
	v.problems = append(v.problems, Problem{Path: fmt.Sprintf("tape %s file %d", p.Barcode, p.File), Problem: msg})
}

func (v *verifyRun) warn(msg string) {
	v.warnings = append(v.warnings, msg)
	v.env.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: v.jobID, Phase: "verify", Message: msg})
}

// labels reports every tape of the saveset whose label is damaged. The
// tape still reads (from the label's other copy, see package tape), but
// one more bit and it would not: verify says so at every level.
func (v *verifyRun) labels() {
	open := v.env.tapeOpener()
	seen := map[string]bool{}
	for _, p := range append(append([]catalog.Part{}, v.ss.Parts...), v.ss.IndexPart) {
		if p.Barcode == "" || seen[p.Barcode] {
			continue
		}
		seen[p.Barcode] = true
		dev, err := open(p.Barcode)
		if err != nil {
			continue // reading the tape reports it
		}
		t, ok := dev.(library.LabelReporter)
		if !ok {
			dev.Close()
			continue
		}
		d := t.LabelDamage()
		lost := d != nil && t.LabelLost()
		dev.Close() // a tape library's cartridge holds a drive while open
		switch {
		case lost:
			v.mediaProblemAt("tape "+p.Barcode, d.Error()+"; the tape reads, but takes no more backups: copy its savesets (kura copy), then erase it")
		case d != nil:
			v.mediaProblemAt("tape "+p.Barcode, d.Error()+"; the next append to the tape rewrites it")
		}
	}
}

// media reads every block of every tape file of the saveset; each block's
// CRC-32C is checked as it is read. A bad block is mapped to the files
// whose data it holds.
func (v *verifyRun) media() error {
	open := v.env.tapeOpener()
	parts := append(append([]catalog.Part{}, v.ss.Parts...), v.ss.IndexPart)
	for _, p := range v.ss.Parts {
		v.ticker.total += p.Bytes
	}
	v.ticker.total += max(v.ss.IndexPart.Bytes, v.ss.IndexBytes)
	for i, p := range parts {
		v.ticker.setTape(p.Barcode)
		dev, err := open(p.Barcode)
		if err != nil {
			return err
		}
		fr, err := dev.Open(p.File)
		if err != nil {
			dev.Close()
			v.mediaProblem(p, err.Error())
			continue
		}
		buf := make([]byte, 1<<20)
		var off int64
		isIndex := i == len(v.ss.Parts)
		sum := sha256.New()
		clean := true
		for {
			if err := v.ctx.Err(); err != nil {
				fr.Close()
				dev.Close()
				return err
			}
			n, err := fr.Read(buf)
			if isIndex {
				sum.Write(buf[:n])
			}
			off += int64(n)
			v.phase.Media.Add(int64(n))
			v.phase.Source.Add(int64(n)) // at this level the checked bytes are the media
			v.env.tick(&v.ticker, v.jobID, v.phase, "")
			if err == io.EOF {
				break
			}
			if err != nil {
				clean = false
				v.mediaProblem(p, err.Error())
				if i < len(v.ss.Parts) {
					v.affected(i, err)
				}
				// Go on after a bad block: every damaged block is found.
				var ce *tape.CorruptError
				if !errors.As(err, &ce) || ce.Block < 0 {
					break
				}
				next := (ce.Block + 1) * int64(fr.Info().BlockSize)
				if next >= fr.Info().Bytes {
					break
				}
				if off, err = fr.Seek(next, io.SeekStart); err != nil {
					break
				}
			}
		}
		fr.Close()
		dev.Close()
		if isIndex && clean {
			v.checkCache(sum.Sum(nil))
		}
	}
	// Every block of the saveset was read: its files were checked. Files
	// count the saveset's files, as kura savesets and the backup count
	// them, not the tape files read.
	v.checked = v.ss.Files
	v.phase.Files.Add(v.ss.Files)
	return nil
}

// checkCache compares the home's cached index with the index tape file
// (tapeSum: its SHA-256, just read and checked block by block). A cache
// that differs or cannot be read is rebuilt from the tape, with a warning;
// a missing one is left to be read back when needed.
func (v *verifyRun) checkCache(tapeSum []byte) {
	p := v.env.indexCachePath(v.ss)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	why := ""
	if err != nil {
		why = err.Error()
	} else {
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		switch {
		case err != nil:
			why = err.Error()
		case bytes.Equal(h.Sum(nil), tapeSum):
			return
		default:
			why = "it differs from the index tape file"
		}
	}
	if err := v.env.cacheIndex(v.ss, p); err != nil {
		v.mediaProblem(v.ss.IndexPart, fmt.Sprintf("the cached index of saveset %d was damaged (%s) and cannot be rebuilt: %v", v.ss.ID, why, err))
		return
	}
	v.warn(fmt.Sprintf("the cached index of saveset %d was damaged (%s): rebuilt from tape %s file %d",
		v.ss.ID, why, v.ss.IndexPart.Barcode, v.ss.IndexPart.File))
}

// affected names the files whose data lies in the damaged block of part i.
func (v *verifyRun) affected(part int, err error) {
	var ce *tape.CorruptError
	if !errors.As(err, &ce) {
		return
	}
	idx, ierr := v.env.openIndex(v.ss, v.warn)
	if ierr != nil {
		return
	}
	defer idx.Close()
	dev, derr := v.env.tapeOpener()(ce.Barcode)
	if derr != nil {
		return
	}
	defer dev.Close()
	bs := int64(dev.Label().BlockSize)
	if fr, err := dev.Open(ce.File); err == nil {
		bs = int64(fr.Info().BlockSize)
		fr.Close()
	}
	lo, hi := ce.Block*bs, (ce.Block+1)*bs
	var ranges [][2]int64
	for _, f := range idx.Frames() {
		if int(f.Part) == part && f.PartOffset < hi && f.PartOffset+int64(f.CSize) > lo {
			ranges = append(ranges, [2]int64{f.Offset, f.Offset + int64(f.Size)})
		}
	}
	v.filesIn(idx, ranges, "damaged block "+fmt.Sprint(ce.Block)+" on tape "+ce.Barcode)
}

// filesIn reports every own-data entry whose stream bytes overlap ranges.
func (v *verifyRun) filesIn(idx *index.Reader, ranges [][2]int64, why string) {
	if len(ranges) == 0 {
		return
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i][0] < ranges[j][0] })
	it := idx.Iter()
	for it.Next() {
		e := it.Entry()
		if e.Type != index.TypeFile || e.Flags&index.FlagUnchanged != 0 {
			continue
		}
		// The entry occupies [Offset, Offset+header+Size+padding); the
		// header is at most a few KiB: be generous rather than miss one.
		start, end := e.Offset, e.Offset+e.Size+8192
		for _, r := range ranges {
			if start < r[1] && end > r[0] {
				v.problem(e.Path, why)
				break
			}
		}
	}
}

func sampled(path string, pct float64) bool {
	if pct <= 0 || pct >= 100 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(path))
	return float64(h.Sum32()%10000) < pct*100
}

// toCheck returns the bytes a data verify will hash: the saveset's source
// bytes, or with a sample the sizes of the sampled files, counted in a
// pass over the index (which reads no tape).
func (v *verifyRun) toCheck(idx *index.Reader) int64 {
	if v.opts.Sample <= 0 || v.opts.Sample >= 100 {
		return v.ss.SourceBytes
	}
	var n int64
	it := idx.Iter()
	for it.Next() {
		e := it.Entry()
		if e.Type == index.TypeFile && e.Flags&index.FlagUnchanged == 0 && sampled(e.Path, v.opts.Sample) {
			n += e.Size
		}
	}
	if it.Err() != nil {
		return 0 // unknown; the verify itself reports the damage
	}
	return n
}

// data decodes the saveset's stream and re-hashes every file it holds.
func (v *verifyRun) data() error {
	idx, err := v.env.openIndex(v.ss, v.warn)
	if err != nil {
		return err
	}
	defer idx.Close()
	frames := idx.Frames()
	v.ticker.total = v.toCheck(idx)
	src := tapeNoting{src: span.NewReader(v.env.tapeOpener(), fromCatalogParts(v.ss.Parts)), parts: v.ss.Parts, ticker: &v.ticker}
	rd, err := stream.NewReader(src, frames, stream.ReaderOptions{OnFrame: func(_, c int) { v.phase.Media.Add(int64(c)) }})
	if err != nil {
		return err
	}
	defer rd.Close()
	// The index of one stream of several also lists the parent directories
	// another stream backed up: the backup did not count them in this
	// saveset's files, nor does its full verify.
	full := v.opts.Sample <= 0 || v.opts.Sample >= 100
	it := idx.Iter()
	for it.Next() {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		v.invalid(it)
		e := *it.Entry()
		if v.opts.Level == VerifySource {
			v.compareSource(&e)
		}
		if e.Flags&index.FlagUnchanged != 0 || !sampled(e.Path, v.opts.Sample) {
			continue
		}
		// Files count the entries of the saveset, as the backup counted
		// them (directories and links included: their index entry is
		// what is checked); only regular files have data to re-hash.
		v.checked++
		if !full || v.checked <= v.ss.Files {
			v.phase.Files.Add(1)
		}
		if e.Type != index.TypeFile {
			continue
		}
		if err := rd.SeekTo(e.Offset); err != nil {
			v.problem(e.Path, "cannot read its data: "+err.Error())
			continue
		}
		hdr, err := rd.Next()
		if err != nil {
			v.problem(e.Path, "cannot read its data: "+err.Error())
			continue
		}
		if hdr.Path != e.Path || hdr.Size != e.Size {
			v.problem(e.Path, fmt.Sprintf("the stream holds %q (%d bytes) where the index expects this file", hdr.Path, hdr.Size))
			continue
		}
		h := stream.NewDigest()
		n, err := rd.HashContent(h)
		v.phase.Source.Add(n)
		v.env.tick(&v.ticker, v.jobID, v.phase, e.Path)
		if err != nil {
			v.problem(e.Path, "cannot read its data: "+err.Error())
			continue
		}
		if stream.SumDigest(h) != e.Digest {
			v.problem(e.Path, "content does not match its digest")
		}
	}
	v.invalid(it)
	if err := it.Err(); err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	if full && v.checked > v.ss.Files {
		v.checked = v.ss.Files
	}
	return nil
}

// invalid reports the index entries the iterator skipped as invalid.
func (v *verifyRun) invalid(it *index.Iter) {
	for _, b := range it.Invalid() {
		v.problem(b.Path, b.Error()+"; it cannot be restored")
	}
}

// compareSource compares an index entry with the entry on disk now
// (producer.CompareSource); each entry that differs is one problem.
func (v *verifyRun) compareSource(e *index.Entry) {
	if d := producer.CompareSource(e); d != "" {
		v.problem(e.Path, d)
	}
}
