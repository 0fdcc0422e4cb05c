package engine

// Copies of savesets (kura copy): the same zstd frames, byte for byte, on the
// tapes of another library, with an index of their own.
//
// A copy is written like a backup (docs/design.md, "A saveset"):
//
//  1. the job row "running"; the saveset record is not touched yet;
//  2. data parts on the target library's tapes: each part starts with the
//     saveset's label (part number and previous barcode of the copy), then
//     the frames read from the source tapes, in order; a part is finished
//     (fsync, filemark) before the next tape is used;
//  3. the copy's index, into a temporary file in HOME/index: the source
//     index's entries, the frame table with the copy's part and offset of
//     every frame, and the final meta of a backup (savesetMeta) describing
//     the copy: its parts and library, so that `kura tape scan` of the
//     copy's tapes alone rebuilds a record that restores; fsync;
//  4. the index tape file after the data, finished with a filemark;
//  5. under the home's copy lock: the temporary index renamed to
//     HOME/index/ID.copyN.idx, and the copy appended to the saveset's
//     Copies in the catalog.
//
// A crash before step 5 leaves complete tape files that no catalog record
// refers to (as a failed backup does) and the saveset as it was. A copy
// that fails its --verify phase is taken out of the catalog again.
//
// Restore reads a saveset through a copy view (copyView): the saveset's
// record with the Parts, IndexPart and Library of one of its copies. The
// stream reader, verify and the index cache work on it unchanged; only
// indexCachePath tells it apart (copyInUse).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/units"
)

// CopyOptions say where a copy of a saveset goes.
type CopyOptions struct {
	Library string // the library to copy to; not one the saveset or a copy of it is on
	Drive   int    // drive of that library; 0 = any free drive
	Verify  bool   // then read the copy back: a data verify phase of the copy
	// Job is the queued job row the copy runs as (a server's queue); nil
	// records a new one.
	Job *catalog.Job
}

// CopyRecord is what a copy job keeps as its result (catalog.Job.Result).
type CopyRecord struct {
	Saveset int64  `json:"saveset"`
	Copy    int    `json:"copy"`    // the copy's number; 0 when none was recorded
	Library string `json:"library"` // where it is
	Note    string `json:"note"`    // "copy 1 of saveset 12 on library offsite"
}

// maxCopyFrame bounds a frame read from the source before it is allocated:
// the stream reader's own bound.
const maxCopyFrame = stream.MaxFrameSize + stream.MaxFrameSize/64 + 64

// copyInUse reports which copy of its saveset a record describes: 0 for the
// saveset's own tape files, n for a view of copy n (copyView).
func copyInUse(ss *catalog.Saveset) int {
	for _, c := range ss.Copies {
		if c.IndexPart.Barcode != "" && c.IndexPart == ss.IndexPart {
			return c.Copy
		}
	}
	return 0
}

// copyView returns ss as read through its copy c: the copy's data parts,
// index and library; everything else is the saveset's.
func copyView(ss *catalog.Saveset, c catalog.Copy) *catalog.Saveset {
	v := *ss
	v.Parts = slices.Clone(c.Parts)
	v.IndexPart = c.IndexPart
	v.Library = c.Library
	v.Copies = slices.Clone(ss.Copies)
	if !slices.ContainsFunc(v.Copies, func(x catalog.Copy) bool { return x.Copy == c.Copy }) {
		v.Copies = append(v.Copies, c)
	}
	return &v
}

