package tape

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/units"
)

// File names inside a tape folder.
const (
	labelName = "label"
	copyName  = "label.copy" // the label's second copy (doc.go)
	lockName  = "lock"
	extData   = "data"
	extSums   = "crc"
	extMark   = "mark"
)

// DefaultBufferSize is the transfer-buffer memory used when
// Options.BufferSize is 0. BenchmarkWrite (bench_test.go, 256 MiB tape
// files, shared 2-core VM, -benchtime=3x): a ring of 257 KiB gave 155-208
// MB/s, 8193 KiB 232-257 MB/s, 32769 KiB 167-273 MB/s; the disk, not the
// ring, bounds it past a few MiB.
const DefaultBufferSize = 8 << 20

// Options are the drive settings a tape is opened with.
type Options struct {
	// BlockSize is the block size of tape files written from now on; 0 means
	// the label's block size. Readers always use the size a tape file
	// records.
	BlockSize int
	// BufferSize is the transfer-buffer memory in bytes: a ring of
	// BufferSize/BlockSize block buffers, at least 2. 0 means
	// DefaultBufferSize.
	BufferSize int
	// FS is the file system the tape lives on; nil means the operating
	// system.
	FS FS
	// Clock stamps labels and filemarks; nil means time.Now.
	Clock func() time.Time
}

func (o Options) validate() error {
	if o.BlockSize != 0 && (o.BlockSize < MinBlockSize || o.BlockSize > MaxBlockSize) {
		return fmt.Errorf("tape options: block size %d: want 0 or %d to %d", o.BlockSize, MinBlockSize, MaxBlockSize)
	}
	if o.BufferSize < 0 {
		return fmt.Errorf("tape options: negative buffer size %d", o.BufferSize)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.FS == nil {
		o.FS = OSFS()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// String describes the options, so benchmarks and logs record them.
func (o Options) String() string {
	bs := "label"
	if o.BlockSize != 0 {
		bs = units.FormatSize(int64(o.BlockSize))
	}
	buf := o.BufferSize
	if buf == 0 {
		buf = DefaultBufferSize
	}
	return fmt.Sprintf("block=%s buffer=%s", bs, units.FormatSize(int64(buf)))
}

// ringSize is the number of block buffers in the transfer ring.
func ringSize(bufferSize, blockSize int) int {
	return max(2, bufferSize/blockSize)
}

// Tape is a virtual cartridge in a folder. It implements Device. A Tape is
// safe for concurrent use; at most one FileWriter is open at a time, across
// processes.
type Tape struct {
	dir  string
	opts Options
	fs   FS

	mu     sync.Mutex
	label  Label
	damage error       // what is wrong with one copy of the label, or nil
	lost   bool        // both copies damaged: label is a stand-in (OpenWithLabel)
	used   int64       // data bytes of the tape files, without the open writer's
	w      *fileWriter // the open writer, or nil
	closed bool
}

var _ Device = (*Tape)(nil)

// ReadLabel reads the label of the tape in dir, without locking it: the
// label file, or its copy when the label file is damaged or missing. ErrBlank
// when neither exists (or the folder does not); ErrBadLabel when neither
// copy is good.
func ReadLabel(dir string) (Label, error) {
	l, _, err := readLabel(OSFS(), dir)
	return l, err
}

// CheckLabel reads both copies of the label of the tape in dir, without
// locking it. It returns the label a reader uses (as ReadLabel) and, when
// one copy is damaged, missing or disagrees with the other, an error
// wrapping ErrBadLabel that says so (damage); the tape stays readable.
func CheckLabel(dir string) (l Label, damage, err error) {
	return readLabel(OSFS(), dir)
}

// readLabel reads the label file and its copy. The label file wins when it
// is good; the copy stands in when it is not. damage (wrapping ErrBadLabel,
// without the folder: the caller names the tape) describes a copy that is
// bad, a label file that is missing where the copy exists, or copies that
// differ. A tape written before the copy existed has a
// label file only: that is not damage.
func readLabel(fsys FS, dir string) (l Label, damage, err error) {
	one := func(name string) (Label, error) {
		b, err := readFile(fsys, filepath.Join(dir, name), maxLabelSize)
		if errors.Is(err, fs.ErrNotExist) {
			return Label{}, fmt.Errorf("%s: %w", name, ErrBlank)
		}
		if err != nil {
			return Label{}, fmt.Errorf("read %s of %s: %w", name, dir, err)
		}
		l, err := decodeLabel(b)
		if err != nil {
			return Label{}, fmt.Errorf("%s: %w", name, err)
		}
		return l, nil
	}
	l1, err1 := one(labelName)
	l2, err2 := one(copyName)
	blank1, blank2 := errors.Is(err1, ErrBlank), errors.Is(err2, ErrBlank)
	switch {
	case err1 == nil && err2 == nil:
		if l1 != l2 {
			return l1, fmt.Errorf("%w: label (generation %d) and label.copy (generation %d) disagree; the label is used",
				ErrBadLabel, l1.Generation, l2.Generation), nil
		}
		return l1, nil, nil
	case err1 == nil && blank2:
		return l1, nil, nil // a tape labelled before the copy existed
	case err1 == nil:
		return l1, fmt.Errorf("%w (the label is good)", asBadLabel(err2)), nil
	case err2 == nil && blank1:
		return l2, fmt.Errorf("%w: label missing (read from label.copy)", ErrBadLabel), nil
	case err2 == nil:
		return l2, fmt.Errorf("%w (read from label.copy)", asBadLabel(err1)), nil
	case blank1 && blank2:
		return Label{}, nil, fmt.Errorf("%s: %w", dir, ErrBlank)
	case blank2:
		return Label{}, nil, fmt.Errorf("%s: %w", dir, err1)
	case blank1:
		return Label{}, nil, fmt.Errorf("%s: %w", dir, err2)
	}
	return Label{}, nil, fmt.Errorf("%s: %w; %v", dir, err1, err2)
}

// LabelLost reports whether the tape was opened under a stand-in label
// (OpenWithLabel: both copies of its label damaged). Relabel ends it.
func (t *Tape) LabelLost() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost
}

// asBadLabel makes a copy of the label that could not be read (an I/O
// error as much as a damaged one) an ErrBadLabel.
func asBadLabel(err error) error {
	if errors.Is(err, ErrBadLabel) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrBadLabel, err)
}

// LabelDamage reports what was wrong with one copy of the label when the
// tape was opened (or last appended to): nil when both are good, else an
// error wrapping ErrBadLabel. The tape is readable either way; the next
// Append or Relabel writes both copies again.
func (t *Tape) LabelDamage() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.damage
}

