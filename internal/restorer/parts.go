package restorer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/stream"
)

// A command's output is stored as a file entry followed by parts
// (index.FlagPart, named NAME.kura-part-NNNNNN; see producer). A restore
// into a folder appends each part to NAME, so that the folder holds the
// output whole, as the command wrote it.

// head is the file a restore wrote last: where its parts go.
type head struct {
	path   string
	size   int64 // bytes it holds: its own and the parts appended so far
	mtime  int64
	queued bool // written by a file writer (not yet known to be on disk)
}

func (r *restoreRun) setHead(e *index.Entry, queued bool) {
	if e.Type == index.TypeFile {
		r.head = head{path: e.Path, size: e.Size, mtime: e.MTime, queued: queued}
	}
}

// appendPart appends one part to the file restored before it; a part
// whose file was not restored (not included, kept by the overwrite policy,
// lost) is skipped with it.
func (r *restoreRun) appendPart(e *index.Entry) error {
	h := r.head
	if h.path == "" || !strings.HasPrefix(e.Path, h.path+plugin.PartSuffix) {
		return nil
	}
	if h.queued {
		// A small first part went to a file writer: let it finish.
		r.w.wait()
		r.w = newFileWriters(r)
		r.head.queued = false
	}
	dir, base := splitPath(h.path)
	if err := r.setDir(dir); err != nil {
		return err
	}
	fd, err := unix.Openat(r.cur.fd, base, unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		r.head = head{}
		return fmt.Errorf("appending to %s: %w", index.ShortPath(h.path), err)
	}
	f := os.NewFile(uintptr(fd), h.path)
	defer f.Close()
	// The file must be the one this restore wrote (a writer may have kept
	// an existing file under the overwrite policy).
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != h.size || st.Mtim.Nano() != h.mtime {
		r.head = head{}
		return nil
	}
	damaged := func(err error) error {
		f.Close()
		_ = unix.Unlinkat(r.cur.fd, base, 0)
		r.head = head{}
		return err
	}
	s, err := r.open(e)
	if err != nil {
		if errors.Is(err, errFatal) {
			return err
		}
		return damaged(&damageError{err: fmt.Errorf("%s: %w", index.ShortPath(h.path), err)})
	}
	if r.copyBuf == nil {
		r.copyBuf = make([]byte, 1<<20)
	}
	dg := stream.NewDigest()
	n, err := io.CopyBuffer(io.MultiWriter(f, dg), s.rd, r.copyBuf)
	r.phase.Source.Add(n)
	if err != nil {
		return damaged(&damageError{err: fmt.Errorf("saveset %d: %w", s.ss.ID, err)})
	}
	if stream.SumDigest(dg) != e.Digest {
		return damaged(&damageError{err: errors.New("content does not match its digest")})
	}
	if err := r.applyFileMeta(f, e); err != nil {
		return err
	}
	r.head.size += n
	r.head.mtime = e.MTime
	return nil
}
