package stream

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
)

// checkContent is half text, half random: it compresses some at every level.
func checkContent(n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	b := bytes.Repeat([]byte("kura frame checker "), n/19+1)[:n]
	for i := n / 2; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// Every frame the encoder makes passes; one flipped bit anywhere in a raw
// frame, or in the content or checksum of a compressed one, fails with
// ErrCorrupt; so do a frame without a checksum, two frames in one, and a
// cut frame.
func TestFrameChecker(t *testing.T) {
	c, err := NewFrameChecker()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	enc, err := compress.NewEncoder(1)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	content := checkContent(3000)
	frames := map[compress.Level][]byte{}
	for _, l := range []compress.Level{compress.LevelNone, compress.LevelLow, compress.LevelMedium, compress.LevelHigh} {
		f, _ := enc.Encode(nil, content, l)
		frames[l] = f
		if err := c.Check(f); err != nil {
			t.Fatalf("level %s: a good frame: %v", l, err)
		}
	}
	if err := c.Check(compress.AppendRawFrame(nil, nil)); err != nil {
		t.Errorf("an empty frame: %v", err)
	}
	bad := func(what string, f []byte) {
		t.Helper()
		if err := c.Check(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v; want ErrCorrupt", what, err)
		}
	}
	raw := frames[compress.LevelNone]
	for i := range len(raw) * 8 {
		if i == 4*8+4 {
			continue // the descriptor's Unused_bit: decoders ignore it (RFC 8878 3.1.1.1.1.3)
		}
		f := bytes.Clone(raw)
		f[i/8] ^= 1 << (i % 8)
		bad("raw frame, bit "+strconv.Itoa(i)+" flipped", f)
	}
	for l, f := range frames {
		if l == compress.LevelNone {
			continue
		}
		for _, i := range []int{len(f) / 2 * 8, (len(f) - 3) * 8, (len(f)-1)*8 + 7} {
			g := bytes.Clone(f)
			g[i/8] ^= 1 << (i % 8)
			bad("level "+l.String()+", bit "+strconv.Itoa(i)+" flipped", g)
		}
	}
	noSum := bytes.Clone(raw[:len(raw)-4])
	noSum[4] &^= 1 << 2
	bad("a frame without a checksum", noSum)
	bad("two frames", append(bytes.Clone(raw), raw...))
	bad("a cut frame", raw[:len(raw)-1])
	bad("nothing", nil)
	bad("a skippable frame", LabelFrame(Label{}))
	if err := c.Check(frames[compress.LevelHigh]); err != nil {
		t.Errorf("a good frame after bad ones: %v", err)
	}
}

// BenchmarkFrameChecker measures the check the server makes of every frame
// an agent sends, per level, on 1 MiB frames (the default size); MB/s are
// of uncompressed content.
func BenchmarkFrameChecker(b *testing.B) {
	enc, err := compress.NewEncoder(1)
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	content := checkContent(DefaultFrameSize)
	for _, l := range []compress.Level{compress.LevelNone, compress.LevelLow, compress.LevelHigh} {
		f, _ := enc.Encode(nil, content, l)
		b.Run(l.String(), func(b *testing.B) {
			c, err := NewFrameChecker()
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.SetBytes(int64(len(content)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Check(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
