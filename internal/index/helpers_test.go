package index

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// build writes entries (in index order) with meta and frames and returns the
// file's bytes.
func build(t testing.TB, meta []byte, frames []Frame, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, meta)
	for i := range entries {
		if err := w.Add(&entries[i]); err != nil {
			t.Fatalf("Add(%q): %v", entries[i].Path, err)
		}
	}
	w.SetFrames(frames)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if w.Size() != int64(buf.Len()) {
		t.Fatalf("Size() = %d, wrote %d", w.Size(), buf.Len())
	}
	return buf.Bytes()
}

func open(t testing.TB, b []byte) *Reader {
	t.Helper()
	r, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func readAll(r *Reader) ([]Entry, error) {
	var out []Entry
	it := r.Iter()
	for it.Next() {
		out = append(out, *it.Entry())
	}
	return out, it.Err()
}

// equalEntry compares entries, treating a nil and an empty Xattrs map alike.
func equalEntry(a, b Entry) bool {
	if !maps.Equal(a.Xattrs, b.Xattrs) {
		return false
	}
	a.Xattrs, b.Xattrs = nil, nil
	return reflect.DeepEqual(a, b)
}

func checkEntries(t testing.TB, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !equalEntry(got[i], want[i]) {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// randomName returns a name of 1..maxLen bytes of any value but NUL and '/',
// sometimes invalid UTF-8, never "." or "..".
func randomName(rng *rand.Rand, maxLen int) string {
	for {
		n := 1 + rng.IntN(maxLen)
		b := make([]byte, n)
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(1 + rng.IntN(255))
				if b[i] == '/' {
					b[i] = 'x'
				}
			default:
				b[i] = "abcdefgh.-_0123"[rng.IntN(15)]
			}
		}
		if s := string(b); s != "." && s != ".." {
			return s
		}
	}
}

// randomEntries returns about n entries of a random tree with every field
// set at random, in index order, paths unique. Some paths are 4–8 KiB long.
func randomEntries(rng *rand.Rand, n int) []Entry {
	seen := map[string]bool{}
	dirs := []string{""}
	var out []Entry
	for len(out) < n {
		parent := dirs[rng.IntN(len(dirs))]
		var name string
		if rng.IntN(200) == 0 {
			name = randomName(rng, 255)
			for len(parent)+len(name) < 4096+rng.IntN(4096) {
				name += "/" + randomName(rng, 255)
			}
		} else {
			name = randomName(rng, 12)
		}
		p := name
		if parent != "" {
			p = parent + "/" + name
		}
		if seen[p] || !ValidPath(p) {
			continue
		}
		seen[p] = true
		e := Entry{
			Path:   p,
			Type:   Type(1 + rng.IntN(7)),
			Flags:  uint8(rng.IntN(4)),
			Mode:   uint32(rng.IntN(1 << 12)),
			UID:    uint32(rng.IntN(3)) * 1000,
			GID:    rng.Uint32(),
			Size:   rng.Int64N(1 << 40),
			MTime:  rng.Int64(),
			CTime:  rng.Int64() >> rng.IntN(64),
			Inode:  rng.Uint64(),
			Dev:    uint64(rng.IntN(3)),
			Offset: rng.Int64() >> rng.IntN(64),
		}
		if rng.IntN(2) == 0 {
			e.MTime = -e.MTime
		}
		if rng.IntN(3) == 0 {
			e.Rdev = rng.Uint64()
		}
		if rng.IntN(3) == 0 {
			e.Source = rng.Uint64()
		}
		if rng.IntN(3) > 0 {
			for i := range e.Digest {
				e.Digest[i] = byte(rng.Uint32())
			}
		}
		if rng.IntN(4) == 0 {
			e.Link = randomName(rng, 300)
		}
		if rng.IntN(8) == 0 {
			e.Xattrs = map[string]string{}
			for range 1 + rng.IntN(4) {
				e.Xattrs["user."+randomName(rng, 10)] = randomName(rng, 40)
			}
			if rng.IntN(4) == 0 {
				e.Xattrs["user.empty"] = ""
			}
		}
		if rng.IntN(3) == 0 {
			e.Type = TypeDir
			dirs = append(dirs, p)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return Compare(a.Path, b.Path) })
	return out
}

// test2 returns the entries of the benchmark tree "test2"; see test2Each.
func test2(dirs, files int, jitter bool) []Entry {
	var out []Entry
	test2Each(dirs, files, jitter, func(e *Entry) { out = append(out, *e) })
	return out
}

// test2Each calls fn with each entry of the benchmark tree "test2", in
// index order: dirs directories of files files each, named
// data/test2/d042/f004711.txt, ~10 KB text files with sequential inodes,
// mtimes a few microseconds apart, one owner, random digests and tar offsets.
// If jitter, mtimes are random within 3 s instead. *e is reused.
func test2Each(dirs, files int, jitter bool, fn func(e *Entry)) {
	rng := rand.New(rand.NewPCG(2, 2))
	const base = int64(1_767_225_600) * 1e9
	inode := uint64(1_000_000)
	var off int64
	n := 0
	add := func(e *Entry) {
		inode++
		e.Inode, e.Dev, e.UID, e.GID = inode, 2049, 1000, 1000
		if jitter {
			e.MTime = base + rng.Int64N(3e9)
		} else {
			e.MTime = base + int64(n)*3000 + rng.Int64N(1000)
		}
		e.CTime = e.MTime
		e.Offset = off
		off += 512 + (e.Size+511)&^511
		n++
		fn(e)
	}
	add(&Entry{Path: "data", Type: TypeDir, Mode: 0o755})
	add(&Entry{Path: "data/test2", Type: TypeDir, Mode: 0o755})
	for d := range dirs {
		add(&Entry{Path: fmt.Sprintf("data/test2/d%03d", d), Type: TypeDir, Mode: 0o755})
	}
	var e Entry
	for d := range dirs {
		for f := range files {
			e = Entry{
				Path: fmt.Sprintf("data/test2/d%03d/f%06d.txt", d, d*files+f),
				Type: TypeFile, Mode: 0o644, Size: 9728 + rng.Int64N(1024),
			}
			for i := range e.Digest {
				e.Digest[i] = byte(rng.Uint32())
			}
			add(&e)
		}
	}
}
