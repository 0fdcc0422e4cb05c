package compress

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func TestParseLevel(t *testing.T) {
	for l := LevelAuto; l <= LevelHigh; l++ {
		got, err := ParseLevel(l.String())
		if err != nil || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", l.String(), got, err, l)
		}
	}
	if l, err := ParseLevel(" HIGH "); err != nil || l != LevelHigh {
		t.Errorf("ParseLevel(HIGH) = %v, %v", l, err)
	}
	if l, err := ParseLevel(""); err != nil || l != LevelAuto {
		t.Errorf("ParseLevel(\"\") = %v, %v; want auto", l, err)
	}
	if _, err := ParseLevel("max"); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("ParseLevel(max) err = %v, want ErrUnknownLevel", err)
	}
	if Level(9).Valid() || Level(9).String() != "level(9)" {
		t.Errorf("Level(9) = %v valid=%v", Level(9), Level(9).Valid())
	}
}

// The codec IDs are on media: this test pins them so nobody renumbers them.
func TestCodecIDsArePermanent(t *testing.T) {
	if CodecRaw != 0 || CodecZstd != 1 {
		t.Fatalf("codec IDs changed: raw=%d zstd=%d", CodecRaw, CodecZstd)
	}
	if CodecRaw.String() != "zstd-raw" || CodecZstd.String() != "zstd" {
		t.Fatalf("codec names changed: %v %v", CodecRaw, CodecZstd)
	}
}

var rawSizes = []int{0, 1, 255, 256, 4096, 65535 + 256, 65536 + 256, MaxRawBlock, MaxRawBlock + 1, 3*MaxRawBlock + 7, 1<<20 + 3}

