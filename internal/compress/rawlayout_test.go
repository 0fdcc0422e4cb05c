package compress

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// layOut puts src into a fresh buffer in the raw layout, with junk where
// the headers go (FinishRawFrame must overwrite all of it).
func layOut(src []byte) []byte {
	buf := bytes.Repeat([]byte{0xEE}, RawLayoutSize(len(src)))
	for i := 0; i < len(src); {
		k := RawRun(i, len(src))
		copy(buf[RawPos(i):], src[i:i+k])
		i += k
	}
	return buf
}

// A frame finished in place is byte for byte the frame AppendRawFrame
// makes of the same content, at every size where the header or the block
// count changes, and the content gathers back whole.
func TestFinishRawFrameMatchesAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	sizes := []int{0, 1, 255, 256, 257, 65535, 65791, 65792, 65793,
		MaxRawBlock - 1, MaxRawBlock, MaxRawBlock + 1, 2 * MaxRawBlock, 1 << 20, 1<<20 + 3, 4<<20 - 1}
	for range 30 {
		sizes = append(sizes, r.IntN(3<<20))
	}
	for _, n := range sizes {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		buf := layOut(src)
		got := FinishRawFrame(buf, n)
		want := AppendRawFrame(nil, src)
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d: the frame finished in place differs from AppendRawFrame's (%d vs %d bytes)", n, len(got), len(want))
		}
		if len(got) != RawFrameSize(n) {
			t.Fatalf("n=%d: %d bytes, RawFrameSize says %d", n, len(got), RawFrameSize(n))
		}
		if g := GatherRaw(nil, buf, n); !bytes.Equal(g, src) {
			t.Fatalf("n=%d: GatherRaw does not give the content back", n)
		}
	}
}

// The probe sees the same sample wherever the content lies.
func TestProbeRawMatchesProbe(t *testing.T) {
	e, err := NewEncoder(1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 1000, probeSlices * probeSlice, probeSlices*probeSlice + 1, 1 << 20, 3<<20 + 7} {
		src := make([]byte, n)
		for i := range src {
			if i%3 == 0 {
				src[i] = byte(r.Uint32())
			} else {
				src[i] = 'a' + byte(i%7)
			}
		}
		if a, b := e.Probe(src), e.ProbeRaw(layOut(src), n); a != b {
			t.Fatalf("n=%d: Probe %v, ProbeRaw %v", n, a, b)
		}
	}
}
