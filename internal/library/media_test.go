package library

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/faultdev"
	"github.com/kura-backup/kura/internal/tape/memtape"
)

// memMedia keeps a library's tapes on a memtape.Shelf.
type memMedia struct{ shelf *memtape.Shelf }

func (m memMedia) Format(l tape.Label, _ tape.Options) error {
	if _, err := m.shelf.Format(l); err != nil {
		if errors.Is(err, memtape.ErrExists) {
			return fmt.Errorf("%w: %w", fs.ErrExist, err)
		}
		return err
	}
	return nil
}

func (m memMedia) Open(bc string, _ tape.Label, opts tape.Options) (tape.Device, error) {
	md, err := m.shelf.Media(bc)
	if err != nil {
		return nil, err
	}
	return md.Load(opts.BlockSize)
}

func (m memMedia) Exists(bc string) (bool, error) {
	_, err := m.shelf.Media(bc)
	return err == nil, nil
}

// faultMedia hands out memMedia's devices wrapped in faultdev, which offers
// none of the optional capabilities (no relabelling, no label report).
type faultMedia struct{ memMedia }

func (m faultMedia) Open(bc string, standIn tape.Label, opts tape.Options) (tape.Device, error) {
	d, err := m.memMedia.Open(bc, standIn, opts)
	if err != nil {
		return nil, err
	}
	return faultdev.New(d), nil
}

// TestLibraryOnOtherMedia: the changer works the same whatever its Media
// are: the tapes of a library opened on memory media are made, loaded,
// written, read, moved, inspected and erased there, and nothing of them
// lands in the library folder.
func TestLibraryOnOtherMedia(t *testing.T) {
	cfg := testConfig(t)
	media := memMedia{memtape.NewShelf(nil)}
	l, err := CreateWithMedia(cfg, media)
	if err != nil {
		t.Fatal(err)
	}
	if got := media.shelf.Barcodes(); !slices.Equal(got, []string{"KUR001", "KUR002", "KUR003", "KUR004"}) {
		t.Fatalf("the shelf holds %v, want the four new tapes", got)
	}
	if ents, err := os.ReadDir(filepath.Join(l.dir, tapesDir)); err != nil || len(ents) != 0 {
		t.Errorf("the library folder's tapes/ holds %d entries (%v): the tapes went to the folder", len(ents), err)
	}

	drv, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, bc, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dev.(*memtape.Tape); !ok || bc != "KUR001" {
		t.Fatalf("LoadWritable gave %T %s, want the memory tape KUR001", dev, bc)
	}
	info := writeFile(t, dev, 100000)
	if err := drv.Release(); err != nil {
		t.Fatal(err)
	}

	// A second library handle on the same media sees it all.
	l2, err := OpenWithMedia(cfg.Dir, media)
	if err != nil {
		t.Fatal(err)
	}
	ts := tapeByBarcode(t, l2, "KUR001")
	if ts.State != StateAppendable || ts.Used != info.Bytes || ts.Files != 1 || ts.Location != "drive 1" {
		t.Errorf("KUR001: %+v, want appendable, %d bytes in 1 tape file, in drive 1", ts, info.Bytes)
	}
	if ts := tapeByBarcode(t, l2, "KUR002"); ts.State != StateBlank {
		t.Errorf("KUR002: %+v, want blank", ts)
	}
	rd, err := l2.OpenTape("KUR001")
	if err != nil {
		t.Fatal(err)
	}
	fr, err := rd.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(fr)
	fr.Close()
	rd.Close()
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{0xA5}, 100000)) {
		t.Fatalf("KUR001 reads back %d bytes, %v", len(got), err)
	}

	if err := l2.Export("KUR001"); err != nil {
		t.Fatal(err)
	}
	if _, err := l2.OpenTape("KUR001"); !errors.Is(err, ErrExported) {
		t.Errorf("OpenTape of an exported tape: %v, want ErrExported", err)
	}
	if err := l2.Import("KUR001"); err != nil {
		t.Fatal(err)
	}
	if freed, err := l2.Reclaim(); freed != 0 || err != nil {
		t.Errorf("Reclaim on media without the capability = %d, %v; want 0, nil", freed, err)
	}
	if err := l2.Erase("KUR001"); err != nil {
		t.Fatal(err)
	}
	if ts := tapeByBarcode(t, l2, "KUR001"); ts.State != StateBlank || ts.Generation != 2 {
		t.Errorf("KUR001 after Erase: %+v, want blank, generation 2", ts)
	}

	// New tapes go to the media too, past a barcode the media already hold.
	if _, err := media.shelf.Format(tape.Label{Barcode: "KUR005", Library: "stray", BlockSize: 4096, Capacity: MinTapeSize}); err != nil {
		t.Fatal(err)
	}
	made, err := l2.AddTapes(1)
	if err != nil || !slices.Equal(made, []string{"KUR006"}) {
		t.Errorf("AddTapes = %v, %v; want KUR006 (KUR005 is taken on the media)", made, err)
	}
}

// TestEraseNeedsRelabeler: media whose devices cannot be relabelled refuse
// Erase with ErrUnsupported and keep the tape's data; a device that keeps
// no second label copy is inspected all the same.
func TestEraseNeedsRelabeler(t *testing.T) {
	media := faultMedia{memMedia{memtape.NewShelf(nil)}}
	l, err := CreateWithMedia(testConfig(t), media)
	if err != nil {
		t.Fatal(err)
	}
	writeTo(t, l, "KUR002", 5000)
	if err := l.Erase("KUR002"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Erase = %v, want ErrUnsupported", err)
	}
	if ts := tapeByBarcode(t, l, "KUR002"); ts.State != StateAppendable || ts.Used != 5000 || ts.Error != "" {
		t.Errorf("KUR002 after the refused Erase: %+v", ts)
	}
}