// readable returns the record to read ss through: ss itself when the tapes
// of its data (and of its index, unless the home has the index cached) are
// all in their libraries; else, with copies, the view of the first copy
// whose tapes all are. With neither it returns nil and the saveset's own
// exported tapes. offline is the saveset's own exported tapes in every case.
func (e *Env) readable(ss *catalog.Saveset, copies bool) (use *catalog.Saveset, offline []string, err error) {
	offline, err = e.tapesOffline(ss)
	if err == nil && len(offline) == 0 {
		return ss, nil, nil
	}
	if copies {
		for _, c := range ss.Copies {
			if len(c.Parts) == 0 || c.IndexPart.Barcode == "" {
				continue
			}
			v := copyView(ss, c)
			if off, cerr := e.tapesOffline(v); cerr == nil && len(off) == 0 {
				return v, offline, nil
			}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return nil, offline, nil
}

// tapesOffline lists the exported tapes among those holding ss's data and,
// when the home has no good cached copy of its index (every block checked),
// its index.
func (e *Env) tapesOffline(ss *catalog.Saveset) ([]string, error) {
	var barcodes []string
	for _, p := range ss.Parts {
		barcodes = appendUnique(barcodes, p.Barcode)
	}
	if checkIndexFile(e.indexCachePath(ss)) != nil && ss.IndexPart.Barcode != "" {
		barcodes = appendUnique(barcodes, ss.IndexPart.Barcode)
	}
	var offline []string
	for _, bc := range barcodes {
		lib, err := e.ChangerOfTape(bc)
		if err != nil {
			return nil, err
		}
		t, err := lib.OpenTape(bc)
		if errors.Is(err, library.ErrExported) {
			offline = append(offline, bc)
			continue
		}
		if err != nil {
			return nil, err
		}
		t.Close()
	}
	return offline, nil
}

// copyNote says, for the job log, that a saveset is read from a copy.
func copyNote(ss, view *catalog.Saveset, offline []string) string {
	why := "its own tapes are not readable"
	if len(offline) > 0 {
		why = "its own tapes are exported (" + strings.Join(offline, ", ") + ")"
	}
	return fmt.Sprintf("saveset %d: %s; reading copy %d on library %s (tapes %s)", ss.ID, why,
		copyInUse(view), view.Library, strings.Join(partBarcodes(view.Parts), ", "))
}

func partBarcodes(parts []catalog.Part) []string {
	var out []string
	for _, p := range parts {
		out = appendUnique(out, p.Barcode)
	}
	return out
}

// copyable says why ss cannot be copied to library lib, or nil.
func (e *Env) copyable(ss *catalog.Saveset, lib string) error {
	switch {
	case lib == "":
		return sayf(ErrNoCopyLibrary, "say which library to copy to: --to-vtl NAME")
	case ss.Expired:
		return fmt.Errorf("saveset %d has expired; it is not copied", ss.ID)
	case ss.Status != catalog.StatusComplete:
		return fmt.Errorf("saveset %d is %s, not complete: only complete savesets are copied", ss.ID, savesetState(ss))
	case ss.Library == lib:
		return fmt.Errorf("saveset %d is on library %s already: copy it to another library", ss.ID, lib)
	}
	for _, c := range ss.Copies {
		if c.Library == lib {
			return fmt.Errorf("saveset %d already has a copy on library %s (copy %d)", ss.ID, lib, c.Copy)
		}
	}
	for _, p := range ss.Parts {
		if owner, err := e.Catalog.TapeLibrary(p.Barcode); err == nil && owner == lib {
			return fmt.Errorf("saveset %d is on tape %s of library %s already: copy it to another library", ss.ID, p.Barcode, lib)
		}
	}
	return nil
}

// Copy writes a further copy of a complete saveset to another library, as
// a job of its own. The copy holds the same frames, byte for byte, read
// from the saveset's own tapes or, when they are offline, from a copy.
func (e *Env) Copy(ctx context.Context, id int64, opts CopyOptions) (*Result, error) {
	ss, err := e.Catalog.Saveset(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("saveset", "no saveset %d", id)
	}
	if err != nil {
		return nil, err
	}
	if err := e.copyable(ss, opts.Library); err != nil {
		return nil, err
	}
	if _, err := e.Catalog.Library(opts.Library); errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("library", "no library named %q", opts.Library)
	} else if err != nil {
		return nil, err
	}
	lib, err := e.Changer(opts.Library)
	if err != nil {
		return nil, err
	}
	if err := checkDrive(lib, opts.Drive); err != nil {
		return nil, err
	}
	from, offline, err := e.readable(ss, true)
	if err != nil {
		return nil, err
	}
	if from == nil {
		return nil, fmt.Errorf("copying saveset %d: %w", ss.ID, offlineError(offline))
	}
	job := opts.Job
	if job == nil {
		job = &catalog.Job{}
	}
	job.Client, job.Selection, job.SavesetID, job.Level = ss.Client, ss.Selection, ss.ID, ss.Level
	job, lease, ctx, err := e.holdJob(ctx, job, catalog.KindCopy)
	if err != nil {
		return nil, err
	}
	defer lease.Close()
	c := &copyRun{env: e, ctx: ctx, opts: opts, job: job, ss: ss, from: from, lib: lib,
		res: &Result{Level: ss.Level}}
	if from != ss {
		e.logf(job, "%s", copyNote(ss, from, offline))
	}
	runErr := c.run()
	return c.finish(runErr)
}

// copyRun is one copy job in progress.
type copyRun struct {
	env    *Env
	ctx    context.Context
	opts   CopyOptions
	job    *catalog.Job
	ss     *catalog.Saveset // the saveset (its record as last read)
	from   *catalog.Saveset // what is read: ss, or a copy view
	lib    library.Changer  // the target library
	res    *Result
	phase  *monitor.Phase
	ticker progressTicker

	copy    catalog.Copy // the new copy; Copy is 0 until it is recorded
	tapes   []string
	written int64 // media bytes of the copy's data, labels included
}

// warn adds a warning to the copy job.
func (c *copyRun) warn(msg string) {
	if len(c.job.Warnings) < maxWarnings {
		c.job.Warnings = append(c.job.Warnings, msg)
	}
	c.job.WarningCount++
	c.env.emit(monitor.Event{Kind: monitor.WarningEvent, JobID: c.job.ID, Message: msg})
}

func (c *copyRun) run() error {
	e, ss := c.env, c.ss
	msg := fmt.Sprintf("copy of saveset %d (%s of %s) from library %s to library %s", ss.ID, ss.Level,
		ss.Created.Local().Format("2006-01-02 15:04:05"), c.from.Library, c.lib.Config().Name)
	e.announceJob(c.job, msg)
	c.phase = e.startPhase(c.job, "copy")
	defer func() {
		p := e.endPhase(c.job, c.phase)
		c.job.SourceBytes, c.job.AvgRate, c.job.PeakRate = p.Bytes, p.AvgRate, p.PeakRate
	}()
	for _, p := range c.from.Parts {
		c.ticker.total += p.Bytes
	}
	if c.from.Encryption != "" {
		return c.copySealed()
	}

	srcIdx, err := e.openIndex(c.from, c.warn)
	if err != nil {
		return err
	}
	defer srcIdx.Close()
	frames := srcIdx.Frames()
	if err := checkFrameTable(frames, c.from); err != nil {
		return err
	}
	var meta savesetMeta
	_ = json.Unmarshal(srcIdx.Meta(), &meta) // only the host name is taken from it
	src := span.NewReader(e.tapeOpener(), fromCatalogParts(c.from.Parts))
	label, err := readPartLabel(src)
	if err != nil {
		return fmt.Errorf("reading the label of saveset %d: %w", ss.ID, err)
	}

	drv, err := e.takeDrive(c.ctx, c.job, c.lib, c.opts.Drive)
	if err != nil {
		return err
	}
	defer drv.Release()
	// As in a backup: a part ends at a tape's early-warning point, the
	// tape is marked full and the next writable one is loaded. A copy
	// writes to the library's scratch pool.
	tw, err := e.newTapeWriter(c.job, c.lib, drv, catalog.ScratchPool, &label, fmt.Sprintf("saveset %d copy data", ss.ID))
	if err != nil {
		return err
	}
	defer func() { c.tapes = tw.tapes }()
	tw.noteTape = c.ticker.setTape
	c.ticker.setTape(tw.barcode)
	sw := tw.sw
	swDone := false
	defer func() {
		if !swDone {
			sw.Abort()
		}
	}()
	copied, err := c.copyFrames(src, frames, sw)
	if err != nil {
		return err
	}
	parts, err := sw.Finish()
	swDone = true
	if err != nil {
		return err
	}
	c.copy = catalog.Copy{Library: c.lib.Config().Name, Parts: toCatalogParts(parts)}
	c.written = sw.Bytes()
	// The phase shows what the job shows: the files of the saveset copied, and
	// its media bytes with the part labels the frames did not count.
	c.phase.Files.Add(c.ss.Files)
	c.phase.Media.Add(c.written - c.phase.Media.Total())

	// The copy's index: the same entries, the copy's frame table.
	idxTmp, err := os.CreateTemp(home.IndexDir(e.Home), fmt.Sprintf("%d.copy.*.tmp", ss.ID))
	if err != nil {
		return err
	}
	defer os.Remove(idxTmp.Name())
	defer idxTmp.Close()
	cm := savesetMeta{Saveset: *c.from, Host: meta.Host}
	cm.Saveset.Parts, cm.Saveset.IndexPart, cm.Saveset.Library = c.copy.Parts, catalog.Part{}, c.copy.Library
	cm.Saveset.Copies = nil
	cm.Saveset.MediaBytes = c.written
	mb, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	if err := writeCopyIndex(idxTmp, srcIdx, copied, mb); err != nil {
		return fmt.Errorf("writing the index of the copy: %w", err)
	}
	size, err := idxTmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}

	if c.copy.IndexPart, err = tw.appendIndex(idxTmp, size, fmt.Sprintf("saveset %d copy index", ss.ID), c.copy.Parts); err != nil {
		return err
	}
	e.logf(c.job, "index: tape %s, tape file %d, %s", c.copy.IndexPart.Barcode, c.copy.IndexPart.File, units.FormatSize(size))
	if err := idxTmp.Close(); err != nil {
		return err
	}
	// A copy job another process reclaimed records no copy.
	if err := e.stillHeld(c.job); err != nil {
		return err
	}
	return c.record(idxTmp.Name())
}