func TestRawFrameDecodesWithKlauspost(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, n := range rawSizes {
		src := genRandom(n, uint64(n))
		f := AppendRawFrame([]byte("prefix"), src)
		f = f[len("prefix"):]
		if len(f) != RawFrameSize(n) {
			t.Errorf("n=%d: frame len %d, RawFrameSize %d", n, len(f), RawFrameSize(n))
		}
		got, err := dec.DecodeAll(f, nil)
		if err != nil {
			t.Fatalf("n=%d: decode: %v", n, err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("n=%d: content differs", n)
		}
		if n > 0 {
			// Flip a content byte: the checksum must catch it.
			bad := bytes.Clone(f)
			bad[len(bad)-5] ^= 1
			if _, err := dec.DecodeAll(bad, nil); err == nil {
				t.Errorf("n=%d: corrupted raw frame decoded without error", n)
			}
		}
	}
}

func TestRawFrameDecodesWithZstdCLI(t *testing.T) {
	zstdBin, err := exec.LookPath("zstd")
	if err != nil {
		t.Fatalf("the zstd command is required for this test: %v", err)
	}
	dir := t.TempDir()
	var want []byte
	var all []byte
	for _, n := range rawSizes {
		src := genText(n, uint64(n))
		want = append(want, src...)
		all = AppendRawFrame(all, src)
	}
	p := filepath.Join(dir, "raw.zst")
	if err := os.WriteFile(p, all, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(zstdBin, "-dc", p).Output()
	if err != nil {
		t.Fatalf("zstd -dc: %v", err)
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("zstd -dc output differs (%d bytes, want %d)", len(out), len(want))
	}
	// zstd -t must verify the checksum and reject a flipped byte.
	all[len(all)-10] ^= 0x40
	if err := os.WriteFile(p, all, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(zstdBin, "-t", p).Run(); err == nil {
		t.Fatal("zstd -t accepted a corrupted raw frame")
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	e, err := NewEncoder(2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	text := genText(1<<20, 5)
	rnd := genRandom(1<<20, 5)
	for l := LevelAuto; l <= LevelHigh; l++ {
		for _, src := range [][]byte{text, rnd, nil, []byte("x")} {
			f, codec := e.Encode(nil, src, l)
			got, err := dec.DecodeAll(f, nil)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("level %v len %d: round trip failed: %v", l, len(src), err)
			}
			if len(f) > RawFrameSize(len(src)) {
				t.Errorf("level %v len %d: frame %d bytes > raw %d", l, len(src), len(f), RawFrameSize(len(src)))
			}
			if l == LevelNone && codec != CodecRaw {
				t.Errorf("level none gave codec %v", codec)
			}
		}
		if l != LevelNone {
			f, codec := e.Encode(nil, text, l)
			if codec != CodecZstd || float64(len(f)) > 0.5*float64(len(text)) {
				t.Errorf("level %v: text gave codec %v, %d bytes of %d", l, codec, len(f), len(text))
			}
			if _, codec := e.Encode(nil, rnd, l); codec != CodecRaw {
				t.Errorf("level %v: random data not stored raw (codec %v)", l, codec)
			}
		}
	}
}

func TestProbe(t *testing.T) {
	e, err := NewEncoder(1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if r := e.Probe(genRandom(1<<20, 1)); r < ProbeThreshold {
		t.Errorf("random data probe ratio %.3f < %.2f", r, ProbeThreshold)
	}
	if r := e.Probe(genText(1<<20, 1)); r > 0.6 {
		t.Errorf("text probe ratio %.3f, want well below threshold", r)
	}
	if r := e.Probe(genSQL(10_000, 1)); r > 0.6 {
		t.Errorf("short SQL probe ratio %.3f", r)
	}
	// A frame whose first 16 KiB is text but whose body is random data is
	// judged by the body.
	mixed := append(genText(16<<10, 2), genRandom(1<<20, 2)...)
	if r := e.Probe(mixed); r < 0.7 {
		t.Errorf("mostly-random frame probe ratio %.3f, want near 1", r)
	}
}

func TestAutoGoesUpWhenSinkIsSlow(t *testing.T) {
	a, err := NewAuto(AutoOptions{Window: 4})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []Level{LevelLow, LevelLow, LevelLow, LevelMedium, LevelMedium, LevelMedium, LevelMedium, LevelHigh}
	for i, w := range want {
		if got := a.Observe(2*ms, 10*ms); got != w {
			t.Fatalf("observation %d: level %v, want %v", i, got, w)
		}
	}
	// Stays at the top.
	for i := 0; i < 8; i++ {
		a.Observe(2*ms, 10*ms)
	}
	if a.Level() != LevelHigh || a.Changes() != 2 {
		t.Fatalf("level %v changes %d, want high after 2 changes", a.Level(), a.Changes())
	}
}

func TestAutoGoesDownWhenCompressionIsSlow(t *testing.T) {
	a, err := NewAuto(AutoOptions{Start: LevelHigh, Window: 2})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	for i := 0; i < 10; i++ {
		a.Observe(20*ms, 5*ms)
	}
	if a.Level() != LevelLow {
		t.Fatalf("level %v, want low when compression is the bottleneck", a.Level())
	}
}

func TestAutoHysteresis(t *testing.T) {
	a, err := NewAuto(AutoOptions{Start: LevelMedium, Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	// Sink 2× slower than compression: inside the band, no change.
	for i := 0; i < 20; i++ {
		a.Observe(5*ms, 10*ms)
	}
	if a.Level() != LevelMedium || a.Changes() != 0 {
		t.Fatalf("level %v changes %d inside the hysteresis band", a.Level(), a.Changes())
	}
	// A burst inside one window is averaged: one slow sink write among
	// fast ones does not move a window of 4.
	b, _ := NewAuto(AutoOptions{Start: LevelMedium, Window: 4})
	b.Observe(5*ms, 40*ms)
	b.Observe(5*ms, 1*ms)
	b.Observe(5*ms, 1*ms)
	b.Observe(5*ms, 1*ms) // sums: compress 20, sink 43 → 2.15×: stay
	if b.Level() != LevelMedium {
		t.Fatalf("level %v after a single burst", b.Level())
	}
}

func TestAutoOptionsValidate(t *testing.T) {
	bad := []AutoOptions{
		{Min: LevelHigh, Max: LevelLow},
		{Min: LevelNone},
		{Start: LevelHigh, Min: LevelLow, Max: LevelMedium},
		{Window: -1},
		{UpRatio: 1, DownRatio: 2},
	}
	for _, o := range bad {
		if _, err := NewAuto(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("NewAuto(%+v) err = %v, want ErrBadOptions", o, err)
		}
	}
	if s := (AutoOptions{}).String(); s != "auto(start=low range=low..high window=8 up=3 down=1)" {
		t.Errorf("default options = %s", s)
	}
}
