package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// crafted is one entry of a hostile saveset: what the stream says (tarPath)
// and what the index says (Entry).
type crafted struct {
	index.Entry
	tarPath string // "" = same as Entry.Path
	content string
}

// craftSaveset writes a saveset whose stream and index an attacker chose,
// straight through the media layers (the index with AddUnchecked, so that
// it may hold any path, and also as the saveset's index tape file), and
// registers it in the catalog. With raw, the stream is a pax stream built
// by hand in one zstd frame, so that its names may break the rules the
// stream writer keeps (absolute, NUL); otherwise the stream writer writes it.
func craftSaveset(t *testing.T, env *engine.Env, entries []crafted, raw ...bool) int64 {
	t.Helper()
	lib, err := env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	drv, err := lib.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Release()
	tp, bc, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	ss := &catalog.Saveset{Level: "full", Status: "running", Selection: "hostile", Library: lib.Config().Name, Created: time.Now()}
	must(t, env.Catalog.CreateSaveset(ss))
	sw := span.NewWriter(tp, bc, func([]string, bool) (tape.Device, string, error) { return nil, "", errors.New("no more tapes") },
		func(int) []byte {
			return stream.LabelFrame(stream.Label{Format: "kura-saveset", Version: 1, SavesetID: uint64(ss.ID)})
		}, "hostile")
	var idxEntries []index.Entry
	var frames []index.Frame
	if len(raw) > 0 && raw[0] {
		idxEntries, frames = rawStream(t, sw, entries)
	} else {
		sw2, err := stream.NewWriter(sw, stream.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range entries {
			e := c.Entry
			if c.tarPath != "" {
				e.Path = c.tarPath
			}
			e.Size = int64(len(c.content))
			must(t, sw2.WriteEntry(&e, strings.NewReader(c.content)))
			ie := c.Entry
			ie.Size, ie.Offset, ie.Digest = e.Size, e.Offset, e.Digest
			idxEntries = append(idxEntries, ie)
		}
		frames, err = sw2.Close()
		must(t, err)
	}
	parts, err := sw.Finish()
	must(t, err)
	for _, p := range parts {
		ss.Parts = append(ss.Parts, catalog.Part{Barcode: p.Barcode, File: p.File, Bytes: p.Bytes})
	}
	ss.Status = "complete"
	meta, err := json.Marshal(map[string]any{"saveset": ss})
	must(t, err)
	var idx bytes.Buffer
	iw := index.NewWriter(&idx, nil)
	for i := range idxEntries {
		must(t, iw.AddUnchecked(&idxEntries[i]))
	}
	iw.SetFrames(frames)
	must(t, iw.SetMeta(meta))
	must(t, iw.Close())
	must(t, os.WriteFile(filepath.Join(home.IndexDir(env.Home), fmt.Sprintf("%d.idx", ss.ID)), idx.Bytes(), 0o600))
	fw, err := tp.Append("hostile index")
	must(t, err)
	_, err = fw.Write(idx.Bytes())
	must(t, err)
	info, err := fw.Finish()
	must(t, err)
	ss.IndexPart = catalog.Part{Barcode: bc, File: info.Number, Bytes: info.Bytes}
	must(t, env.Catalog.UpdateSaveset(ss))
	return ss.ID
}

// rawStream writes entries as a pax stream built by hand (every name in a
// pax "path" record, whatever it holds) in one zstd frame, and returns the
// index entries (with offsets and digests) and the frame table.
func rawStream(t *testing.T, sw *span.Writer, entries []crafted) ([]index.Entry, []index.Frame) {
	t.Helper()
	var tarb bytes.Buffer
	block := func(b []byte) {
		tarb.Write(b)
		if pad := len(b) % 512; pad != 0 {
			tarb.Write(make([]byte, 512-pad))
		}
	}
	var out []index.Entry
	for _, c := range entries {
		name := c.tarPath
		if name == "" {
			name = c.Entry.Path
		}
		ie := c.Entry
		ie.Offset, ie.Size = int64(tarb.Len()), int64(len(c.content))
		h := stream.NewDigest()
		h.Write([]byte(c.content))
		ie.Digest = stream.SumDigest(h)
		out = append(out, ie)
		rec := " path=" + name + "\n"
		n := len(rec) + 1
		for len(fmt.Sprint(n))+len(rec) != n {
			n = len(fmt.Sprint(n)) + len(rec)
		}
		rec = fmt.Sprint(n) + rec
		typ := byte('0')
		if c.Type == index.TypeDir {
			typ = '5'
		}
		block(ustarHeader("PaxHeaders/entry", 'x', int64(len(rec))))
		block([]byte(rec))
		block(ustarHeader("placeholder", typ, int64(len(c.content))))
		if c.content != "" {
			block([]byte(c.content))
		}
	}
	tarb.Write(make([]byte, 1024))
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	must(t, err)
	frame := enc.EncodeAll(tarb.Bytes(), nil)
	loc, err := sw.WriteFrame(frame)
	must(t, err)
	return out, []index.Frame{{Offset: 0, Size: uint32(tarb.Len()), CSize: uint32(len(frame)), Part: int32(loc.Part), PartOffset: loc.Offset}}
}

// ustarHeader is a 512-byte ustar header, made by hand (archive/tar will
// not write an 'x' header or a name with a NUL).
func ustarHeader(name string, typ byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], fmt.Sprintf("%011o\x00", time.Now().Unix()))
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func TestRestoreNeverWritesOutsideTarget(t *testing.T) {
	env := newEnv(t)
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	must(t, os.Mkdir(outside, 0o755))
	to := filepath.Join(base, "target")

	now := time.Now().UnixNano()
	id := craftSaveset(t, env, []crafted{
		// A symlink pointing out of the target, then a file "through" it.
		{Entry: index.Entry{Path: "link", Type: index.TypeSymlink, Link: outside, Mode: 0o777, MTime: now}},
		{Entry: index.Entry{Path: "rel", Type: index.TypeSymlink, Link: "../outside", Mode: 0o777, MTime: now}},
		{Entry: index.Entry{Path: "link/pwned", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "owned via absolute link"},
		{Entry: index.Entry{Path: "rel/pwned2", Type: index.TypeFile, Mode: 0o644, MTime: now}, content: "owned via relative link"},
	})
	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if !errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("restore of a hostile saveset: err %v; want it to finish with warnings", err)
	}
	if len(res.Warnings) != 2 {
		t.Errorf("want a warning for each file behind a symlink, got %q", res.Warnings)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Fatalf("restore wrote outside its target: %v", entries)
	}
	// The symlinks themselves are restored as symlinks (they are data).
	if l, err := os.Readlink(filepath.Join(to, "link")); err != nil || l != outside {
		t.Errorf("symlink not restored as such: %q %v", l, err)
	}
}