// sealedPiece is how much of an encrypted saveset's data a copy writes as
// one piece: a part of the copy may end between two pieces.
const sealedPiece = 1 << 20

// copySealed copies an encrypted saveset, which this process cannot read:
// the ciphertext of its parts, in pieces, to new parts (one age file over
// them, as the original), and its index tape file as it is (its frame
// table holds offsets into the decrypted data, the same in every copy).
// Nothing is decrypted; the block CRCs are checked as the parts are read.
func (c *copyRun) copySealed() error {
	e, ss := c.env, c.ss
	idxPath, err := e.IndexFile(c.from)
	if err != nil {
		return err
	}
	src, err := span.NewReader(e.tapeOpener(), fromCatalogParts(c.from.Parts)).OpenAt(stream.Location{})
	if err != nil {
		return err
	}
	defer src.Close()
	drv, err := e.takeDrive(c.ctx, c.job, c.lib, c.opts.Drive)
	if err != nil {
		return err
	}
	defer drv.Release()
	tw, err := e.newTapeWriter(c.job, c.lib, drv, catalog.ScratchPool, nil, fmt.Sprintf("saveset %d copy data", ss.ID))
	if err != nil {
		return err
	}
	defer func() { c.tapes = tw.tapes }()
	tw.noteTape = c.ticker.setTape
	c.ticker.setTape(tw.barcode)
	sw := tw.sw
	swDone := false
	defer func() {
		if !swDone {
			sw.Abort()
		}
	}()
	buf := make([]byte, sealedPiece)
	for {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		n, rerr := io.ReadFull(src, buf)
		if n > 0 {
			if _, err := sw.WriteFrame(buf[:n]); err != nil {
				return err
			}
			c.phase.Source.Add(int64(n))
			c.phase.Media.Add(int64(n))
			e.tick(&c.ticker, c.job.ID, c.phase, "")
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("reading saveset %d: %w", ss.ID, rerr)
		}
	}
	parts, err := sw.Finish()
	swDone = true
	if err != nil {
		return err
	}
	c.copy = catalog.Copy{Library: c.lib.Config().Name, Parts: toCatalogParts(parts)}
	c.written = sw.Bytes()
	c.phase.Files.Add(c.ss.Files)

	// The index, as it is, through a temporary file that record renames
	// into the cache.
	in, err := os.Open(idxPath)
	if err != nil {
		return err
	}
	defer in.Close()
	idxTmp, err := os.CreateTemp(home.IndexDir(e.Home), fmt.Sprintf("%d.copy.*.tmp", ss.ID))
	if err != nil {
		return err
	}
	defer os.Remove(idxTmp.Name())
	defer idxTmp.Close()
	size, err := io.Copy(idxTmp, in)
	if err != nil {
		return err
	}
	if err := idxTmp.Sync(); err != nil {
		return err
	}
	if c.copy.IndexPart, err = tw.appendIndex(idxTmp, size, fmt.Sprintf("saveset %d copy index", ss.ID), c.copy.Parts); err != nil {
		return err
	}
	e.logf(c.job, "encrypted saveset: ciphertext copied as it is; index: tape %s, tape file %d, %s", c.copy.IndexPart.Barcode, c.copy.IndexPart.File, units.FormatSize(size))
	if err := idxTmp.Close(); err != nil {
		return err
	}
	if err := e.stillHeld(c.job); err != nil {
		return err
	}
	return c.record(idxTmp.Name())
}

