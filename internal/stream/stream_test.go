package stream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
)

func TestRoundTripEveryLevel(t *testing.T) {
	for _, lvl := range allLevels {
		t.Run(lvl.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(lvl), 7))
			items := genTree(r, 100, true)
			sink := &memSink{}
			frames := writeStream(t, sink, items, Options{Level: lvl, FrameSize: MinFrameSize, Workers: 3})
			if len(frames) < 3 {
				t.Fatalf("only %d frames; the test wants several", len(frames))
			}
			for _, useTable := range []bool{true, false} {
				var table []index.Frame
				if useTable {
					table = frames
				}
				rd, err := NewReader(sink.source(), table, ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := readAll(rd)
				rd.Close()
				if err != nil {
					t.Fatalf("table=%v: read: %v", useTable, err)
				}
				compareItems(t, got, items)
			}
		})
	}
}

func compareItems(t *testing.T, got, want []item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d entries, wrote %d", len(got), len(want))
	}
	for i := range want {
		we := wantEntry(want[i].e)
		if !reflect.DeepEqual(got[i].e, we) {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i].e, we)
		}
		if we.Type == index.TypeFile && !bytes.Equal(got[i].content, want[i].content) {
			t.Fatalf("entry %d %q: content differs", i, we.Path)
		}
	}
}

func TestSeekToEveryEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	items := genTree(r, 120, true)
	sink := &memSink{partLimit: 20000} // several parts, too
	frames := writeStream(t, sink, items, Options{Level: compress.LevelLow, FrameSize: MinFrameSize, Workers: 2})
	if len(sink.parts) < 2 {
		t.Fatalf("want several parts, got %d", len(sink.parts))
	}
	src := sink.source()
	rd, err := NewReader(src, frames, ReaderOptions{ReadAhead: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	order := r.Perm(len(items))
	for _, i := range order {
		if err := rd.SeekTo(items[i].e.Offset); err != nil {
			t.Fatalf("SeekTo(%d): %v", items[i].e.Offset, err)
		}
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("entry %d after seek: %v", i, err)
		}
		c, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		if e.Path != items[i].e.Path || e.Offset != items[i].e.Offset || !bytes.Equal(c, items[i].content) {
			t.Fatalf("seek to entry %d: got %q@%d (%d bytes), want %q@%d (%d bytes)",
				i, e.Path, e.Offset, len(c), items[i].e.Path, items[i].e.Offset, len(items[i].content))
		}
		// The entry after it follows correctly too.
		if i+1 < len(items) {
			e2, err := rd.Next()
			if err != nil || e2.Path != items[i+1].e.Path || e2.Offset != items[i+1].e.Offset {
				t.Fatalf("entry after %d: %v %v", i, e2, err)
			}
		}
	}
	if err := rd.SeekTo(frames[len(frames)-1].Offset + int64(frames[len(frames)-1].Size)); !errors.Is(err, ErrOffset) {
		t.Fatalf("SeekTo(end) = %v, want ErrOffset", err)
	}
	rd2, _ := NewReader(src, nil, ReaderOptions{})
	defer rd2.Close()
	if err := rd2.SeekTo(0); !errors.Is(err, ErrNoFrameTable) {
		t.Fatalf("SeekTo without table = %v", err)
	}
}

func TestWriterOffsetsAndDigest(t *testing.T) {
	sink := &memSink{}
	items := []item{
		{index.Entry{Path: "a", Type: index.TypeFile, Size: 5, Mode: 0o600}, []byte("hello")},
		{index.Entry{Path: "d", Type: index.TypeDir, Mode: 0o755}, nil},
		{index.Entry{Path: "d/b", Type: index.TypeFile, Size: 0, Mode: 0o600}, nil},
	}
	writeStream(t, sink, items, Options{Level: compress.LevelNone})
	if items[0].e.Offset != 0 {
		t.Errorf("first offset %d", items[0].e.Offset)
	}
	// a: header 512 + content padded to 512; then d.
	if items[1].e.Offset != 1024 || items[2].e.Offset != 1536 {
		t.Errorf("offsets %d %d, want 1024 1536", items[1].e.Offset, items[2].e.Offset)
	}
	// XXH3-128("hello"), computed independently by the reader-side helper.
	rd, _ := NewReader(sink.source(), nil, ReaderOptions{})
	got, err := readAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].e.Digest != items[0].e.Digest || items[0].e.Digest == ([16]byte{}) {
		t.Errorf("digest %x, reader computes %x", items[0].e.Digest, got[0].e.Digest)
	}
}

