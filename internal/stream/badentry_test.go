package stream

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/index"
)

// paxEntry is a hand-made pax entry (archive/tar will not write a name
// with a NUL): an 'x' header holding path=name, then a ustar header.
func paxEntry(name, content string) []byte {
	var b bytes.Buffer
	block := func(p []byte) {
		b.Write(p)
		if pad := len(p) % 512; pad != 0 {
			b.Write(make([]byte, 512-pad))
		}
	}
	rec := " path=" + name + "\n"
	n := len(rec) + 1
	for len(fmt.Sprint(n))+len(rec) != n {
		n = len(fmt.Sprint(n)) + len(rec)
	}
	rec = fmt.Sprint(n) + rec
	block(ustar("PaxHeaders/e", 'x', len(rec)))
	block([]byte(rec))
	block(ustar("placeholder", '0', len(content)))
	if content != "" {
		block([]byte(content))
	}
	return b.Bytes()
}

func ustar(name string, typ byte, size int) []byte {
	b := make([]byte, 512)
	copy(b, name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], fmt.Sprintf("%011o\x00", 0))
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// A stream entry whose name no index entry can have is ErrEntry, naming
// it, and costs only itself: Next (after a bad name) or SeekTo (after a
// header the tar reader refuses) reads the entries after it.
func TestBadStreamEntry(t *testing.T) {
	for shape, name := range map[string]string{
		"dotdot": "../escape", "absolute": "/etc/passwd", "nul": "bad\x00name", "70KB": strings.Repeat("n", 70<<10),
	} {
		t.Run(shape, func(t *testing.T) {
			var tarb bytes.Buffer
			tarb.Write(paxEntry("a", "alpha"))
			badOff := int64(tarb.Len())
			tarb.Write(paxEntry(name, "evil"))
			zOff := int64(tarb.Len())
			tarb.Write(paxEntry("z", "zulu"))
			tarb.Write(make([]byte, 1024))
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
			if err != nil {
				t.Fatal(err)
			}
			frame := enc.EncodeAll(tarb.Bytes(), nil)
			sink := &memSink{}
			loc, _ := sink.WriteFrame(frame)
			frames := []index.Frame{{Size: uint32(tarb.Len()), CSize: uint32(len(frame)), PartOffset: loc.Offset}}
			r, err := NewReader(sink.source(), frames, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if e, err := r.Next(); err != nil || e.Path != "a" {
				t.Fatalf("first entry: %v %v", e, err)
			}
			_, err = r.Next()
			if !errors.Is(err, ErrEntry) || !strings.Contains(err.Error(), fmt.Sprint(badOff)) {
				t.Fatalf("bad entry: %v; want ErrEntry at offset %d", err, badOff)
			}
			if shape != "nul" && !strings.Contains(err.Error(), index.ShortPath(name)) {
				t.Errorf("error %.300q does not name the entry", err)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			if shape != "nul" {
				// Next goes on by itself.
				if e, err := r.Next(); err != nil || e.Path != "z" {
					t.Fatalf("after the bad entry: %v %v", e, err)
				}
			}
			if err := r.SeekTo(zOff); err != nil {
				t.Fatal(err)
			}
			e, err := r.Next()
			if err != nil || e.Path != "z" {
				t.Fatalf("after SeekTo past the bad entry: %v %v", e, err)
			}
			var b bytes.Buffer
			if _, err := b.ReadFrom(r); err != nil || b.String() != "zulu" {
				t.Fatalf("content after the bad entry: %q %v", b.String(), err)
			}
		})
	}
}
