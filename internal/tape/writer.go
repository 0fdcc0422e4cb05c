package tape

import (
	"golang.org/x/sys/unix"

	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/kura-backup/kura/internal/private"
)

// sumFlush is how many checksum-table bytes the drive collects before it
// writes them to the checksum file.
const sumFlush = 64 << 10

// Append starts tape file number len(Files())+1, first truncating away an
// incomplete last tape file. It takes the tape's writer lock until Finish or
// Abort: a second Append, from this or any process, fails at once with
// ErrBusy.
func (t *Tape) Append(tag string) (FileWriter, error) {
	if err := CheckTag(tag); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if t.w != nil {
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, ErrBusy)
	}
	lock, err := lockTape(t.dir)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, err)
	}
	w, err := t.startWriter(tag, lock)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("append to %s: %w", t.label.Barcode, err)
	}
	t.w = w
	return w, nil
}

// Reclaim removes an incomplete last tape file — what a writer that died
// left behind — at once instead of at the next Append, and returns the
// bytes it freed. A library on a full disk needs that space before it can
// even record which tape goes into a drive. A tape being written (its
// writer lock held, in any process) is left alone with ErrBusy.
func (t *Tape) Reclaim() (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, ErrClosed
	}
	if t.w != nil {
		return 0, fmt.Errorf("reclaim %s: %w", t.label.Barcode, ErrBusy)
	}
	lock, err := lockTape(t.dir)
	if err != nil {
		return 0, fmt.Errorf("reclaim %s: %w", t.label.Barcode, err)
	}
	defer lock.Close()
	n, err := t.count()
	if err != nil || n == 0 {
		return 0, err
	}
	if _, err := t.fs.Stat(t.path(n, extMark)); !errors.Is(err, os.ErrNotExist) {
		return 0, err // complete (err == nil), or unreadable
	}
	var freed int64
	for _, ext := range []string{extData, extSums} {
		if st, err := t.fs.Stat(t.path(n, ext)); err == nil {
			freed += st.Size()
		}
	}
	if err := t.erase(n); err != nil {
		return 0, fmt.Errorf("reclaim %s: tape file %d: %w", t.label.Barcode, n, err)
	}
	if err := t.fs.SyncDir(t.dir); err != nil {
		return freed, err
	}
	if t.used, err = t.sizes(n - 1); err != nil {
		return freed, err
	}
	return freed, nil
}

// startWriter runs under t.mu and the writer lock.
func (t *Tape) startWriter(tag string, lock *os.File) (*fileWriter, error) {
	// Another process may have relabelled or appended: trust only the disk.
	l, damage, err := readLabel(t.fs, t.dir)
	if err != nil {
		return nil, err
	}
	t.label, t.damage = l, damage
	_, cerr := t.fs.Stat(filepath.Join(t.dir, copyName))
	if damage != nil || errors.Is(cerr, os.ErrNotExist) {
		// The writer holds the lock: heal the damaged or stale copy, or
		// give a tape labelled before the copy existed its copy.
		if err := t.writeLabel(l); err != nil {
			return nil, fmt.Errorf("rewrite the damaged label: %w", err)
		}
	}
	n, err := t.count()
	if err != nil {
		return nil, err
	}
	if n > 0 {
		if _, err := t.fs.Stat(t.path(n, extMark)); errors.Is(err, os.ErrNotExist) {
			if err := t.erase(n); err != nil {
				return nil, fmt.Errorf("truncate incomplete tape file %d: %w", n, err)
			}
			if err := t.fs.SyncDir(t.dir); err != nil {
				return nil, err
			}
			n--
		} else if err != nil {
			return nil, err
		}
	}
	if t.used, err = t.sizes(n); err != nil {
		return nil, err
	}
	bs := t.opts.BlockSize
	if bs == 0 {
		bs = l.BlockSize
	}
	n++
	// Leftovers of a tape file n (a checksum file without data) go first.
	if err := t.erase(n); err != nil {
		return nil, err
	}
	data, err := t.fs.OpenFile(t.path(n, extData), os.O_WRONLY|os.O_CREATE|os.O_EXCL, private.FileMode)
	if err != nil {
		return nil, err
	}
	sums, err := t.fs.OpenFile(t.path(n, extSums), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, private.FileMode)
	if err != nil {
		data.Close()
		t.erase(n) // an empty file left behind would hold a name, not space
		return nil, err
	}
	w := &fileWriter{
		t: t, lock: lock, number: n, blockSize: bs, tag: tag,
		data: data, sums: sums,
		base: t.used, capacity: l.Capacity, early: l.EarlyWarning,
		label: l,
	}
	if err := writeFull(sums, encodeSumHeader(bs)); err != nil {
		data.Close()
		sums.Close()
		t.erase(n)
		return nil, err
	}
	ring := ringSize(t.opts.BufferSize, bs)
	w.free = make(chan []byte, ring)
	w.full = make(chan []byte, ring)
	w.done = make(chan struct{})
	for range ring - 1 {
		w.free <- make([]byte, 0, bs)
	}
	w.cur = make([]byte, 0, bs)
	go w.drive()
	return w, nil
}

