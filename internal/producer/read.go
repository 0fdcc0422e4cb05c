package producer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/walk"
)

// Reading files is the bottleneck with many small files (seed 000, finding
// 1; seed 002). Small files are therefore opened and read by a pool of
// goroutines ahead of the stream writer, and handed to it in walk order;
// large files are opened ahead and streamed with read-ahead by the writer.
const (
	smallFile     = 1 << 20  // files up to this size are read whole, in parallel
	prefetchBytes = 64 << 20 // memory for small files read ahead
	prefetchItems = 4096     // entries in flight between walker and writer
)

// item is one walked entry on its way to the stream.
type item struct {
	walk.Item
	unchanged bool   // content is in the base saveset: nothing to read
	holey     bool   // takes less room on disk than its size: may have holes
	data      []byte // a small file's content (in buf)
	buf       []byte // from getBuf, given back by releaseTokens
	file      *os.File
	err       error // opening or reading failed: skip with a warning
	changed   bool  // the file changed while it was read
	tokens    int   // read-ahead budget held by data
	done      chan struct{}
}

// baseIndex walks the base saveset's index in step with the walker (both
// are in index order), so finding an unchanged file costs no lookup.
type baseIndex struct {
	it  *index.Iter
	id  int64
	cur *index.Entry
	end bool
}

func (b *baseIndex) find(path string) *index.Entry {
	for !b.end {
		if b.cur == nil {
			if !b.it.Next() {
				b.end = true
				return nil
			}
			e := *b.it.Entry()
			b.cur = &e
		}
		switch c := index.Compare(b.cur.Path, path); {
		case c < 0:
			b.cur = nil
		case c == 0:
			return b.cur
		default:
			return nil
		}
	}
	return nil
}

// unchangedSince reports whether a file is the same as in the base: size,
// mtime, ctime and inode all equal, and it was not changing back then.
func unchangedSince(cur, base *index.Entry) bool {
	return cur.Type == index.TypeFile && base.Type == index.TypeFile &&
		cur.Size == base.Size && cur.MTime == base.MTime && cur.CTime == base.CTime &&
		cur.Inode == base.Inode && cur.Dev == base.Dev && base.Flags&index.FlagChanged == 0
}

