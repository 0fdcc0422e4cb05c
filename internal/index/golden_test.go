package index

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// describe draws an index as text: meta, frames, then one line an entry.
func describe(r *Reader) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "meta %q\nentries %d\n", r.Meta(), r.Len())
	for _, f := range r.Frames() {
		fmt.Fprintf(&b, "frame %+v\n", f)
	}
	it := r.Iter()
	for it.Next() {
		e := it.Entry()
		keys := make([]string, 0, len(e.Xattrs))
		for k := range e.Xattrs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(&b, "%q %s flags=%d mode=%o uid=%d gid=%d size=%d mtime=%d ctime=%d ino=%d dev=%d rdev=%d link=%q off=%d src=%d digest=%x",
			e.Path, e.Type, e.Flags, e.Mode, e.UID, e.GID, e.Size, e.MTime, e.CTime, e.Inode, e.Dev, e.Rdev, e.Link, e.Offset, e.Source, e.Digest)
		for _, k := range keys {
			fmt.Fprintf(&b, " x:%q=%q", k, e.Xattrs[k])
		}
		b.WriteByte('\n')
	}
	return b.String(), it.Err()
}

// goldenFiles are the index files kept in testdata/: files of format
// version 1 that every later reader must still read as their .txt says.
// They also seed FuzzOpen.
var goldenFiles = []struct {
	name   string
	blocks int
	make   func() ([]byte, []Frame, []Entry)
}{
	{"v1-empty", 2048, func() ([]byte, []Frame, []Entry) { return nil, nil, nil }},
	{"v1-random", 6, func() ([]byte, []Frame, []Entry) {
		return []byte(`{"saveset":7,"level":"full"}`), testFrames(5), randomEntries(rand.New(rand.NewPCG(9, 9)), 40)
	}},
	{"v1-test2", 2048, func() ([]byte, []Frame, []Entry) {
		return []byte(`{"saveset":2}`), testFrames(3), test2(3, 20, false)
	}},
}

func TestGolden(t *testing.T) {
	for _, g := range goldenFiles {
		t.Run(g.name, func(t *testing.T) {
			idx := filepath.Join("testdata", g.name+".idx")
			txt := filepath.Join("testdata", g.name+".txt")
			if *update {
				smallBlocks(t, g.blocks)
				meta, frames, es := g.make()
				data := build(t, meta, frames, es)
				d, err := describe(open(t, data))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(idx, data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(txt, []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(idx)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(txt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := describe(open(t, data))
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("%s reads as\n%s\nwant (%s)\n%s", idx, got, txt, want)
			}
		})
	}
}

// FuzzOpen opens and reads arbitrary bytes: it must fail with one of the
// sentinel errors or read entries that a Writer accepts and that read back
// the same.
func FuzzOpen(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.idx"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sentinel := func(err error) bool {
			for _, s := range []error{ErrNotIndex, ErrVersion, ErrTruncated, ErrCorrupt} {
				if errors.Is(err, s) {
					return true
				}
			}
			return false
		}
		r, err := Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !sentinel(err) {
				t.Fatalf("Open: %v is not a sentinel error", err)
			}
			return
		}
		cerr := r.Check()
		if cerr != nil && !sentinel(cerr) {
			t.Fatalf("Check: %v is not a sentinel error", cerr)
		}
		es, err := readAll(r)
		if err != nil {
			if !sentinel(err) {
				t.Fatalf("Iter: %v is not a sentinel error", err)
			}
			return
		}
		if cerr != nil {
			t.Fatalf("Check = %v, but every block reads", cerr)
		}
		for _, d := range []string{"", "a"} {
			if _, err := r.List(d); err != nil && !sentinel(err) {
				t.Fatalf("List: %v", err)
			}
		}
		if len(es) > 0 {
			if _, ok, err := r.Lookup(es[len(es)-1].Path); !ok && err == nil {
				t.Fatalf("Lookup(%q) misses an entry Iter returned", es[len(es)-1].Path)
			}
		}
		// Re-encode.
		again := build(t, r.Meta(), r.Frames(), es)
		r2 := open(t, again)
		es2, err := readAll(r2)
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, es2, es)
		if !bytes.Equal(r2.Meta(), r.Meta()) || !slices.Equal(r2.Frames(), r.Frames()) {
			t.Fatal("meta or frames differ after re-encoding")
		}
	})
}

// FuzzDecodeBlock decodes arbitrary raw block payloads (the bytes under the
// CRC and zstd layers, which FuzzOpen rarely gets through): it must fail
// with ErrCorrupt or decode entries that encode and decode the same.
func FuzzDecodeBlock(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.idx"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		r := open(f, b)
		for _, bi := range r.blocks {
			blk := b[bi.off : bi.off+bi.length]
			raw, err := decoder().DecodeAll(blk[blockHeader:], nil)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw, uint16(bi.n))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, n uint16) {
		es, err := decodeBlock(nil, raw, int(n), "", "")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v is not ErrCorrupt", err)
			}
			return
		}
		var enc blockEncoder
		for i := range es {
			if err := checkEntry(&es[i]); err != nil {
				t.Fatalf("decoded entry the Writer refuses: %v", err)
			}
			enc.add(&es[i])
		}
		es2, err := decodeBlock(nil, enc.appendRaw(nil), enc.n, es[0].Path, "")
		if err != nil {
			t.Fatalf("re-encoded block: %v", err)
		}
		checkEntries(t, es2, es)
	})
}
