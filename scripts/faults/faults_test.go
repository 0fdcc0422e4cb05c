package main

// The campaign itself runs the kura binary for minutes and is not part of
// `go test`; these tests check the parts it relies on to classify a trial:
// the crafted savesets are the media docs/design.md describes, the tree
// comparison sees every difference a user would, and the sentinel folder
// sees every write outside a restore target.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"

	"golang.org/x/sys/unix"
)

func writeIndex(t *testing.T, paths ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := index.NewWriter(&b, nil)
	for _, p := range paths {
		if err := w.Add(&index.Entry{Path: p, Type: index.TypeFile, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetMeta([]byte(`{"meta":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readPaths(b []byte) ([]string, error) {
	r, err := index.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	var out []string
	var bad []error
	it := r.Iter()
	for it.Next() {
		out = append(out, it.Entry().Path)
		for _, e := range it.Invalid() {
			bad = append(bad, e)
		}
	}
	for _, e := range it.Invalid() {
		bad = append(bad, e)
	}
	if it.Err() != nil {
		return out, it.Err()
	}
	// An entry the reader skips (a bad path in a sound block) costs that
	// entry only: the others read, and the skipped one is named.
	return out, errors.Join(bad...)
}

func TestPatchIndexYieldsAWellFormedIndex(t *testing.T) {
	// Enough entries for several blocks, so the block directory is rewritten too.
	var paths []string
	for i := range 3000 {
		paths = append(paths, "dir/f"+string(rune('a'+i/1000))+time.Unix(int64(i), 0).UTC().Format("150405"))
	}
	paths = append(paths, "nulQname")
	slices.SortFunc(paths, index.Compare)
	b := writeIndex(t, paths...)
	out, err := patchIndex(b, map[string]string{"nulQname": "nulXname"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readPaths(out)
	if err != nil {
		t.Fatalf("patched index does not read back: %v", err)
	}
	if len(got) != len(paths) || !slices.Contains(got, "nulXname") || slices.Contains(got, "nulQname") {
		t.Fatalf("patched index lists %d entries (nulXname in it: %v); want %d with nulQname renamed", len(got), slices.Contains(got, "nulXname"), len(paths))
	}
	r, _ := index.Open(bytes.NewReader(out), int64(len(out)))
	if string(r.Meta()) != `{"meta":1}` {
		t.Errorf("final meta lost: %q", r.Meta())
	}
	// What the campaign plants: a path the writer refuses, in an index whose
	// CRCs are all right, so only the path check can stop it.
	out, err = patchIndex(b, map[string]string{"nulQname": "nul\x00name"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readPaths(out); !errors.Is(err, index.ErrInvalid) || len(got) != len(paths)-1 {
		t.Fatalf("reading an index with a NUL path: %d entries, %v; want the others and ErrInvalid naming it", len(got), err)
	}
	if _, err := patchIndex(b, map[string]string{"absent": "ABSENT"}); err == nil {
		t.Fatal("a patch that matches nothing succeeded")
	}
}

func TestCraftHostileWritesASavesetOnTape(t *testing.T) {
	d := &trialDir{root: t.TempDir()}
	d.home = filepath.Join(d.root, "home")
	d.sent = filepath.Join(d.root, "sent")
	dir := filepath.Join(d.home, "vtl", "default", "tapes", "KUR002")
	tp, err := tape.Format(dir, tape.Label{Barcode: "KUR002", Library: "default", BlockSize: 512, Capacity: 1 << 30}, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tp.Close()
	var hc hostileCase
	for _, c := range hostileCases {
		if c.patch != nil && c.name[:5] == "index" {
			hc = c
			break
		}
	}
	if err := craftHostile(d, hc, 901, "KUR002"); err != nil {
		t.Fatal(err)
	}
	tp, err = tape.Open(dir, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	files, err := tp.Files()
	if err != nil || len(files) != 2 || files[0].Status != tape.FileComplete || files[1].Status != tape.FileComplete {
		t.Fatalf("tape files %+v, %v; want two complete ones (data, index)", files, err)
	}
	// The data tape file starts with the saveset label, a skippable frame.
	fr, err := tp.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 4)
	if _, err := fr.Read(head); err != nil || [4]byte(head) != [4]byte{0x5B, 0x2A, 0x4D, 0x18} {
		t.Fatalf("data tape file starts with % x (%v); want the label magic 5b 2a 4d 18", head, err)
	}
	fr.Close()
	// The index tape file opens (every CRC right), carries the meta a scan
	// turns into a record, and holds the planted path.
	fr, err = tp.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var ib bytes.Buffer
	if _, err := ib.ReadFrom(fr); err != nil {
		t.Fatal(err)
	}
	r, err := index.Open(bytes.NewReader(ib.Bytes()), int64(ib.Len()))
	if err != nil {
		t.Fatalf("crafted index does not open: %v", err)
	}
	var meta struct {
		Saveset struct {
			ID    int64 `json:"id"`
			Parts []struct {
				Barcode string `json:"barcode"`
				File    int    `json:"file"`
			} `json:"parts"`
		} `json:"saveset"`
	}
	if err := json.Unmarshal(r.Meta(), &meta); err != nil || meta.Saveset.ID != 901 || len(meta.Saveset.Parts) != 1 || meta.Saveset.Parts[0].File != 1 {
		t.Fatalf("final meta %s (%v); want saveset 901 with its data in tape file 1", r.Meta(), err)
	}
	if len(r.Frames()) == 0 {
		t.Fatal("crafted index has no frame table")
	}
	if !bytes.Contains(ib.Bytes(), []byte(stream.LabelFormat)) && !bytes.Contains(ib.Bytes(), []byte("KURAIDX")) {
		t.Fatal("not an index")
	}
	if _, err := readPaths(ib.Bytes()); !errors.Is(err, index.ErrInvalid) {
		t.Fatalf("the planted ../ path reads back as %v; want the index reader to skip it and name it (ErrInvalid)", err)
	}
}

func TestTreeDiffSeesWhatAUserWouldCheck(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := makeTree(src, 1, 12, 4); err != nil {
		t.Fatal(err)
	}
	want, err := snapshot(src)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string]func(root string) error{
		"content": func(r string) error { return os.WriteFile(filepath.Join(r, "d00", "f000.txt"), []byte("other"), 0o644) },
		"mode":    func(r string) error { return os.Chmod(filepath.Join(r, "d01", "f001.txt"), 0o600) },
		"mtime": func(r string) error {
			return os.Chtimes(filepath.Join(r, "d02", "f002.txt"), time.Unix(1, 0), time.Unix(1, 0))
		},
		"symlink": func(r string) error {
			os.Remove(filepath.Join(r, "link"))
			return os.Symlink("elsewhere", filepath.Join(r, "link"))
		},
		"missing": func(r string) error { return os.Remove(filepath.Join(r, "d03", "f003.txt")) },
		"extra":   func(r string) error { return os.WriteFile(filepath.Join(r, "extra"), nil, 0o644) },
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			cp := filepath.Join(t.TempDir(), "cp")
			if err := copyTree(src, cp); err != nil {
				t.Fatal(err)
			}
			got, _ := snapshot(cp)
			if d := want.diff(got); d != "" {
				t.Fatalf("an exact copy differs: %s", d)
			}
			if err := fn(cp); err != nil {
				t.Fatal(err)
			}
			got, _ = snapshot(cp)
			if want.diff(got) == "" {
				t.Fatalf("diff missed a changed %s", name)
			}
		})
	}
}

func TestSentinelSeesWritesOutsideTheTarget(t *testing.T) {
	c := &campaign{work: t.TempDir(), live: filepath.Join(t.TempDir(), "home")}
	d, err := c.newTrial("test")
	if err != nil {
		t.Fatal(err)
	}
	// Restores write inside targets: not an escape.
	if err := os.MkdirAll(filepath.Join(d.target("target-x"), "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.target("target-x"), "a", "f"), []byte("x"), 0o644)
	if e := d.escaped(); len(e) != 0 {
		t.Fatalf("writes inside the target reported as escapes: %q", e)
	}
	for name, fn := range map[string]func(d *trialDir) error{
		"beside the target": func(d *trialDir) error { return os.WriteFile(filepath.Join(d.sent, "t1", "evil"), nil, 0o644) },
		"canary rewritten":  func(d *trialDir) error { return os.WriteFile(filepath.Join(d.sent, "canary"), []byte("pwned"), 0o644) },
		"canary linked": func(d *trialDir) error {
			return os.Link(filepath.Join(d.sent, "canary"), filepath.Join(d.target("target-x"), "hl"))
		},
		"canary chmod": func(d *trialDir) error { return os.Chmod(filepath.Join(d.sent, "canary"), 0o777) },
	} {
		d, err := c.newTrial("test")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(d.target("target-x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fn(d); err != nil {
			t.Fatal(err)
		}
		if e := d.escaped(); len(e) == 0 {
			t.Errorf("%s: not reported as an escape", name)
		}
	}
}

// The campaign's own checks must read a restored tree deeper than
// PATH_MAX, or a correct restore of one would count as silent corruption.
func TestSnapshotReadsDeeperThanPathMax(t *testing.T) {
	root := t.TempDir()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	const depth = 2500 // "d/" × 2500 = 5000 bytes, past PATH_MAX (4096)
	for range depth {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	ffd, err := unix.Openat(fd, "bottom", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(ffd, []byte("deep\n"))
	unix.Close(ffd)
	unix.Close(fd)
	rel := strings.Repeat("d/", depth) + "bottom"
	b, err := readBelow(root, rel)
	if err != nil || string(b) != "deep\n" {
		t.Fatalf("readBelow: %q %v", b, err)
	}
	tr, err := snapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := tr[rel]; !ok || n.kind != "file" || n.size != 5 || len(tr) != depth+1 {
		t.Fatalf("snapshot: %d entries, bottom %+v", len(tr), n)
	}
}