// Format labels a new tape in dir, creating the folder. It fails if dir
// already holds a label; stray tape files of a blank tape are erased. A zero
// EarlyWarning means Capacity; Version, Generation, Created and Labelled are
// set here.
func Format(dir string, l Label, opts Options) (*Tape, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	now := opts.Clock().UTC()
	l.Version = LabelVersion
	l.Generation = 1
	l.Created, l.Labelled = now, now
	if l.EarlyWarning == 0 {
		l.EarlyWarning = l.Capacity
	}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("format %s: %w", dir, err)
	}
	if err := opts.FS.MkdirAll(dir, private.DirMode); err != nil {
		return nil, fmt.Errorf("format %s: %w", dir, err)
	}
	lock, err := lockTape(dir)
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", dir, err)
	}
	defer lock.Close()
	for _, name := range []string{labelName, copyName} {
		if _, err := opts.FS.Stat(filepath.Join(dir, name)); err == nil {
			return nil, fmt.Errorf("format %s: already labelled: %w", dir, fs.ErrExist)
		}
	}
	t := &Tape{dir: dir, opts: opts, fs: opts.FS, label: l}
	if err := t.eraseAll(); err != nil {
		return nil, fmt.Errorf("format %s: %w", dir, err)
	}
	if err := t.writeLabel(l); err != nil {
		return nil, fmt.Errorf("format %s: %w", dir, err)
	}
	return t, nil
}

