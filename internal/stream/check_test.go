package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

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

// The raw frames' fast check and the decoder agree: on every frame made
// from a good raw frame by flipping, cutting, inserting or overwriting
// bytes, Check passes exactly when decoding does.
func TestFrameCheckerRawAgreesWithDecoder(t *testing.T) {
	c, err := NewFrameChecker()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := []int{0, 1, 255, 256, 65791, 65792, compress.MaxRawBlock, compress.MaxRawBlock + 1, 3*compress.MaxRawBlock + 7}
	fast := 0
	for _, n := range sizes {
		good := compress.AppendRawFrame(nil, checkContent(n))
		if err := c.Check(good); err != nil {
			t.Fatalf("%d bytes: a good raw frame: %v", n, err)
		}
		for i := range 300 {
			f := bytes.Clone(good)
			switch i % 4 {
			case 0: // flip bits
				for range 1 + rng.IntN(3) {
					k := rng.IntN(len(f) * 8)
					f[k/8] ^= 1 << (k % 8)
				}
			case 1: // cut
				f = f[:rng.IntN(len(f))]
			case 2: // insert a byte
				k := rng.IntN(len(f) + 1)
				f = append(f[:k], append([]byte{byte(rng.Uint32())}, f[k:]...)...)
			case 3: // overwrite a byte of the header or a block header
				k := rng.IntN(min(len(f), 12))
				f[k] = byte(rng.Uint32())
			}
			if len(f) < 5 || f[4]&(1<<2) == 0 {
				continue // refused before either check
			}
			raw, _ := checkRaw(f)
			if raw {
				fast++
			}
			got, want := c.Check(f), c.checkDecoded(f)
			if (got == nil) != (want == nil) {
				t.Fatalf("%d bytes, mutation %d (fast path %v): Check says %v, the decoder %v", n, i, raw, got, want)
			}
			if got != nil && !errors.Is(got, ErrCorrupt) {
				t.Fatalf("%d bytes, mutation %d: %v; want ErrCorrupt", n, i, got)
			}
		}
	}
	if fast < 1000 {
		t.Errorf("only %d mutated frames took the fast path", fast)
	}
	// A raw block longer than a block may be, in an otherwise well-made
	// frame, is refused by both.
	n := compress.MaxRawBlock + 1
	content := checkContent(n)
	f := binary.LittleEndian.AppendUint32(nil, compress.ZstdMagic)
	f = append(f, 2<<6|1<<5|1<<2)
	f = binary.LittleEndian.AppendUint32(f, uint32(n))
	h := uint32(n)<<3 | 1
	f = append(f, byte(h), byte(h>>8), byte(h>>16))
	f = append(f, content...)
	f = binary.LittleEndian.AppendUint32(f, uint32(xxhash.Sum64(content)))
	if got, want := c.Check(f), c.checkDecoded(f); got == nil || want == nil {
		t.Errorf("a raw block of %d bytes: Check says %v, the decoder %v; want both to refuse it", n, got, want)
	}
}
