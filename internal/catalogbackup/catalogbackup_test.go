package catalogbackup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/stream"
)

var update = flag.Bool("update", false, "rewrite the files in testdata/")

// testDB is a stand-in for a catalog: pages of text with some repetition.
func testDB(size int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	for b.Len() < size {
		fmt.Fprintf(&b, "saveset %d complete /srv/data/%x %d\n", rng.IntN(1000), rng.Uint64(), rng.Int64())
	}
	return b.Bytes()[:size]
}

func testLabel(db []byte) Label {
	size, sum, err := Digest(bytes.NewReader(db))
	if err != nil {
		panic(err)
	}
	return Label{Created: time.Date(2026, 11, 30, 15, 33, 11, 0, time.UTC), SchemaVersion: 4, Savesets: 3,
		LastSavesetID: 3, JobID: 7, Host: "vm", Libraries: []Library{{Name: "default", Dir: "/home/kura/vtl/default"}},
		Size: size, SHA256: sum}
}

func encode(t testing.TB, l Label, db []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, l)
	if err != nil {
		t.Fatal(err)
	}
	// Several writes, as io.Copy does.
	for len(db) > 0 {
		n := min(len(db), 10_000)
		if _, err := w.Write(db[:n]); err != nil {
			t.Fatal(err)
		}
		db = db[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func decode(b []byte) (Label, []byte, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return Label{}, nil, err
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	return r.Label(), got, err
}

func TestRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 4096, 300_000} {
		db := testDB(size)
		l := testLabel(db)
		file := encode(t, l, db)
		got, back, err := decode(file)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		l.Format, l.Version = Format, Version
		if !reflect.DeepEqual(got, l) {
			t.Errorf("size %d: label %+v, want %+v", size, got, l)
		}
		if !bytes.Equal(back, db) {
			t.Errorf("size %d: database differs after the round trip", size)
		}
		if size == 300_000 && len(file) > size/2 {
			t.Errorf("300 KB of text took %d bytes: not compressed?", len(file))
		}
	}
}

// The file is a zstd stream: stock zstd skips the label and gives the
// database back.
func TestStockZstd(t *testing.T) {
	db := testDB(100_000)
	file := encode(t, testLabel(db), db)
	// The library's own stream decoder, as any zstd implementation.
	dec, err := zstd.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(dec)
	dec.Close()
	if err != nil || !bytes.Equal(got, db) {
		t.Fatalf("zstd stream decoder: %d bytes, %v", len(got), err)
	}
	bin, err := exec.LookPath("zstd")
	if err != nil {
		t.Skip("no zstd command here")
	}
	p := filepath.Join(t.TempDir(), "FILE")
	if err := os.WriteFile(p, file, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-dc", p).Output()
	if err != nil || !bytes.Equal(out, db) {
		t.Fatalf("zstd -dc: %d bytes, %v", len(out), err)
	}
}

func TestDamageIsToldApart(t *testing.T) {
	db := testDB(200_000)
	l := testLabel(db)
	file := encode(t, l, db)
	frame, err := LabelFrame(l)
	if err != nil {
		t.Fatal(err)
	}
	body := len(frame)
	flip := func(off int) []byte {
		b := bytes.Clone(file)
		b[off] ^= 0x40
		return b
	}
	// The same database in a correct zstd frame, under a label whose
	// SHA-256 is another database's.
	other := l
	_, other.SHA256, _ = Digest(strings.NewReader("another catalog"))
	otherFrame, _ := LabelFrame(other)
	enc, _ := zstd.NewWriter(nil)
	wrongSum := append(otherFrame, enc.EncodeAll(db, nil)...)
	// A database one byte shorter than the label says, in a whole frame.
	shortFrame := append(bytes.Clone(frame), enc.EncodeAll(db[:len(db)-1], nil)...)
	newer := l
	newer.Format, newer.Version = Format, Version+1
	newerFrame := labelFrameUnchecked(t, newer)

	savesetLabel := stream.LabelFrame(stream.Label{SavesetID: 1, Created: l.Created})
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrNotBackup},
		{"saveset label", savesetLabel, ErrNotBackup},
		{"index file", []byte("KURAIDX\x01\x00\x00\x00\x00"), ErrNotBackup},
		{"label JSON", flip(8 + bytes.Index(frame[8:], []byte(`"savesets"`)) + 2), ErrLabelDamaged},
		{"label length", append(bytes.Clone(file[:4]), append([]byte{0xff, 0xff, 0xff, 0x7f}, file[8:]...)...), ErrLabelDamaged},
		{"newer version", newerFrame, ErrUnsupported},
		{"compressed data", flip(body + 200), ErrCorrupt},
		{"zstd checksum", flip(len(file) - 2), ErrCorrupt},
		{"sha256", wrongSum, ErrCorrupt},
		{"cut in the frame", file[:body+(len(file)-body)/2], ErrTruncated},
		{"cut after the label", file[:body], ErrTruncated},
		{"whole frame, short database", shortFrame, ErrTruncated},
		{"label cut", file[:body/2], ErrLabelDamaged},
	}
	for _, c := range cases {
		_, _, err := decode(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// labelFrameUnchecked encodes a label LabelFrame would refuse (a newer
// version), as a newer Kura would write it.
func labelFrameUnchecked(t *testing.T, l Label) []byte {
	t.Helper()
	content, err := labelContent(l)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint32(nil, Magic)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(content)))
	return append(out, content...)
}