// checkFrameTable distrusts the source's frame table before it drives any
// read: frames in order, inside the parts, of a sane size.
func checkFrameTable(frames []index.Frame, ss *catalog.Saveset) error {
	for i, f := range frames {
		bad := ""
		switch {
		case f.Part < 0 || int(f.Part) >= len(ss.Parts):
			bad = fmt.Sprintf("part %d of %d", f.Part+1, len(ss.Parts))
		case f.CSize == 0 || f.CSize > maxCopyFrame:
			bad = fmt.Sprintf("compressed size %d", f.CSize)
		case f.PartOffset < 0 || f.PartOffset+int64(f.CSize) > ss.Parts[f.Part].Bytes:
			bad = fmt.Sprintf("bytes %d..%d of a part of %d", f.PartOffset, f.PartOffset+int64(f.CSize), ss.Parts[f.Part].Bytes)
		case i > 0 && (f.Part < frames[i-1].Part || f.Offset != frames[i-1].Offset+int64(frames[i-1].Size)):
			bad = "out of order"
		}
		if bad != "" {
			return fmt.Errorf("saveset %d: frame %d of the index: %s: %w", ss.ID, i, bad, stream.ErrCorrupt)
		}
	}
	return nil
}

// readPartLabel reads the label at the start of the first part.
func readPartLabel(src *span.Reader) (stream.Label, error) {
	rc, err := src.OpenAt(stream.Location{})
	if err != nil {
		return stream.Label{}, err
	}
	defer rc.Close()
	return stream.ReadLabelFrame(rc)
}

