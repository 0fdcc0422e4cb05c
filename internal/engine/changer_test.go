package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
)

// otherChanger is a library.Changer that is not a *library.Library: it
// passes every call on to the one it embeds and counts the drives leased
// through it and the tape files read on the tapes it opened.
type otherChanger struct {
	library.Changer
	acquired, read *atomic.Int64
}

// countedTape counts the tape files opened for reading on it.
type countedTape struct {
	tape.Device
	read *atomic.Int64
}

func (t countedTape) Open(n int) (tape.FileReader, error) {
	t.read.Add(1)
	return t.Device.Open(n)
}

func (c otherChanger) Acquire(ctx context.Context, n int) (library.Drive, error) {
	c.acquired.Add(1)
	return c.Changer.Acquire(ctx, n)
}

func (c otherChanger) OpenTape(barcode string) (tape.Device, error) {
	t, err := c.Changer.OpenTape(barcode)
	if err != nil {
		return nil, err
	}
	return countedTape{Device: t, read: c.read}, nil
}

// TestBackupRestoreThroughAnotherChanger runs a backup and its restore
// with Env.OpenChanger handing out a Changer of another type: the engine
// writes and reads the tapes only through the library.Changer interface,
// so a second kind of library (a physical one) needs no engine change.
func TestBackupRestoreThroughAnotherChanger(t *testing.T) {
	env := newEnv(t)
	var acquired, read atomic.Int64
	var names []string
	env.OpenChanger = func(rec catalog.Library) (library.Changer, error) {
		lib, err := library.Open(rec.Dir)
		if err != nil {
			return nil, err
		}
		names = append(names, rec.Name)
		return otherChanger{Changer: lib, acquired: &acquired, read: &read}, nil
	}
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("through another changer"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "sub", "big"), []byte(strings.Repeat("0123456789", 200_000)), 0o644))
	want := manifest(t, src)

	res := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	if acquired.Load() == 0 {
		t.Fatalf("the backup leased no drive through the changer Env.OpenChanger gave")
	}
	before := read.Load()
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: res.Figures.SavesetID, To: to})
	if read.Load() == before {
		t.Fatalf("the restore read no tape file through the changer Env.OpenChanger gave")
	}
	sameTree(t, want, manifest(t, restored(to, src)))
	for _, n := range names {
		if n != engine.DefaultLibrary {
			t.Errorf("OpenChanger asked for library %q, want %q", n, engine.DefaultLibrary)
		}
	}
}