// stream walks the paths and writes every entry to the stream and the index.
func (b *producer) stream(strm *stream.Writer, idxw *index.Writer, base *baseIndex) error {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()

	workers := b.spec.Workers
	if workers <= 0 {
		workers = 4 * runtime.GOMAXPROCS(0)
	}
	ordered := make(chan *item, prefetchItems)
	toRead := make(chan *item, prefetchItems)
	readAhead := b.spec.ReadAhead
	if readAhead <= 0 {
		readAhead = prefetchBytes
	}
	readAhead = max(readAhead, 2*smallFile)       // room for the largest small file
	budget := make(chan struct{}, readAhead/4096) // one token per 4 KiB read ahead
	walkErr := make(chan error, 1)

	// Walker: emits items in index order.
	go func() {
		defer close(ordered)
		defer close(toRead)
		err := walk.Walk(ctx, b.spec.Paths, walk.Options{Excludes: b.spec.Excludes, SkipPaths: b.spec.Skip},
			func(wi *walk.Item) error {
				it := &item{Item: *wi}
				e := &it.Entry
				if base != nil {
					if be := base.find(e.Path); be != nil && unchangedSince(e, be) {
						it.unchanged = true
						e.Flags |= index.FlagUnchanged
						e.Source = uint64(base.id)
						if be.Flags&index.FlagUnchanged != 0 {
							e.Source = be.Source
						}
						e.Offset, e.Digest = be.Offset, be.Digest
					}
				}
				if e.Type == index.TypeFile && !it.unchanged {
					// A file with holes is read as a large file is (not
					// prefetched whole), its holes found when it is written.
					it.holey = wi.Alloc < e.Size
					if len(wi.Abs) >= unix.PathMax {
						// Too long to open by name later: open it now,
						// relative to its directory.
						f, err := wi.Open()
						if err != nil {
							it.err = err
						}
						it.file = f
					}
					// The read-ahead budget is taken here, in walk order,
					// and given back by the writer in the same order: the
					// next file the writer needs always has its share, so
					// readers that ran ahead can never starve it.
					if e.Size <= smallFile && !it.holey {
						it.tokens = int(e.Size/4096) + 1
						for range it.tokens {
							select {
							case budget <- struct{}{}:
							case <-ctx.Done():
								return ctx.Err()
							}
						}
					}
					it.done = make(chan struct{})
					select {
					case toRead <- it:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				select {
				case ordered <- it:
				case <-ctx.Done():
					return ctx.Err()
				}
				return nil
			},
			func(w walk.Warning) {
				msg := w.Op + ": " + errText(w.Err)
				if w.Op == "name" || w.Op == "skip" {
					msg = errText(w.Err)
				}
				b.warnAsync(w.Path, msg)
			})
		walkErr <- err
	}()

	// Readers: open every file ahead; read small ones whole.
	for range workers {
		go func() {
			for it := range toRead {
				b.prefetch(it, budget)
				close(it.done)
			}
		}()
	}

	var firstErr error
	for it := range ordered {
		if firstErr != nil {
			b.release(it, budget)
			continue
		}
		if err := b.write(strm, idxw, it, budget); err != nil {
			firstErr = err
			cancel()
		}
		b.drainWarnings()
	}
	b.drainWarnings()
	if firstErr != nil {
		return firstErr
	}
	if err := <-walkErr; err != nil {
		return err
	}
	return nil
}

// warnAsync queues a warning from another goroutine; the writer goroutine
// records it (hooks.Warn need not be safe for concurrent use).
func (b *producer) warnAsync(path, msg string) {
	b.asyncMu.Lock()
	b.asyncWarn = append(b.asyncWarn, [2]string{path, msg})
	b.asyncMu.Unlock()
}

func (b *producer) drainWarnings() {
	b.asyncMu.Lock()
	ws := b.asyncWarn
	b.asyncWarn = nil
	b.asyncMu.Unlock()
	for _, w := range ws {
		b.hooks.Warn(w[0], w[1])
	}
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// openSource opens a file to back up without touching its access time where
// the kernel allows it, as a raw descriptor (regular files gain nothing from
// Go's poller, and registering each with it costs a system call).
// O_NONBLOCK keeps a file replaced by a FIFO since the walk from blocking.
func openSource(path string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	for {
		fd, err := unix.Open(path, flags|unix.O_NOATIME, 0)
		if errors.Is(err, unix.EPERM) {
			fd, err = unix.Open(path, flags, 0)
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// readFull reads len(buf) bytes from fd or up to its end.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

func (b *producer) prefetch(it *item, budget chan struct{}) {
	if it.err != nil {
		return
	}
	if it.file != nil { // opened by the walker (a path too long to open by name)
		b.prefetchFile(it, budget)
		return
	}
	fd, err := openSource(it.Abs)
	if err != nil {
		it.err = err
		return
	}
	// The file must still be the regular file the walker saw.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		it.err = err
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		it.err = errors.New("no longer a regular file")
		return
	}
	size := it.Entry.Size
	if size > smallFile || it.holey {
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_SEQUENTIAL)
		it.file = os.NewFile(uintptr(fd), it.Abs)
		return
	}
	defer unix.Close(fd)
	// Read one byte more than expected, to notice a file that grew.
	buf := getBuf(int(size) + 1)
	it.buf = buf
	n, err := readFull(fd, buf)
	if err != nil {
		it.err = &fs.PathError{Op: "read", Path: it.Abs, Err: err}
		return
	}
	if int64(n) != size {
		it.changed = true
	}
	it.data = buf[:min(int64(n), size)]
	if err := unix.Fstat(fd, &st); err != nil || st.Size != it.Entry.Size || st.Mtim.Nano() != it.Entry.MTime {
		it.changed = true
	}
}

// prefetchFile reads a file the walker already opened.
func (b *producer) prefetchFile(it *item, budget chan struct{}) {
	size := it.Entry.Size
	if size > smallFile || it.holey {
		return
	}
	f := it.file
	it.file = nil
	defer f.Close()
	buf := getBuf(int(size) + 1)
	it.buf = buf
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		it.err = err
		return
	}
	if int64(n) != size {
		it.changed = true
	}
	it.data = buf[:min(int64(n), size)]
	if changedAfterRead(f, &it.Entry) {
		it.changed = true
	}
}

// changedAfterRead compares the open file's status with what the walker saw.
func changedAfterRead(f *os.File, e *index.Entry) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return true
	}
	return st.Size != e.Size || st.Mtim.Nano() != e.MTime
}

func (b *producer) release(it *item, budget chan struct{}) {
	if it.done == nil {
		return
	}
	<-it.done
	if it.file != nil {
		it.file.Close()
	}
	releaseTokens(it, budget)
}

func releaseTokens(it *item, budget chan struct{}) {
	for range it.tokens {
		<-budget
	}
	it.tokens = 0
	it.data = nil
	if it.buf != nil {
		putBuf(it.buf)
		it.buf = nil
	}
}

// Small files are read into buffers kept in pools by power-of-two size
// (4 KiB … 2 MiB) and reused once the stream has the content: with 100,000
// files of 10 KiB, allocating a buffer per file made a gigabyte of garbage
// and kept the collector busy.
var bufPools [bufClasses]sync.Pool

const (
	minBufShift = 12 // 4 KiB
	bufClasses  = 10 // up to 2 MiB, above smallFile+1
)

// getBuf returns a buffer of n bytes (n ≤ 2 MiB) from the pools.
func getBuf(n int) []byte {
	c := max(bits.Len(uint(n-1))-minBufShift, 0)
	if c >= bufClasses {
		return make([]byte, n)
	}
	if b, ok := bufPools[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<(c+minBufShift))
}

// putBuf gives a buffer from getBuf back.
func putBuf(b []byte) {
	c := bits.Len(uint(cap(b)-1)) - minBufShift
	if c < 0 || c >= bufClasses || cap(b) != 1<<(c+minBufShift) {
		return
	}
	b = b[:cap(b)]
	bufPools[c].Put(&b)
}

// write puts one entry into the stream and the index.
func (b *producer) write(strm *stream.Writer, idxw *index.Writer, it *item, budget chan struct{}) error {
	e := &it.Entry
	if it.done != nil {
		<-it.done
	}
	if it.Entry.Type == index.TypeFile && !it.unchanged {
		defer releaseTokens(it, budget)
		if it.err != nil {
			if errors.Is(it.err, fs.ErrNotExist) {
				b.hooks.Warn(e.Path, "file vanished before it could be read; not backed up")
			} else {
				b.hooks.Warn(e.Path, "cannot read: "+errText(it.err)+"; not backed up")
			}
			return nil
		}
		var content io.Reader = bytes.NewReader(it.data)
		var data []stream.Extent
		if it.file != nil {
			defer it.file.Close()
			// A large file counts as it is read, so the peak rate is
			// a rate, not a file size.
			var r io.Reader = it.file
			if it.holey {
				if data = DataExtents(int(it.file.Fd()), e.Size); data != nil {
					r = &extentReader{f: it.file, data: data, holes: b.hooks.Phase.Source.Add}
				}
			}
			content = &countingReader{r: r, add: b.hooks.Phase.Source.Add}
		}
		var err error
		if data != nil {
			err = strm.WriteSparseEntry(e, data, content)
			// Holes count as the source bytes they are (the file's size),
			// those before an extent as it is reached, the last one here.
			var end int64
			if n := len(data); n > 0 {
				end = data[n-1].End()
			}
			b.hooks.Phase.Source.Add(e.Size - end)
		} else {
			err = strm.WriteEntry(e, content)
		}
		if it.file != nil {
			if cr := content.(*countingReader); cr.err != nil {
				// A read error in the middle of a large file: what was read
				// is stored, padded; say so.
				it.changed = true
				b.hooks.Warn(e.Path, "read error after "+fmt.Sprint(cr.n)+" bytes: "+errText(cr.err)+"; stored content is incomplete")
			}
			if changedAfterRead(it.file, e) {
				it.changed = true
			}
		}
		if errors.Is(err, stream.ErrShrank) {
			it.changed = true
			err = nil
		}
		if err != nil {
			return err
		}
		if it.changed {
			e.Flags |= index.FlagChanged
			b.hooks.Warn(e.Path, "file changed as we read it")
		}
		if it.file == nil {
			b.hooks.Phase.Source.Add(e.Size)
		}
	} else if !it.unchanged {
		if err := strm.WriteEntry(e, nil); err != nil {
			return err
		}
	}
	if err := idxw.Add(e); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if !it.unchanged && !b.uncounted[e.Path] {
		// The job counts what it backed up; the index lists the whole tree.
		b.files++
		b.hooks.Phase.Files.Add(1)
	}
	if b.hooks.Tick != nil {
		b.hooks.Tick(e.Path)
	}
	return nil
}

// dataExtents maps a file's data with SEEK_DATA and SEEK_HOLE, in
// storable extents (stream.AlignExtents). It returns nil when the file has
// no hole within size bytes, or the file system cannot tell: the file is
// then read whole, holes as zeros, as before. The file's offset is left
// where it was.
func DataExtents(fd int, size int64) []stream.Extent {
	// Seeking for data and holes moves the file's offset: it is put back,
	// for a caller that then reads the file from where it was.
	if at, err := unix.Seek(fd, 0, io.SeekCurrent); err == nil {
		defer unix.Seek(fd, at, io.SeekStart)
	}
	var data []stream.Extent
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) || (err == nil && start >= size) {
			break // only a hole from off to the end
		}
		if err != nil {
			return nil
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil
		}
		end = min(end, size)
		data = append(data, stream.Extent{Offset: start, Length: end - start})
		if len(data) > stream.MaxExtents {
			return nil // too fragmented to be worth a map
		}
		off = end
	}
	if len(data) == 1 && data[0].Offset == 0 && data[0].Length == size {
		return nil // no hole
	}
	data = stream.AlignExtents(data, size)
	if data == nil {
		data = []stream.Extent{} // only a hole
	}
	return data
}