// copyFrames reads every frame of the frame table from src and writes it
// to sw unchanged. It returns the frame table of the copy. Each block read
// is checked against its CRC by the tape; each frame must be as long as
// the table says and start with the zstd magic.
func (c *copyRun) copyFrames(src *span.Reader, frames []index.Frame, sw *span.Writer) ([]index.Frame, error) {
	out := make([]index.Frame, len(frames))
	var (
		rc  io.ReadCloser
		at  stream.Location // where rc is
		buf []byte
	)
	defer func() {
		if rc != nil {
			rc.Close()
		}
	}()
	for i, f := range frames {
		if err := c.ctx.Err(); err != nil {
			return nil, err
		}
		loc := stream.Location{Part: int(f.Part), Offset: f.PartOffset}
		if rc == nil || loc != at {
			// A new part (the reader would go on into its label) or a
			// gap: open where the frame is.
			if rc != nil {
				rc.Close()
			}
			var err error
			if rc, err = src.OpenAt(loc); err != nil {
				return nil, fmt.Errorf("saveset %d: frame %d: %w", c.ss.ID, i, err)
			}
		}
		if cap(buf) < int(f.CSize) {
			buf = make([]byte, f.CSize)
		}
		buf = buf[:f.CSize]
		if _, err := io.ReadFull(rc, buf); err != nil {
			return nil, fmt.Errorf("saveset %d: reading frame %d (tape %s): %w", c.ss.ID, i, c.from.Parts[f.Part].Barcode, err)
		}
		at = stream.Location{Part: loc.Part, Offset: loc.Offset + int64(f.CSize)}
		if len(buf) < 4 || binary.LittleEndian.Uint32(buf) != compress.ZstdMagic {
			return nil, fmt.Errorf("saveset %d: frame %d (tape %s, offset %d) is not a zstd frame: %w",
				c.ss.ID, i, c.from.Parts[f.Part].Barcode, f.PartOffset, stream.ErrCorrupt)
		}
		c.phase.Source.Add(int64(f.CSize))
		wl, err := sw.WriteFrame(buf)
		if err != nil {
			return nil, err
		}
		c.phase.Media.Add(int64(f.CSize))
		out[i] = f
		out[i].Part, out[i].PartOffset = int32(wl.Part), wl.Offset
		c.env.tick(&c.ticker, c.job.ID, c.phase, "")
	}
	return out, nil
}