// Open opens the tape in dir: ErrBlank if it has no label, ErrBadLabel if
// both copies of the label are damaged. With one copy damaged the tape
// opens and LabelDamage says what is wrong.
func Open(dir string, opts Options) (*Tape, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	l, damage, err := readLabel(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	t := &Tape{dir: dir, opts: opts, fs: opts.FS, label: l, damage: damage}
	n, err := t.count()
	if err != nil {
		return nil, err
	}
	if t.used, err = t.sizes(n); err != nil {
		return nil, err
	}
	return t, nil
}

// OpenWithLabel opens, for reading, the tape in dir whose label is lost
// (both copies damaged: Open fails with ErrBadLabel), with l standing in for
// it. Reading needs little of the label: every tape file records its own
// block size and length. LabelDamage returns Open's error. Append refuses
// the tape (ErrBadLabel) until Relabel writes a new label; a tape that Open
// can open is opened as Open does.
func OpenWithLabel(dir string, l Label, opts Options) (*Tape, error) {
	t, err := Open(dir, opts)
	if err == nil || !errors.Is(err, ErrBadLabel) {
		return t, err
	}
	damage := err
	if l.Version == 0 {
		l.Version = LabelVersion
	}
	if l.Generation == 0 {
		l.Generation = 1
	}
	if l.EarlyWarning == 0 {
		l.EarlyWarning = l.Capacity
	}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("%w (and the stand-in label: %v)", damage, err)
	}
	opts = opts.withDefaults()
	t = &Tape{dir: dir, opts: opts, fs: opts.FS, label: l, damage: damage, lost: true}
	n, err := t.count()
	if err != nil {
		return nil, err
	}
	if t.used, err = t.sizes(n); err != nil {
		return nil, err
	}
	return t, nil
}

// writeLabel writes the label file, then its copy, each atomically: a
// crash in between leaves a good label and a stale or missing copy, which
// readLabel reports and the next writer rewrites.
func (t *Tape) writeLabel(l Label) error {
	b, err := encodeLabel(l)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(t.fs, t.dir, filepath.Join(t.dir, labelName), b); err != nil {
		return err
	}
	if err := writeFileAtomic(t.fs, t.dir, filepath.Join(t.dir, copyName), b); err != nil {
		return err
	}
	t.damage = nil
	return nil
}

// Relabel erases every tape file and writes a new label with Generation+1.
// Zero fields of l keep the current label's values; the barcode cannot
// change. It fails with ErrBusy while a writer is open (in any process).
//
// Tape files are erased from the last to the first, and the label is
// replaced only after, so a crash leaves either the old label with a prefix
// of its tape files (the last maybe incomplete) or the new, empty tape.
func (t *Tape) Relabel(l Label) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.w != nil {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, ErrBusy)
	}
	lock, err := lockTape(t.dir)
	if err != nil {
		return fmt.Errorf("relabel %s: %w", t.label.Barcode, err)
	}
	defer lock.Close()
	old, _, err := readLabel(t.fs, t.dir)
	if err != nil && !errors.Is(err, ErrBadLabel) {
		return err
	}
	if err != nil {
		old = t.label
	}
	nl, err := Relabelled(old, l, max(old.Generation, t.label.Generation), t.opts.Clock())
	if err != nil {
		return err
	}
	if err := t.eraseAll(); err != nil {
		return fmt.Errorf("relabel %s: %w", old.Barcode, err)
	}
	if err := t.writeLabel(nl); err != nil {
		return fmt.Errorf("relabel %s: %w", old.Barcode, err)
	}
	t.label = nl
	t.used = 0
	t.lost = false
	return nil
}

// DataPath is the path of tape file n's raw data: exactly the bytes written,
// so `cat`, `dd` or `zstd -dc` can read it.
func (t *Tape) DataPath(n int) string { return t.path(n, extData) }

// Dir is the tape's folder.
func (t *Tape) Dir() string { return t.dir }

// Close closes the tape; an open writer is aborted (its tape file stays
// incomplete). Later calls return ErrClosed.
func (t *Tape) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	t.closed = true
	w := t.w
	t.mu.Unlock()
	if w != nil {
		if err := w.Abort(); err != nil && !errors.Is(err, ErrClosed) {
			return err
		}
	}
	return nil
}

// Label returns the tape's label as last read or written.
func (t *Tape) Label() Label {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.label
}

