package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// straight through the media layers, and registers it in the catalog.
func craftSaveset(t *testing.T, env *engine.Env, entries []crafted) int64 {
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
	sw := span.NewWriter(tp, bc, func([]string) (tape.Device, string, error) { return nil, "", errors.New("no more tapes") },
		func(int) []byte {
			return stream.LabelFrame(stream.Label{Format: "kura-saveset", Version: 1, SavesetID: uint64(ss.ID)})
		}, "hostile")
	sw2, err := stream.NewWriter(sw, stream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idxEntries []index.Entry
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
	frames, err := sw2.Close()
	must(t, err)
	parts, err := sw.Finish()
	must(t, err)
	idxPath := filepath.Join(home.IndexDir(env.Home), fmt.Sprintf("%d.idx", ss.ID))
	f, err := os.Create(idxPath)
	must(t, err)
	iw := index.NewWriter(f, nil)
	for i := range idxEntries {
		must(t, iw.Add(&idxEntries[i]))
	}
	iw.SetFrames(frames)
	must(t, iw.Close())
	must(t, f.Close())
	for _, p := range parts {
		ss.Parts = append(ss.Parts, catalog.Part{Barcode: p.Barcode, File: p.File, Bytes: p.Bytes})
	}
	ss.Status = "complete"
	must(t, env.Catalog.UpdateSaveset(ss))
	return ss.ID
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

func TestRestoreRefusesStreamThatDisagreesWithIndex(t *testing.T) {
	env := newEnv(t)
	base := t.TempDir()
	to := filepath.Join(base, "deep", "target")
	now := time.Now().UnixNano()
	// The stream holds "../../evil" where the index says "evil".
	id := craftSaveset(t, env, []crafted{
		{Entry: index.Entry{Path: "evil", Type: index.TypeFile, Mode: 0o644, MTime: now}, tarPath: "../../evil", content: "x"},
	})
	_, err := env.Restore(context.Background(), engine.RestoreOptions{SavesetID: id, To: to})
	if err == nil || errors.Is(err, engine.ErrWarnings) {
		t.Fatalf("restore accepted a stream that disagrees with its index: %v", err)
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
