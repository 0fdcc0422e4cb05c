package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/stream"
)

// TestIndexPassesOverABusyTape: between a saveset's data and its index
// tape file, another writer (a job on another drive, an erase, a process
// whose lock has not run out) takes the lock of the tape the data went to.
// The index goes to the next writable tape, as a data part would, and the
// tape that holds the data stays one of the job's tapes; the other writer's
// file is untouched. (Before, the job failed: "append to KUR001: in use by
// another writer".)
func TestIndexPassesOverABusyTape(t *testing.T) {
	e, err := Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	lib, err := e.CreateLibrary(library.Config{Name: "l", Slots: 3, Drives: 2, TapeSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := lib.Acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Release()
	job := &catalog.Job{ID: 1}
	label := &stream.Label{SavesetID: 1, Client: "c"}
	tw, err := e.newTapeWriter(job, lib, drv, "", label, "saveset 1 data")
	if err != nil {
		t.Fatal(err)
	}
	dataTape := tw.barcode
	if _, err := tw.sw.WriteFrame(bytes.Repeat([]byte("d"), 64<<10)); err != nil {
		t.Fatal(err)
	}
	parts, err := tw.sw.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0].Barcode != dataTape {
		t.Fatalf("data parts %+v, want one on %s", parts, dataTape)
	}

	// Another writer holds the data tape now.
	other, err := lib.OpenTape(dataTape)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ow, err := other.Append("another job's data")
	if err != nil {
		t.Fatal(err)
	}

	idx, err := os.CreateTemp(t.TempDir(), "idx")
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if _, err := idx.Write(bytes.Repeat([]byte("i"), 1000)); err != nil {
		t.Fatal(err)
	}
	ip, err := tw.appendIndex(idx, 1000, "saveset 1 index", toCatalogParts(parts))
	if err != nil {
		t.Fatalf("the index while another writer holds tape %s: %v", dataTape, err)
	}
	if ip.Barcode == dataTape || ip.Bytes != 1000 {
		t.Errorf("index part %+v, want 1000 bytes on a tape other than %s", ip, dataTape)
	}
	if want := []string{dataTape, ip.Barcode}; !slices.Equal(tw.tapes, want) {
		t.Errorf("the job's tapes %v, want %v (the data's, then the index's)", tw.tapes, want)
	}
	if _, err := ow.Write([]byte("theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := ow.Finish(); err != nil {
		t.Fatalf("the other writer's file: %v", err)
	}
	files, err := other.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || !strings.HasPrefix(files[0].Tag, "saveset 1 data") || files[1].Tag != "another job's data" {
		t.Errorf("files on %s: %+v, want the saveset's data, then the other writer's", dataTape, files)
	}
	full, err := lib.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range full {
		if ts.Barcode == dataTape && ts.MarkedFull {
			t.Errorf("tape %s was marked full: it was only busy", dataTape)
		}
	}
}