// writeCopyIndex writes the source index's entries with the copy's frame
// table and meta to f, and makes it durable.
func writeCopyIndex(f *os.File, src *index.Reader, frames []index.Frame, meta []byte) error {
	w := index.NewWriter(f, nil)
	it := src.Iter()
	for it.Next() {
		if err := w.Add(it.Entry()); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("reading the source index: %w", err)
	}
	w.SetFrames(frames)
	if err := w.SetMeta(meta); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Sync()
}

// nextCopyNumber is the number the next copy of ss gets.
func nextCopyNumber(ss *catalog.Saveset) int {
	n := 1
	for _, c := range ss.Copies {
		n = max(n, c.Copy+1)
	}
	return n
}

// lockCopies serialises changes to savesets' copies in this home (across
// processes): each reads the record, adds or removes one copy, writes it.
func (e *Env) lockCopies() (func(), error) {
	if err := private.MkdirAll(e.runDir()); err != nil {
		return nil, err
	}
	f, err := private.OpenFile(filepath.Join(e.runDir(), "copies.lock"), os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// record puts the copy's index into the cache and the copy into the
// catalog: the last step, after the copy's tape files are durable.
func (c *copyRun) record(idxTmp string) error {
	e := c.env
	unlock, err := e.lockCopies()
	if err != nil {
		return err
	}
	defer unlock()
	ss, err := e.Catalog.Saveset(c.ss.ID)
	if err != nil {
		return err
	}
	// Things may have changed while the copy was written.
	if err := e.copyable(ss, c.copy.Library); err != nil {
		return err
	}
	c.copy.Copy = nextCopyNumber(ss)
	c.copy.Created = e.now()
	p := e.indexCachePath(copyView(ss, c.copy))
	if err := os.Rename(idxTmp, p); err != nil {
		return err
	}
	if err := fsyncDir(filepath.Dir(p)); err != nil {
		return err
	}
	ss.Copies = append(ss.Copies, c.copy)
	if err := e.Catalog.UpdateSaveset(ss); err != nil {
		os.Remove(p)
		return err
	}
	c.ss = ss
	e.logf(c.job, "recorded as copy %d of saveset %d on library %s", c.copy.Copy, ss.ID, c.copy.Library)
	return nil
}

// unrecord takes a copy that failed its verify out of the catalog.
func (c *copyRun) unrecord() error {
	e := c.env
	unlock, err := e.lockCopies()
	if err != nil {
		return err
	}
	defer unlock()
	ss, err := e.Catalog.Saveset(c.ss.ID)
	if err != nil {
		return err
	}
	ss.Copies = slices.DeleteFunc(ss.Copies, func(x catalog.Copy) bool { return x.Copy == c.copy.Copy })
	if err := e.Catalog.UpdateSaveset(ss); err != nil {
		return err
	}
	_ = os.Remove(e.indexCachePath(copyView(c.ss, c.copy)))
	c.ss = ss
	return nil
}

// finish records the job's outcome, runs the verify phase, and builds the
// result.
func (c *copyRun) finish(runErr error) (*Result, error) {
	e, job := c.env, c.job
	job.Files = c.ss.Files
	job.MediaBytes = c.written
	job.Tapes = c.tapes
	if runErr == nil && c.opts.Verify {
		view := copyView(c.ss, c.copy)
		level := VerifyData
		if view.Encryption != "" {
			level = VerifyMedia // no key here: the copy's block checksums
		}
		vr, verr := e.verifySaveset(c.ctx, view, VerifyOptions{Level: level}, job.ID)
		if vr != nil {
			job.Phases = append(job.Phases, vr.phase)
			for _, p := range vr.Problems {
				if len(job.Warnings) < maxWarnings {
					job.Warnings = append(job.Warnings, p.Path+": "+p.Problem)
				}
				job.WarningCount++
			}
			for _, w := range vr.Warnings {
				c.warn(w)
			}
			c.res.Warnings = job.Warnings
		}
		if verr != nil {
			runErr = fmt.Errorf("verify of copy %d: %w", c.copy.Copy, verr)
			if err := c.unrecord(); err != nil {
				e.logf(job, "taking copy %d out of the catalog: %v", c.copy.Copy, err)
			} else {
				e.logf(job, "copy %d failed its verify and was taken out of the catalog", c.copy.Copy)
			}
		}
	}
	rec := CopyRecord{Saveset: c.ss.ID, Library: c.lib.Config().Name}
	if runErr == nil {
		c.res.Note = fmt.Sprintf("copy %d of saveset %d on library %s", c.copy.Copy, c.ss.ID, c.copy.Library)
		rec.Copy, rec.Note = c.copy.Copy, c.res.Note
		if job.WarningCount > 0 {
			c.res.Warnings = job.Warnings
		}
	}
	runErr = e.endJob(job, runErr, jobEnd{result: rec, summary: fmt.Sprintf("%s read, %s written to tapes %s",
		units.FormatSize(job.SourceBytes), units.FormatSize(job.MediaBytes), strings.Join(c.tapes, ", "))})
	c.res.Figures = JobFigures(job, c.ss)
	if runErr == nil && job.WarningCount > 0 {
		return c.res, fmt.Errorf("copy %w: %d warnings", ErrWarnings, job.WarningCount)
	}
	return c.res, runErr
}

// VerifyCopy checks copy n of a saveset as a verify job of its own: the
// verify of Verify, reading the copy's tapes and index.
func (e *Env) VerifyCopy(ctx context.Context, id int64, n int, opts VerifyOptions) (*VerifyResult, error) {
	ss, err := e.Catalog.Saveset(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("saveset", "no saveset %d", id)
	}
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(ss.Copies, func(c catalog.Copy) bool { return c.Copy == n })
	if i < 0 {
		return nil, Missing("copy", "saveset %d has no copy %d", id, n)
	}
	view := copyView(ss, ss.Copies[i])
	return e.verifyJob(ctx, view, opts, fmt.Sprintf("copy %d of saveset %d on library %s", n, ss.ID, view.Library))
}
