package producer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/stream"
)

// A command's output has no size until it ends, and a tar entry's header,
// which comes first, holds its size. The output is therefore stored in
// parts of at most PartSize bytes, each buffered in memory and then
// written as one tar entry of its exact size — never a temporary file:
//
//	NAME                      the first PartSize bytes (all of a short output)
//	NAME.kura-part-000002     the next PartSize bytes, FlagPart in the index
//	NAME.kura-part-000003     …
//
// Kura's restore appends each part to NAME; with stock tools,
// `cat NAME.kura-part-* >> NAME` (the numbers sort in order) or
// `tar -xOf - NAME 'NAME.kura-part-*'` gives the output back whole.
// The program's exit status decides: a non-zero status (or a signal)
// fails the backup after what was read, and the saveset is never
// complete.

// DefaultPartSize is the part size of a command's output: memory held per
// running command, 512 header bytes per part (0.003 %).
const DefaultPartSize = 16 << 20

// MaxPartSize bounds Spec.PartSize.
const MaxPartSize = 1 << 30

// streamSources runs the spec's sources one after the other and stores
// each step's output.
func (b *producer) streamSources(strm *stream.Writer, idxw *index.Writer) error {
	steps, err := plugin.Expand(b.ctx, b.spec.Sources)
	if err != nil {
		return err
	}
	partSize := b.spec.PartSize
	if partSize <= 0 {
		partSize = DefaultPartSize
	}
	if partSize > MaxPartSize {
		return fmt.Errorf("part size %d: at most %d", partSize, MaxPartSize)
	}
	// The folders the names are in, and the names, in index order.
	type item struct {
		name string
		dir  bool
		step plugin.Step
	}
	var items []item
	dirs := map[string]bool{}
	for _, s := range steps {
		items = append(items, item{name: s.Name, step: s})
		for d := path.Dir(s.Name); d != "."; d = path.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				items = append(items, item{name: d, dir: true})
			}
		}
	}
	sort.Slice(items, func(i, j int) bool { return index.Compare(items[i].name, items[j].name) < 0 })
	now := time.Now().UnixNano()
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	var buf []byte
	for _, it := range items {
		if it.dir {
			e := &index.Entry{Path: it.name, Type: index.TypeDir, Mode: 0o700, UID: uid, GID: gid, MTime: now, CTime: now}
			if err := b.add(strm, idxw, e, nil); err != nil {
				return err
			}
			continue
		}
		if buf == nil {
			buf = make([]byte, partSize)
		}
		if err := b.runStep(strm, idxw, it.step, buf, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// add writes one entry to the stream and the index and counts it.
func (b *producer) add(strm *stream.Writer, idxw *index.Writer, e *index.Entry, content []byte) error {
	var r io.Reader
	if content != nil {
		r = &sliceReader{b: content}
	}
	if err := strm.WriteEntry(e, r); err != nil {
		return err
	}
	if err := idxw.Add(e); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	b.hooks.Phase.Source.Add(e.Size)
	// A command's output counts as one file; its folders and parts do not.
	if e.Type == index.TypeFile && e.Flags&index.FlagPart == 0 {
		b.files++
		b.hooks.Phase.Files.Add(1)
	}
	if b.hooks.Tick != nil {
		b.hooks.Tick(e.Path)
	}
	return nil
}

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// runStep runs one program and stores its standard output in parts.
func (b *producer) runStep(strm *stream.Writer, idxw *index.Writer, s plugin.Step, buf []byte, uid, gid uint32) error {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	p, out, err := plugin.StartStep(ctx, s)
	if err != nil {
		return err
	}
	defer out.Close()
	fail := func(err error) error {
		cancel() // ends the program (and its process group)
		out.Close()
		_ = p.Wait()
		return err
	}
	for part := 1; ; part++ {
		n, rerr := io.ReadFull(out, buf)
		end := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !end {
			return fail(fmt.Errorf("%s: reading its output: %w", s.Label, rerr))
		}
		if part > 1 && n == 0 {
			break
		}
		now := time.Now().UnixNano()
		e := &index.Entry{Path: s.Name, Type: index.TypeFile, Mode: 0o600, UID: uid, GID: gid,
			Size: int64(n), MTime: now, CTime: now}
		if part > 1 {
			e.Path, e.Flags = plugin.PartName(s.Name, part), index.FlagPart
		}
		if err := b.add(strm, idxw, e, buf[:n]); err != nil {
			return fail(err)
		}
		if end {
			break
		}
	}
	return p.Wait()
}