// countingReader counts bytes handed out.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestShrankAndGrew(t *testing.T) {
	sink := &memSink{}
	w, err := NewWriter(sink, Options{Level: compress.LevelLow})
	if err != nil {
		t.Fatal(err)
	}
	short := index.Entry{Path: "short", Type: index.TypeFile, Size: 1000}
	err = w.WriteEntry(&short, strings.NewReader("only this"))
	if !errors.Is(err, ErrShrank) || short.Flags&index.FlagChanged == 0 {
		t.Fatalf("short file: err %v flags %b", err, short.Flags)
	}
	long := index.Entry{Path: "long", Type: index.TypeFile, Size: 4}
	cr := &countingReader{r: strings.NewReader(strings.Repeat("x", 100000))}
	if err := w.WriteEntry(&long, cr); err != nil {
		t.Fatal(err)
	}
	if cr.n > 4 {
		t.Errorf("read %d bytes of a 4-byte entry", cr.n)
	}
	failing := index.Entry{Path: "eio", Type: index.TypeFile, Size: 10}
	if err := w.WriteEntry(&failing, io.MultiReader(strings.NewReader("ab"), errReader{})); !errors.Is(err, ErrContentRead) {
		t.Fatalf("failing reader: %v", err)
	}
	bad := index.Entry{Path: "x", Type: 99}
	if err := w.WriteEntry(&bad, nil); !errors.Is(err, ErrEntry) {
		t.Fatalf("bad type: %v", err)
	}
	unch := index.Entry{Path: "u", Type: index.TypeFile, Flags: index.FlagUnchanged}
	if err := w.WriteEntry(&unch, nil); !errors.Is(err, ErrEntry) {
		t.Fatalf("unchanged: %v", err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEntry(&long, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	rd, _ := NewReader(sink.source(), nil, ReaderOptions{})
	got, err := readAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("only this"), make([]byte, 991)...)
	if len(got) != 3 || !bytes.Equal(got[0].content, want) || string(got[1].content) != "xxxx" || string(got[2].content) != "ab\x00\x00\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("read back %d entries: %v", len(got), got)
	}
	if got[0].e.Digest != short.Digest {
		t.Errorf("digest of padded content differs")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("EIO") }

type failSink struct{ after int }

func (s *failSink) WriteFrame(f []byte) (Location, error) {
	if s.after == 0 {
		return Location{}, errors.New("drive on fire")
	}
	s.after--
	return Location{}, nil
}

func TestSinkErrorIsSticky(t *testing.T) {
	w, err := NewWriter(&failSink{after: 2}, Options{Level: compress.LevelNone, FrameSize: MinFrameSize, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64*MinFrameSize)
	e := index.Entry{Path: "big", Type: index.TypeFile, Size: int64(len(big))}
	err = w.WriteEntry(&e, bytes.NewReader(big))
	if err == nil || !strings.Contains(err.Error(), "drive on fire") {
		t.Fatalf("WriteEntry = %v, want the sink error", err)
	}
	if _, err := w.Close(); err == nil || !strings.Contains(err.Error(), "drive on fire") {
		t.Fatalf("Close = %v, want the sink error", err)
	}
}

func TestAbort(t *testing.T) {
	sink := &memSink{}
	w, err := NewWriter(sink, Options{FrameSize: MinFrameSize})
	if err != nil {
		t.Fatal(err)
	}
	e := index.Entry{Path: "f", Type: index.TypeFile, Size: 10 * MinFrameSize}
	if err := w.WriteEntry(&e, bytes.NewReader(make([]byte, e.Size))); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close after Abort = %v", err)
	}
	// Whatever reached the sink is a torn stream, never a clean end.
	rd, _ := NewReader(sink.source(), nil, ReaderOptions{})
	_, err = readAll(rd)
	if len(sink.parts) > 0 && !errors.Is(err, ErrTruncated) {
		t.Fatalf("reading an aborted stream: %v, want ErrTruncated", err)
	}
}

func TestAutoStoresRandomRawAndCompressesText(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, kind := range []string{"random", "text"} {
		var content []byte
		if kind == "random" {
			content = genRand(r, 2<<20)
		} else {
			content = genText(r, 2<<20)
		}
		sink := &memSink{}
		w, err := NewWriter(sink, Options{Level: compress.LevelAuto, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		e := index.Entry{Path: kind, Type: index.TypeFile, Size: int64(len(content))}
		if err := w.WriteEntry(&e, bytes.NewReader(content)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		st := w.Stats()
		ratio := float64(st.Media) / float64(st.Uncompressed)
		switch kind {
		case "random":
			// Only the last frame (its end-of-archive zeros) may compress.
			if st.FramesCompressed > 1 || ratio > 1.001 {
				t.Errorf("random: %d frames compressed, media/source %.4f; want raw, ≈1", st.FramesCompressed, ratio)
			}
		case "text":
			if st.FramesRaw != 0 || ratio > 0.5 {
				t.Errorf("text: %d frames raw, media/source %.4f; want compressed", st.FramesRaw, ratio)
			}
		}
		if st.Entries != 1 || st.Uncompressed < int64(len(content)) {
			t.Errorf("%s: stats %+v", kind, st)
		}
	}
}

func TestOnFrameAndOptions(t *testing.T) {
	var n, un, cn int
	sink := &memSink{}
	w, err := NewWriter(sink, Options{Level: compress.LevelLow, FrameSize: MinFrameSize, OnFrame: func(u, c int) { n++; un += u; cn += c }})
	if err != nil {
		t.Fatal(err)
	}
	e := index.Entry{Path: "f", Type: index.TypeFile, Size: 5 * MinFrameSize}
	if err := w.WriteEntry(&e, bytes.NewReader(make([]byte, e.Size))); err != nil {
		t.Fatal(err)
	}
	frames, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if n != len(frames) || int64(un) != st.Uncompressed || int64(cn) != st.Media {
		t.Errorf("OnFrame saw %d frames %d/%d bytes; stats %+v, %d frames", n, un, cn, st, len(frames))
	}
	for _, o := range []Options{{FrameSize: 100}, {Workers: -1}, {Level: 17}, {Level: compress.LevelAuto, Auto: compress.AutoOptions{Window: -2}}} {
		if _, err := NewWriter(sink, o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("NewWriter(%+v) = %v, want ErrBadOptions", o, err)
		}
	}
	if s := (Options{Level: compress.LevelHigh, Workers: 2}).String(); s != "level=high frame=1048576 workers=2" {
		t.Errorf("String() = %q", s)
	}
}

// scribbleReader returns short reads of its content and scribbles over the
// rest of p, as io.Reader allows: file content is read straight into the
// frame being filled, and nothing beyond what a read returned may reach
// the stream.
type scribbleReader struct {
	b []byte
	r *rand.Rand
}

func (s *scribbleReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(s.b), 1+s.r.IntN(100<<10))
	copy(p, s.b[:n])
	for i := n; i < len(p); i++ {
		p[i] = 0xAA
	}
	s.b = s.b[n:]
	return n, nil
}

func TestContentReadInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	items := genTree(r, 60, false)
	sink := &memSink{}
	w, err := NewWriter(sink, Options{Level: compress.LevelNone, FrameSize: MinFrameSize, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if err := w.WriteEntry(&items[i].e, &scribbleReader{b: items[i].content, r: r}); err != nil {
			t.Fatalf("WriteEntry(%q): %v", items[i].e.Path, err)
		}
	}
	frames, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 3 {
		t.Fatalf("only %d frames; the test wants entries across frame ends", len(frames))
	}
	rd, err := NewReader(sink.source(), frames, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got, err := readAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	compareItems(t, got, items)
	for i := range items {
		if items[i].e.Type == index.TypeFile && items[i].e.Digest != got[i].e.Digest {
			t.Fatalf("%s: digest of the stored content differs from the writer's", items[i].e.Path)
		}
	}
}

// sealWatchSink notes, as each frame arrives, how many frames were sealed.
type sealWatchSink struct {
	memSink
	mu     sync.Mutex
	sealed []int64 // content bytes read when each frame was sealed
	bad    []string
	n      int
}

func (s *sealWatchSink) WriteFrame(f []byte) (Location, error) {
	s.mu.Lock()
	if len(s.sealed) <= s.n {
		s.bad = append(s.bad, fmt.Sprintf("frame %d reached the sink with %d frames sealed", s.n, len(s.sealed)))
	}
	s.n++
	s.mu.Unlock()
	return s.memSink.WriteFrame(f)
}

// TestOnSealPrecedesSink: every frame is sealed, in order, before it can
// reach the sink, and what was read when a frame was sealed fits in the
// frames up to it (content counted as read is never ahead of its frame).
func TestOnSealPrecedesSink(t *testing.T) {
	sink := &sealWatchSink{}
	var read atomic.Int64
	w, err := NewWriter(sink, Options{Level: compress.LevelNone, FrameSize: MinFrameSize, Workers: 2,
		OnSeal: func() {
			sink.mu.Lock()
			sink.sealed = append(sink.sealed, read.Load())
			sink.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := index.Entry{Path: fmt.Sprintf("f%d", i), Type: index.TypeFile, Size: 3*MinFrameSize + 1000}
		r := &tallyReader{r: bytes.NewReader(make([]byte, e.Size)), n: &read}
		if err := w.WriteEntry(&e, r); err != nil {
			t.Fatal(err)
		}
	}
	frames, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.sealed) != len(frames) || sink.n != len(frames) {
		t.Fatalf("%d frames, %d sealed, %d in the sink", len(frames), len(sink.sealed), sink.n)
	}
	for _, b := range sink.bad {
		t.Error(b)
	}
	for i, got := range sink.sealed {
		if limit := int64(i+1) * MinFrameSize; got > limit {
			t.Errorf("frame %d sealed with %d bytes read; frames 0..%d hold %d", i, got, i, limit)
		}
	}
	if last := sink.sealed[len(sink.sealed)-1]; last != read.Load() {
		t.Errorf("last frame sealed with %d bytes read of %d", last, read.Load())
	}
}

type tallyReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *tallyReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
