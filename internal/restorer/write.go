package restorer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
)

// Creating files is what a small-file restore spends its time on (seed 002:
// per-file cost decides small-file speed). The restore therefore reads each
// small file's content from the stream in order, and a few writers create
// the files, write them and set their metadata while the next ones are
// decoded.

// dirHandle is a directory of the target, opened by the restore's
// dirCursor, shared by the writers that create files in it; the last user
// closes it.
type dirHandle struct {
	root *os.Root // set when it was opened through the target's root
	f    *os.File
	fd   int
	refs atomic.Int32
}

func (d *dirHandle) acquire() *dirHandle {
	d.refs.Add(1)
	return d
}

func (d *dirHandle) release() {
	if d.refs.Add(-1) == 0 {
		d.f.Close()
		if d.root != nil {
			d.root.Close()
		}
	}
}

// fileJob is one small file to create.
type fileJob struct {
	dir  *dirHandle
	base string
	e    index.Entry
	data []byte
}

// fileWriters create small files in parallel. Memory is bounded by a byte
// budget for the contents waiting to be written.
type fileWriters struct {
	r      *restoreRun
	jobs   chan *fileJob
	wg     sync.WaitGroup
	budget chan struct{} // one token per 4 KiB of waiting content
	once   sync.Once
}

const (
	writeAheadBytes = 64 << 20
	budgetUnit      = 4096
)

func newFileWriters(r *restoreRun) *fileWriters {
	w := &fileWriters{r: r, jobs: make(chan *fileJob, 1024), budget: make(chan struct{}, writeAheadBytes/budgetUnit)}
	n := 2 * runtime.GOMAXPROCS(0)
	w.wg.Add(n)
	for range n {
		go func() {
			defer w.wg.Done()
			for j := range w.jobs {
				w.write(j)
			}
		}()
	}
	return w
}

func tokens(n int64) int { return int(n/budgetUnit) + 1 }

// buffer returns room for n bytes of content, waiting for the budget.
func (w *fileWriters) buffer(n int64) []byte {
	for range tokens(n) {
		w.budget <- struct{}{}
	}
	return make([]byte, n)
}

// free returns the budget of a buffer of n bytes.
func (w *fileWriters) free(n int) {
	for range tokens(int64(n)) {
		<-w.budget
	}
}

func (w *fileWriters) add(j *fileJob) { w.jobs <- j }

// wait lets the writers finish every queued file; later calls do nothing.
func (w *fileWriters) wait() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		close(w.jobs)
		w.wg.Wait()
	})
}

func (w *fileWriters) write(j *fileJob) {
	r := w.r
	defer j.dir.release()
	if j.data != nil {
		defer w.free(len(j.data))
	}
	err := writeFileAt(r, j.dir.fd, j.base, &j.e, j.data)
	if errors.Is(err, fs.ErrExist) {
		if !r.clearWay(j.dir.fd, j.base, &j.e) {
			return
		}
		err = writeFileAt(r, j.dir.fd, j.base, &j.e, j.data)
	}
	if err != nil {
		r.warn(j.e.Path, err.Error())
		return
	}
	r.counted()
}

// writeFileAt creates a file with its content and metadata using only the
// directory's descriptor.
func writeFileAt(r *restoreRun, dirfd int, base string, e *index.Entry, data []byte) error {
	fd, err := createAt(dirfd, base)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			unix.Close(fd)
			return fmt.Errorf("write: %w", err)
		}
		data = data[n:]
	}
	if err := setFileMeta(r, fd, e); err != nil {
		unix.Close(fd)
		return err
	}
	return unix.Close(fd)
}

// setFileMeta sets owner (as root), xattrs, mode and times of an open file.
// The xattrs and the mode are set after the owner: chown clears a file
// capability (security.capability) and setuid bits.
func setFileMeta(r *restoreRun, fd int, e *index.Entry) error {
	if r.asRoot {
		if err := unix.Fchown(fd, int(e.UID), int(e.GID)); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	r.setXattrs(e, func(name string, value []byte) error { return unix.Fsetxattr(fd, name, value, 0) })
	if err := unix.Fchmod(fd, e.Mode&0o7777); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(e.MTime), unix.NsecToTimespec(e.MTime)}
	if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("set times: %w", err)
	}
	return nil
}