func writeFull(f io.Writer, b []byte) error {
	n, err := f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// fileWriter is the drive's write pipeline for one tape file:
//
//	Write ─copy─► cur block ─full─► ring (chan) ─► drive goroutine ─► data file
//	                  ▲                                 │  CRC-32C ─► checksum file
//	                  └──────────── free ◄──────────────┘
//
// The ring holds BufferSize/BlockSize buffers (at least 2). The drive issues
// exactly one write per block, all of the block size except maybe the last.
type fileWriter struct {
	t         *Tape
	lock      *os.File
	label     Label
	number    int
	blockSize int
	tag       string
	data      File
	sums      File
	base      int64 // bytes of the earlier tape files
	capacity  int64
	early     int64

	// Caller side, one goroutine at a time (FileWriter is not for concurrent
	// use; Written and Remaining are).
	cur    []byte
	closed bool
	// discarded: the unfinished tape file was removed (Abort, failed Finish).
	discarded bool
	written   atomic.Int64

	free, full chan []byte
	done       chan struct{}

	errMu sync.Mutex
	err   error // first error, sticky

	// Drive goroutine side; read by the caller only after done is closed.
	blocks    int64
	table     []byte // checksum entries not yet written
	tableCRC  uint32
	flushedTo int64 // data offset up to which writeback was started
	unflushed int64 // bytes written after flushedTo
}

var _ FileWriter = (*fileWriter)(nil)

func (w *fileWriter) setErr(err error) error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *fileWriter) stickyErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// drive writes full blocks from the ring until it is closed.
func (w *fileWriter) drive() {
	defer close(w.done)
	for buf := range w.full {
		if w.stickyErr() == nil {
			if err := w.writeBlock(buf); err != nil {
				w.setErr(fmt.Errorf("tape %s: tape file %d: block %d: %w", w.label.Barcode, w.number, w.blocks, err))
			}
		}
		w.free <- buf[:0]
	}
}

func (w *fileWriter) writeBlock(buf []byte) error {
	if err := writeFull(w.data, buf); err != nil {
		return err
	}
	w.startWriteback(len(buf))
	sum := crc32.Checksum(buf, castagnoli)
	w.table = binary.LittleEndian.AppendUint32(w.table, sum)
	w.tableCRC = crc32.Update(w.tableCRC, castagnoli, w.table[len(w.table)-4:])
	w.blocks++
	if len(w.table) >= sumFlush {
		return w.flushTable()
	}
	return nil
}

// writebackChunk is how much data the drive lets pile up in the page cache
// before it asks the kernel to start writing it out. Starting writeback
// early overlaps the disk writes with the rest of the job, so the fsync
// that ends a tape file has little left to do (a 1 GB tape file: fsync
// waited ~1-2 s without it).
const writebackChunk = 8 << 20

// startWriteback asks the kernel, without waiting, to write out the data
// written since the last call once a chunk has piled up. Files that are not
// OS files (a test FS) are left alone.
func (w *fileWriter) startWriteback(n int) {
	w.unflushed += int64(n)
	if w.unflushed < writebackChunk {
		return
	}
	if f, ok := w.data.(interface{ Fd() uintptr }); ok {
		fd := int(f.Fd())
		_ = unix.SyncFileRange(fd, w.flushedTo, w.unflushed, unix.SYNC_FILE_RANGE_WRITE)
		// What was sent to the disk two chunks ago is written by now:
		// drop it from the page cache (pages still being written stay).
		if w.flushedTo >= 2*writebackChunk {
			_ = unix.Fadvise(fd, w.flushedTo-2*writebackChunk, writebackChunk, unix.FADV_DONTNEED)
		}
	}
	w.flushedTo += w.unflushed
	w.unflushed = 0
}

// dropCache drops the whole data file from the page cache once it is on
// disk (after its fsync).
func (w *fileWriter) dropCache() {
	if f, ok := w.data.(interface{ Fd() uintptr }); ok {
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
}

func (w *fileWriter) flushTable() error {
	if len(w.table) == 0 {
		return nil
	}
	if err := writeFull(w.sums, w.table); err != nil {
		return fmt.Errorf("checksum file: %w", err)
	}
	w.table = w.table[:0]
	return nil
}

// Write copies p into the block buffers. A write that would take the tape
// past its capacity accepts nothing and fails with ErrEndOfMedia.
func (w *fileWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, ErrClosed
	}
	if err := w.stickyErr(); err != nil {
		return 0, err
	}
	if w.base+w.written.Load()+int64(len(p)) > w.capacity {
		return 0, w.setErr(fmt.Errorf("tape %s: tape file %d: %w: %d bytes used of %d, %d more refused",
			w.label.Barcode, w.number, ErrEndOfMedia, w.base+w.written.Load(), w.capacity, len(p)))
	}
	total := 0
	for len(p) > 0 {
		n := copy(w.cur[len(w.cur):w.blockSize], p)
		w.cur = w.cur[:len(w.cur)+n]
		p = p[n:]
		total += n
		if len(w.cur) == w.blockSize {
			w.full <- w.cur
			w.cur = <-w.free
			if err := w.stickyErr(); err != nil {
				w.written.Add(int64(total))
				return total, err
			}
		}
	}
	w.written.Add(int64(total))
	return total, nil
}

