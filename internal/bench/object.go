package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// The object-store test (issue 13): backup and restore to a library whose
// tapes are in an S3 bucket (RunOptions.S3), next to a folder library, on
// the same set. Each set runs in interleaved pairs, the order alternating
// as in the network test (folder first in odd pairs): a fresh home and
// library, `kura backup --vtl bench --json SET`, then `kura restore ID
// --to DIR --json` into an emptied folder; the home and the restored
// folder are removed after each side, and the S3 side's tapes erased
// (relabelled: their chunk objects deleted). Credentials come from the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or a credentials
// file), as for any S3 library.

// Sides of an object-store pair (Run.Library).
const (
	sideFolder = "folder"
	sideS3     = "s3"
)

// objectRuns is how many runs the object-store test records.
func (rn *runner) objectRuns() int { return len(rn.sets) * 2 * 2 * rn.o.Repeats }

// objectRun is a run of the object-store test on set si, pair n, side.
func (rn *runner) objectRun(si SetInfo, pair int, side, phase string) Run {
	return Run{Test: TestObject, Case: si.Name + ", " + side, Set: si.Name, Tool: ToolKura, Phase: phase, Rep: pair,
		Level: rn.o.Compress, Library: side, Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer,
		Files: int64(si.Files), Bytes: si.Bytes, Durable: phase == PhaseBackup}
}

// measureObject runs the object-store pairs of every set.
func (rn *runner) measureObject(ctx context.Context) {
	for _, si := range rn.res.Data.Sets {
		for pair := 1; pair <= rn.o.Repeats; pair++ {
			sides := [2]string{sideFolder, sideS3}
			if pair%2 == 0 {
				sides = [2]string{sideS3, sideFolder}
			}
			for _, side := range sides {
				if ctx.Err() != nil {
					return
				}
				rn.objectSide(ctx, si, pair, side)
			}
		}
	}
}

// objectSide is one side of a pair: backup, restore, cleanup.
func (rn *runner) objectSide(ctx context.Context, si SetInfo, pair int, side string) {
	name := fmt.Sprintf("object-%s-%s-r%d", si.Name, side, pair)
	home := filepath.Join(rn.o.Scratch, "home-"+name)
	target := filepath.Join(rn.o.Scratch, "restore-"+name)
	defer func() {
		if side == sideS3 {
			if err := eraseTapes(home); err != nil {
				rn.logf("erasing the tapes of %s in the bucket: %v", name, err)
			}
		}
		for _, p := range []string{home, target} {
			if err := os.RemoveAll(p); err != nil {
				rn.logf("removing %s: %v", p, err)
			}
		}
	}()
	b := rn.objectRun(si, pair, side, PhaseBackup)
	var media *library.MediaConfig
	if side == sideS3 {
		media = &library.MediaConfig{Kind: library.MediaS3, URL: strings.TrimSuffix(rn.o.S3, "/") + "/" + name}
	}
	if err := os.RemoveAll(home); err != nil {
		rn.add(failed(b, err))
		return
	}
	if err := createLibraryOn(home, DefaultCombo, media); err != nil {
		rn.add(failed(b, fmt.Errorf("creating the library: %w", err)))
		return
	}
	b.Command = []string{rn.o.Kura, "--home", home, "backup", "--vtl", benchLibrary, "--compress", b.Level, "--json", filepath.Join(rn.o.Data, si.Name)}
	b = rn.kura(ctx, b, nil)
	rn.add(b)
	x := rn.objectRun(si, pair, side, PhaseRestore)
	if !b.OK() {
		rn.add(failed(x, fmt.Errorf("no backup to restore")))
		return
	}
	rn.add(rn.restoreRun(ctx, x, home, b.SavesetID, target))
}

// createLibraryOn creates the bench library in home, its tapes on media
// (nil: the library folder).
func createLibraryOn(home string, c Combo, media *library.MediaConfig) error {
	env, err := engine.Open(home)
	if err != nil {
		return err
	}
	defer env.Close()
	_, err = env.CreateLibrary(library.Config{Name: benchLibrary, BlockSize: c.Block, BufferSize: c.Buffer, Media: media})
	return err
}

// eraseTapes erases every written tape of home's bench library (in a
// bucket: its chunk objects deleted, the labels left).
func eraseTapes(home string) error {
	env, err := engine.Open(home)
	if err != nil {
		return err
	}
	defer env.Close()
	lib, err := env.Changer(benchLibrary)
	if err != nil {
		return err
	}
	tapes, err := lib.Tapes()
	if err != nil {
		return err
	}
	for _, t := range tapes {
		if t.Files == 0 {
			continue
		}
		if _, err := env.EraseTape(t.Barcode, true); err != nil {
			return err
		}
	}
	return nil
}