// A stream that disagrees with its index costs the file it disagrees on
// (a warning naming it, exit 3), never a write outside the target.
func TestRestoreSkipsStreamEntryThatDisagreesWithIndex(t *testing.T) {
	env := newEnv(t)
	base := t.TempDir()
	to := filepath.Join(base, "deep", "target")
	now := time.Now().UnixNano()
	// The stream holds "../../evil" where the index says "evil".
	id := craftSaveset(t, env, []crafted{
		{Entry: index.Entry{Path: "evil", Type: index.TypeFile, Mode: 0o644, MTime: now}, tarPath: "../../evil", content: "x"},
	})
	res, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if !errors.Is(err, engine.ErrWarnings) || len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "/evil: ") {
		t.Fatalf("restore of a stream that disagrees with its index: %v %q; want a warning naming the file", err, res.Warnings)
	}
	if _, err := os.Stat(filepath.Join(to, "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("restore wrote the file the stream disagrees on (stat err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(base, "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("restore wrote outside its target (stat err %v)", err)
	}
}

func TestIndexRefusesEscapingPaths(t *testing.T) {
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", "a//b", "./a"} {
		w := index.NewWriter(discard{}, nil)
		if err := w.Add(&index.Entry{Path: p, Type: index.TypeFile}); err == nil {
			t.Errorf("index accepted %q", p)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