// Used is the number of data bytes on the tape: every tape file's data,
// including an incomplete one, plus what the open writer has accepted.
func (t *Tape) Used() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.used
	if t.w != nil {
		u += t.w.Written()
	}
	return u
}

// Files lists the tape files in order. An incomplete last file (one being
// written, or left by a crash or failed write) is listed with
// FileIncomplete; a damaged filemark is an error (a *CorruptError).
func (t *Tape) Files() ([]FileInfo, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	l := t.label
	t.mu.Unlock()
	n, err := t.count()
	if err != nil {
		return nil, err
	}
	files := make([]FileInfo, 0, n)
	for i := 1; i <= n; i++ {
		fi, _, err := t.info(l, i)
		if err != nil {
			return nil, err
		}
		files = append(files, fi)
	}
	return files, nil
}

// info describes tape file n, and returns its filemark if it has one.
func (t *Tape) info(l Label, n int) (FileInfo, *filemark, error) {
	b, err := readFile(t.fs, t.path(n, extMark), markHeaderSize+MaxTagLen+4)
	if errors.Is(err, fs.ErrNotExist) {
		st, err := t.fs.Stat(t.path(n, extData))
		if errors.Is(err, fs.ErrNotExist) {
			return FileInfo{}, nil, fmt.Errorf("tape %s: tape file %d: %w", l.Barcode, n, ErrNoSuchFile)
		}
		if err != nil {
			return FileInfo{}, nil, err
		}
		bs := l.BlockSize
		if h, err := readFile(t.fs, t.path(n, extSums), sumHeaderSize); err == nil {
			if hbs, err := decodeSumHeader(h); err == nil {
				bs = hbs
			}
		}
		return FileInfo{
			Number:    n,
			Status:    FileIncomplete,
			Bytes:     st.Size(),
			Blocks:    blocksFor(st.Size(), bs),
			BlockSize: bs,
			Written:   st.ModTime().UTC(),
		}, nil, nil
	}
	if err != nil {
		return FileInfo{}, nil, err
	}
	m, err := decodeMark(b)
	if err == nil && m.Number != n {
		err = fmt.Errorf("filemark: %w: says tape file %d", ErrCorrupt, m.Number)
	}
	if err != nil {
		return FileInfo{}, nil, &CorruptError{Library: l.Library, Barcode: l.Barcode, File: n, Block: -1, Err: err}
	}
	return FileInfo{
		Number:    n,
		Status:    FileComplete,
		Bytes:     m.Bytes,
		Blocks:    m.Blocks,
		BlockSize: m.BlockSize,
		CRCTable:  m.CRCTable,
		Written:   m.Written,
		Tag:       m.Tag,
	}, &m, nil
}

func (t *Tape) path(n int, ext string) string {
	return filepath.Join(t.dir, fmt.Sprintf("%06d.%s", n, ext))
}

// count returns the number of tape files: data files 1..n exist.
func (t *Tape) count() (int, error) {
	n := 0
	for {
		_, err := t.fs.Stat(t.path(n+1, extData))
		if errors.Is(err, fs.ErrNotExist) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		n++
	}
}

// sizes sums the data file sizes of tape files 1..n.
func (t *Tape) sizes(n int) (int64, error) {
	var sum int64
	for i := 1; i <= n; i++ {
		st, err := t.fs.Stat(t.path(i, extData))
		if err != nil {
			return 0, err
		}
		sum += st.Size()
	}
	return sum, nil
}

// erase removes tape file n: filemark first, then checksums, then data, so
// a crash in between leaves an incomplete tape file, never a false one.
func (t *Tape) erase(n int) error {
	for _, ext := range []string{extMark + ".tmp", extMark, extSums, extData} {
		if err := t.fs.Remove(t.path(n, ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// eraseAll erases every tape file, last first.
func (t *Tape) eraseAll() error {
	n, err := t.count()
	if err != nil {
		return err
	}
	for i := n; i >= 1; i-- {
		if err := t.erase(i); err != nil {
			return err
		}
	}
	return t.fs.SyncDir(t.dir)
}

// lockTape takes the tape's writer lock (flock on the lock file), or fails
// at once with ErrBusy. Closing the file releases it; so does the death of
// the process.
func lockTape(dir string) (*os.File, error) {
	f, err := private.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}
