package span_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// TestWithLibrary wires the writer and reader to a library the way the
// engine does: Next marks the tape just left full and loads the next
// writable one into the same drive; reading loads each part's tape.
func TestWithLibrary(t *testing.T) {
	lib, err := library.Create(library.Config{
		Name: "span", Dir: filepath.Join(t.TempDir(), "vtl"), Slots: 3, Drives: 1,
		TapeSize: 16 << 20, BlockSize: 64 << 10, BufferSize: 256 << 10,
	}) // early warning at 8 MiB
	if err != nil {
		t.Fatal(err)
	}
	// KUR002 holds an earlier saveset: it is the first to be written on.
	old, err := lib.OpenTape("KUR002")
	if err != nil {
		t.Fatal(err)
	}
	fw, err := old.Append("earlier")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(make([]byte, 5000))
	if _, err := fw.Finish(); err != nil {
		t.Fatal(err)
	}
	old.Close()

	d, err := lib.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	first, bc, err := d.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	next := func(exclude []string, full bool) (tape.Device, string, error) {
		if err := lib.MarkFull(exclude[len(exclude)-1]); err != nil {
			return nil, "", err
		}
		return d.LoadWritable(exclude...)
	}
	w := span.NewWriter(first, bc, next, func(int) []byte { return []byte("HDR") }, "saveset 1")
	var frames [][]byte
	var locs []stream.Location
	for i := range 10 {
		f := bytes.Repeat([]byte{byte(i + 1)}, 1<<20)
		loc, err := w.WriteFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		frames, locs = append(frames, f), append(locs, loc)
	}
	parts, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	want := []span.Part{
		{Barcode: "KUR002", File: 2, Bytes: 3 + 7<<20, Header: 3},
		{Barcode: "KUR001", File: 1, Bytes: 3 + 3<<20, Header: 3},
	}
	if !slices.Equal(parts, want) {
		t.Fatalf("parts %+v, want %+v", parts, want)
	}
	ts, err := lib.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].State != library.StateAppendable || ts[1].State != library.StateFull || ts[2].State != library.StateBlank {
		t.Errorf("tape states after the saveset: %s %s %s", ts[0].State, ts[1].State, ts[2].State)
	}

	open := func(bc string) (tape.Device, error) { return d.Load(bc) }
	rc, err := span.NewReader(open, parts).OpenAt(locs[5])
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, slices.Concat(frames[5:]...)) {
		t.Errorf("read back %d bytes, %v", len(got), err)
	}

	if err := d.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := lib.Export("KUR001"); err != nil {
		t.Fatal(err)
	}
	rc, err = span.NewReader(open, parts).OpenAt(locs[6])
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, library.ErrExported) {
		t.Errorf("reading on to an exported tape: %v", err)
	}
}
