package restorer_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/restorer"
)

// extent is a run of data in a file, as SEEK_DATA/SEEK_HOLE report it.
type extent struct{ off, n int64 }

// dataMap lists the data runs of a file (the holes are what is between).
func dataMap(t *testing.T, p string) []extent {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	var m []extent
	for off := int64(0); off < st.Size(); {
		d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		h, err := unix.Seek(int(f.Fd()), d, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}
		m = append(m, extent{d, h - d})
		off = h
	}
	return m
}

// sparseFile makes a file of size bytes with data at the given offsets
// (4 KiB each, a pattern of the offset) and holes elsewhere.
func sparseFile(t *testing.T, p string, size int64, at ...int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, off := range at {
		b := bytes.Repeat([]byte{byte(off>>12) | 1}, int(min(4096, size-off)))
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSparseFilesComeBackSparse: files with holes — data between holes, a
// hole first, a hole last, only a hole, a small one, one past 8 GiB — are
// stored as their data alone and restored with the same holes, the same
// size and the same bytes, taking no more disk than the source.
func TestSparseFilesComeBackSparse(t *testing.T) {
	src := t.TempDir()
	const mib, gib = int64(1) << 20, int64(1) << 30
	layouts := map[string]struct {
		size int64
		at   []int64
	}{
		"data-hole-data": {8 * mib, []int64{0, 6 * mib}},
		"hole-first":     {4*mib + 100, []int64{4 * mib}},
		"hole-last":      {4 * mib, []int64{0}},
		"only-hole":      {64 * mib, nil},
		"small":          {256 << 10, []int64{128 << 10}},
		"big":            {9*gib + 123, []int64{0, 5 * gib, 9 * gib}},
	}
	for name, l := range layouts {
		sparseFile(t, filepath.Join(src, name), l.size, l.at...)
	}
	os.WriteFile(filepath.Join(src, "dense"), bytes.Repeat([]byte("d"), 3*int(mib)), 0o644)

	ss := &memSaveset{}
	var idx bytes.Buffer
	phase := monitor.StartPhase(monitor.SystemClock{}, "backup")
	prod, err := producer.Local{}.Produce(context.Background(), producer.Spec{JobID: 1, Paths: []string{src}},
		ss, &idx, producer.Hooks{Phase: phase, Warn: func(p, msg string) { t.Errorf("warning: %s: %s", p, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.FinishIndex(nil, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	ss.idx = idx.Bytes()
	if len(ss.data) > 1*int(mib) {
		t.Fatalf("%d bytes stored for 36 KiB of data in holes and 3 MiB of a plain file", len(ss.data))
	}
	// The job counts the files' sizes (holes included) as its source bytes;
	// what went to media is the data alone.
	want := 3 * mib
	for _, l := range layouts {
		want += l.size
	}
	if got := phase.Source.Total(); got != want {
		t.Errorf("source bytes %d, want the sizes of the files, %d", got, want)
	}
	store := &memStore{sets: map[int64]*memSaveset{7: ss}}
	ir, err := store.OpenIndex(&restorer.Saveset{ID: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name := range layouts {
		e, ok, err := ir.Lookup(filepath.Join(src, name)[1:])
		if err != nil || !ok || e.Flags&index.FlagSparse == 0 {
			t.Errorf("%s: index entry %+v, %v: not marked sparse", name, e, err)
		}
	}
	to := t.TempDir()
	out, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}},
		restorer.Options{To: to}, restorer.Job{ID: 1})
	if err != nil || out.WarningCount != 0 {
		t.Fatalf("restore: %v %q", err, out.Warnings)
	}
	for _, name := range append(slices.Sorted(maps.Keys(layouts)), "dense") {
		sp, rp := filepath.Join(src, name), filepath.Join(to, src, name)
		var ss, rs unix.Stat_t
		if err := unix.Stat(sp, &ss); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(rp, &rs); err != nil {
			t.Fatalf("%s: not restored: %v", name, err)
		}
		if rs.Size != ss.Size {
			t.Errorf("%s: restored %d bytes, source %d", name, rs.Size, ss.Size)
		}
		if rs.Blocks > ss.Blocks+16 {
			t.Errorf("%s: restored takes %d KiB on disk, source %d KiB: holes were written", name, rs.Blocks/2, ss.Blocks/2)
		}
		if got, want := dataMap(t, rp), dataMap(t, sp); !slices.Equal(got, want) {
			t.Errorf("%s: restored data runs %v, source %v", name, got, want)
		}
		for _, x := range dataMap(t, sp) {
			a, b := make([]byte, x.n), make([]byte, x.n)
			fa, _ := os.Open(sp)
			fb, _ := os.Open(rp)
			fa.ReadAt(a, x.off)
			fb.ReadAt(b, x.off)
			fa.Close()
			fb.Close()
			if !bytes.Equal(a, b) {
				t.Errorf("%s: bytes at %d differ", name, x.off)
			}
		}
	}
}