// errReader fails after delivering some bytes, like a tape file with a bad
// block.
type errReader struct {
	r   io.Reader
	n   int
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, e.err
	}
	p = p[:min(len(p), e.n)]
	n, err := e.r.Read(p)
	e.n -= n
	return n, err
}

func TestSourceErrorsPassThrough(t *testing.T) {
	db := testDB(200_000)
	file := encode(t, testLabel(db), db)
	bad := errors.New("corrupt block: tape KUR001, tape file 3, block 1")
	for _, at := range []int{4, 2000, len(file) / 2} {
		r, err := NewReader(&errReader{r: bytes.NewReader(file), n: at, err: bad})
		if err == nil {
			_, err = io.ReadAll(r)
			r.Close()
		}
		if !errors.Is(err, bad) {
			t.Errorf("failing after %d bytes: %v, want the source's error", at, err)
		}
	}
}

func TestWriterRefusesWhatTheLabelDoesNotSay(t *testing.T) {
	db := testDB(10_000)
	l := testLabel(db)
	for name, data := range map[string][]byte{"short": db[:9_999], "long": append(bytes.Clone(db), 'x'), "other": testDB(10_001)[1:]} {
		w, err := NewWriter(io.Discard, l)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		if err := w.Close(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Close = %v, want ErrInvalid", name, err)
		}
		if _, err := w.Write(db); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Write after Close = %v, want ErrClosed", name, err)
		}
	}
	if _, err := NewWriter(io.Discard, Label{Size: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a label without sha256: %v, want ErrInvalid", err)
	}
	r, err := NewReader(bytes.NewReader(encode(t, l, db)))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
}

func TestMagicIsKurasLabelMagic(t *testing.T) {
	if Magic != stream.LabelMagic {
		t.Fatalf("Magic %#x, stream.LabelMagic %#x: Kura's label frames share one magic", Magic, stream.LabelMagic)
	}
}

// TestGolden keeps the label's layout and the seed of the fuzz tests: a
// label on media must stay readable, so its encoding must not change by
// accident.
func TestGolden(t *testing.T) {
	db := testDB(5000)
	file := encode(t, testLabel(db), db)
	frame, _ := LabelFrame(testLabel(db))
	files := map[string][]byte{"label.golden": frame[8:], "backup.bin": file}
	for name, b := range files {
		p := filepath.Join("testdata", name)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -update once)", err)
		}
		if name == "label.golden" && !bytes.Equal(b, want) {
			t.Errorf("%s: the label encoding changed:\n%s\nwant:\n%s", p, b, want)
		}
		if _, got, err := decode(want); name == "backup.bin" && (err != nil || !bytes.Equal(got, db)) {
			t.Errorf("%s no longer reads: %v", p, err)
		}
	}
}

func FuzzReadLabel(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "backup.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(stream.LabelFrame(stream.Label{SavesetID: 2}))
	f.Fuzz(func(t *testing.T, in []byte) {
		l, err := ReadLabel(bytes.NewReader(in))
		if err != nil {
			return
		}
		// Whatever parses encodes again and reads back the same.
		frame, err := LabelFrame(l)
		if err != nil {
			t.Fatalf("a label that parsed does not encode: %v (%+v)", err, l)
		}
		l2, err := ReadLabel(bytes.NewReader(frame))
		if err != nil || !reflect.DeepEqual(l, l2) {
			t.Fatalf("re-encoded label: %+v, %v; want %+v", l2, err, l)
		}
	})
}

func FuzzReader(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "backup.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		defer r.Close()
		db, err := io.ReadAll(io.LimitReader(r, 64<<20))
		if err != nil {
			return
		}
		// A file that reads back whole is exactly its label and database.
		again, err := io.ReadAll(bytes.NewReader(encode(t, r.Label(), db)))
		if err != nil {
			t.Fatal(err)
		}
		if _, db2, err := decode(again); err != nil || !bytes.Equal(db, db2) {
			t.Fatalf("re-encoded: %v", err)
		}
	})
}