// extentReader reads a file's data extents one after the other, skipping
// the holes between them; holes counts the hole bytes as they are passed
// (nil: not counted).
type extentReader struct {
	f     *os.File
	data  []stream.Extent
	i     int
	pos   int64 // within data[i]
	holes func(int64)
	prev  int64 // end of the extent before data[i]
}

func (r *extentReader) Read(p []byte) (int, error) {
	for r.i < len(r.data) && r.pos == r.data[r.i].Length {
		r.prev = r.data[r.i].End()
		r.i, r.pos = r.i+1, 0
	}
	if r.i == len(r.data) {
		return 0, io.EOF
	}
	x := r.data[r.i]
	if r.pos == 0 && r.holes != nil && x.Offset > r.prev {
		r.holes(x.Offset - r.prev)
	}
	n, err := r.f.ReadAt(p[:min(int64(len(p)), x.Length-r.pos)], x.Offset+r.pos)
	r.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// countingReader remembers how far a large file was read and its error. A
// read error ends the content early (the stream pads it and reports
// ErrShrank), so one bad sector costs a warning, not the job.
type countingReader struct {
	r   io.Reader
	add func(int64) // counts bytes read (nil: none)
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.add != nil && n > 0 {
		c.add(int64(n))
	}
	if err != nil && err != io.EOF {
		c.err = err
		err = io.EOF
	}
	return n, err
}