// Written is the number of bytes accepted so far.
func (w *fileWriter) Written() int64 { return w.written.Load() }

// Remaining is the number of bytes that still fit before the early warning
// point; negative past it.
func (w *fileWriter) Remaining() int64 {
	return w.early - w.base - w.written.Load()
}

// EarlyWarning reports whether the early warning point is reached (or the
// end of the tape, which lies past it). Both stick.
func (w *fileWriter) EarlyWarning() bool {
	return w.Remaining() <= 0 || errors.Is(w.stickyErr(), ErrEndOfMedia)
}

// stop drains the ring and waits for the drive.
func (w *fileWriter) stop(flush bool) {
	if flush && len(w.cur) > 0 && w.stickyErr() == nil {
		w.full <- w.cur
		w.cur = nil
	}
	close(w.full)
	<-w.done
}

// Finish drains the ring, writes the rest of the checksum table, fsyncs the
// data and checksum files, and then writes the filemark (temporary file,
// fsync, rename, fsync of the folder). On any error the tape file stays
// incomplete.
func (w *fileWriter) Finish() (FileInfo, error) {
	if w.closed {
		return FileInfo{}, ErrClosed
	}
	w.closed = true
	w.stop(true)
	err := w.stickyErr()
	fail := func(op string, e error) error {
		return fmt.Errorf("tape %s: tape file %d: %s: %w", w.label.Barcode, w.number, op, e)
	}
	if err == nil {
		if e := w.flushTable(); e != nil {
			err = fail("finish", e)
		}
	}
	if err == nil {
		if e := w.data.Sync(); e != nil {
			err = fail("sync data", e)
		} else {
			w.dropCache()
		}
	}
	if err == nil {
		if e := w.sums.Sync(); e != nil {
			err = fail("sync checksums", e)
		}
	}
	if e := w.data.Close(); e != nil && err == nil {
		err = fail("close data", e)
	}
	if e := w.sums.Close(); e != nil && err == nil {
		err = fail("close checksums", e)
	}
	var info FileInfo
	if err == nil {
		m := filemark{
			Number:    w.number,
			BlockSize: w.blockSize,
			Bytes:     w.written.Load(),
			Blocks:    w.blocks,
			CRCTable:  w.tableCRC,
			Written:   w.t.opts.Clock().UTC(),
			Tag:       w.tag,
		}
		b, e := encodeMark(m)
		if e == nil {
			e = writeFileAtomic(w.t.fs, w.t.dir, w.t.path(w.number, extMark), b)
		}
		if e != nil {
			err = fail("write filemark", e)
		} else {
			info = FileInfo{Number: m.Number, Status: FileComplete, Bytes: m.Bytes, Blocks: m.Blocks,
				BlockSize: m.BlockSize, CRCTable: m.CRCTable, Written: m.Written, Tag: m.Tag}
		}
	}
	if err != nil {
		w.discard()
	}
	w.release()
	if err != nil {
		return FileInfo{}, err
	}
	return info, nil
}

// Abort stops writing and removes the unfinished tape file, giving its
// space back at once (a full disk under the library must not stay full
// because of a failed job). If the removal fails, the file stays
// incomplete and the next Append truncates it.
func (w *fileWriter) Abort() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	w.stop(false)
	w.setErr(ErrClosed)
	w.data.Close()
	w.sums.Close()
	w.discard()
	w.release()
	return nil
}

// discard removes the unfinished tape file while the writer lock is still
// held. Its bytes no longer count as used.
func (w *fileWriter) discard() {
	t := w.t
	if err := t.erase(w.number); err != nil {
		return
	}
	if err := t.fs.SyncDir(t.dir); err != nil {
		return
	}
	w.discarded = true
}

// release hands the tape back: it records the bytes now on the tape and
// drops the writer lock.
func (w *fileWriter) release() {
	t := w.t
	t.mu.Lock()
	if t.w == w {
		t.w = nil
	}
	t.used = w.base + w.written.Load()
	if w.discarded {
		t.used = w.base
	}
	t.mu.Unlock()
	w.lock.Close()
}
