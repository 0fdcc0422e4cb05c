package compress

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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

// data is how well some data compresses at each level (output ÷ input).
type data map[Level]float64

// textLike compresses better at each level (levels.go's text figures);
// dumpLike compresses worse above low (the pgbench dump of seed 003:
// 110:1 at low, 105:1 at medium, 104.5:1 at high).
var (
	textLike = data{LevelLow: 0.322, LevelMedium: 0.306, LevelHigh: 0.290}
	dumpLike = data{LevelLow: 1 / 110.3, LevelMedium: 1 / 105.0, LevelHigh: 1 / 104.5}
)

// frame feeds one 1 MiB frame compressed at the controller's level.
func frame(a *Auto, d data, comp, sink time.Duration) Level {
	l := a.Level()
	return a.Observe(Obs{Level: l, Compress: comp, Sink: sink, Raw: 1 << 20, Out: int(d[l] * (1 << 20))})
}

func TestAutoGoesUpWhenSinkIsSlow(t *testing.T) {
	a, err := NewAuto(AutoOptions{Window: 4})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []Level{LevelLow, LevelLow, LevelLow, LevelMedium, LevelMedium, LevelMedium, LevelMedium, LevelHigh}
	for i, w := range want {
		if got := frame(a, textLike, 2*ms, 10*ms); got != w {
			t.Fatalf("observation %d: level %v, want %v", i, got, w)
		}
	}
	// Stays at the top.
	for i := 0; i < 8; i++ {
		frame(a, textLike, 2*ms, 10*ms)
	}
	if tried, lost := a.Trials(); a.Level() != LevelHigh || a.Changes() != 2 || tried != 2 || lost != 0 {
		t.Fatalf("level %v changes %d trials %d lost %d, want high after 2 changes, none lost", a.Level(), a.Changes(), tried, lost)
	}
}

func TestAutoGoesDownWhenCompressionIsSlow(t *testing.T) {
	a, err := NewAuto(AutoOptions{Start: LevelHigh, Window: 2})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	for i := 0; i < 10; i++ {
		frame(a, textLike, 20*ms, 5*ms)
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
		frame(a, textLike, 5*ms, 10*ms)
	}
	if a.Level() != LevelMedium || a.Changes() != 0 {
		t.Fatalf("level %v changes %d inside the hysteresis band", a.Level(), a.Changes())
	}
	// A burst inside one window is averaged: one slow sink write among
	// fast ones does not move a window of 4.
	b, _ := NewAuto(AutoOptions{Start: LevelMedium, Window: 4})
	frame(b, textLike, 5*ms, 40*ms)
	frame(b, textLike, 5*ms, 1*ms)
	frame(b, textLike, 5*ms, 1*ms)
	frame(b, textLike, 5*ms, 1*ms) // sums: compress 20, sink 43 → 2.15×: stay
	if b.Level() != LevelMedium {
		t.Fatalf("level %v after a single burst", b.Level())
	}
}

// TestAutoUndoesAStepThatDoesNotPay: on data that compresses no better at
// the next level, a slow sink makes the controller try the step, see the
// output not shrink, step back, and wait longer before each next try
// (Backoff 4 windows, doubling to MaxBackoff 16 here).
func TestAutoUndoesAStepThatDoesNotPay(t *testing.T) {
	a, err := NewAuto(AutoOptions{Window: 1, Backoff: 4, MaxBackoff: 16})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	var ups []int
	for i := 0; i < 80; i++ {
		before := a.Level()
		if frame(a, dumpLike, 1*ms, 10*ms) > before {
			ups = append(ups, i)
		}
		if a.Level() > LevelMedium {
			t.Fatalf("window %d: level %v; medium never paid, high must not be tried", i, a.Level())
		}
	}
	// Window 0 steps up; 1 undoes it and waits 4 windows (2..5), so 6
	// steps up again; 7 undoes it and waits 8 (8..15); 16 steps up; 17
	// undoes it and waits 16, the most; 34; 52; 70.
	want := []int{0, 6, 16, 34, 52, 70}
	if fmt.Sprint(ups) != fmt.Sprint(want) {
		t.Errorf("steps up at windows %v, want %v", ups, want)
	}
	if tried, lost := a.Trials(); tried != len(want) || lost != len(want) || a.Level() != LevelLow {
		t.Errorf("tried %d lost %d level %v, want %d tried, all lost, back at low", tried, lost, a.Level(), len(want))
	}
}

// TestAutoTrialCountsOnlyItsOwnFrames: frames still in flight from before
// a step up (compressed at the old level) do not count for the new
// level's ratio, and a window without any frame at the new level does not
// decide the trial.
func TestAutoTrialCountsOnlyItsOwnFrames(t *testing.T) {
	a, _ := NewAuto(AutoOptions{Window: 2})
	ms := time.Millisecond
	frame(a, textLike, 1*ms, 10*ms)
	if frame(a, textLike, 1*ms, 10*ms) != LevelMedium {
		t.Fatal("no step up with a slow sink")
	}
	// Two frames compressed at low before the step land now: were they
	// counted, the window's ratio (low's) would undo the step.
	for i := 0; i < 2; i++ {
		a.Observe(Obs{Level: LevelLow, Compress: ms, Sink: 2 * ms, Raw: 1 << 20, Out: int(textLike[LevelLow] * (1 << 20))})
	}
	if a.Level() != LevelMedium {
		t.Fatalf("level %v: the trial was judged on the old level's frames", a.Level())
	}
	frame(a, textLike, 1*ms, 2*ms)
	frame(a, textLike, 1*ms, 2*ms)
	if tried, lost := a.Trials(); a.Level() != LevelMedium || tried != 1 || lost != 0 {
		t.Fatalf("level %v tried %d lost %d, want medium kept: it paid", a.Level(), tried, lost)
	}
}

// TestAutoBackoffStartsAfreshAfterAHold: once a level has held for
// MaxBackoff windows, a lost trial waits Backoff again, not the maximum.
func TestAutoBackoffStartsAfreshAfterAHold(t *testing.T) {
	a, _ := NewAuto(AutoOptions{Window: 1, Backoff: 2, MaxBackoff: 8})
	ms := time.Millisecond
	for i := 0; i < 40; i++ { // several lost trials: the wait is at 8
		frame(a, dumpLike, 1*ms, 10*ms)
	}
	for a.Level() != LevelLow {
		frame(a, dumpLike, 1*ms, 10*ms)
	}
	for i := 0; i < 10; i++ { // a quiet spell at low: sink in the band
		frame(a, dumpLike, 1*ms, 2*ms)
	}
	frame(a, dumpLike, 1*ms, 10*ms) // step up
	frame(a, dumpLike, 1*ms, 10*ms) // undone
	n := 0
	for a.Level() == LevelLow {
		frame(a, dumpLike, 1*ms, 10*ms)
		n++
	}
	if n != 3 {
		t.Errorf("next step up after %d windows, want 3 (a wait of Backoff 2, then the step)", n)
	}
}

// TestAutoProperties: whatever the observations, the level stays in its
// range, lost trials never exceed tried ones, and on data whose higher
// levels never pay the trials grow with the log of the windows, not with
// them.
func TestAutoProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ms := time.Millisecond
	for run := 0; run < 200; run++ {
		o := AutoOptions{Window: 1 + rng.IntN(8), Backoff: 1 + rng.IntN(4), Start: Level(int(LevelLow) + rng.IntN(3))}
		o.MaxBackoff = o.Backoff * (1 + rng.IntN(32))
		a, err := NewAuto(o)
		if err != nil {
			t.Fatal(err)
		}
		d := data{LevelLow: rng.Float64(), LevelMedium: rng.Float64(), LevelHigh: rng.Float64()}
		for i := 0; i < 2000; i++ {
			l := a.Level()
			if rng.IntN(10) == 0 { // an in-flight frame from another level
				l = Level(int(LevelLow) + rng.IntN(3))
			}
			a.Observe(Obs{Level: l, Compress: time.Duration(rng.IntN(20)) * ms, Sink: time.Duration(rng.IntN(20)) * ms, Raw: 1 << 20, Out: int(d[l] * (1 << 20))})
			if lv := a.Level(); lv < LevelLow || lv > LevelHigh {
				t.Fatalf("run %d: level %v out of range", run, lv)
			}
		}
		if tried, lost := a.Trials(); lost > tried {
			t.Fatalf("run %d: lost %d > tried %d", run, lost, tried)
		}

		// Never paying: a slow sink, the same ratio at every level.
		b, _ := NewAuto(o)
		windows := 4000
		for i := 0; i < windows*o.Window; i++ {
			frame(b, data{LevelLow: 0.5, LevelMedium: 0.5, LevelHigh: 0.5}, 1*ms, 10*ms)
		}
		tried, _ := b.Trials()
		// Doubling from Backoff to MaxBackoff takes log2 steps; after
		// that one trial per MaxBackoff+2 windows.
		limit := 2 + int(math.Ceil(math.Log2(float64(o.MaxBackoff)/float64(o.Backoff)))) + windows/(o.MaxBackoff+2) + 1
		if tried > limit {
			t.Fatalf("run %d (%+v): %d trials in %d windows of data that never pays, want ≤ %d", run, o, tried, windows, limit)
		}
	}
}

func TestAutoOptionsValidate(t *testing.T) {
	bad := []AutoOptions{
		{Min: LevelHigh, Max: LevelLow},
		{Min: LevelNone},
		{Start: LevelHigh, Min: LevelLow, Max: LevelMedium},
		{Window: -1},
		{UpRatio: 1, DownRatio: 2},
		{MinGain: 1},
		{MinGain: -0.1},
		{Backoff: 8, MaxBackoff: 4},
		{Backoff: -1},
	}
	for _, o := range bad {
		if _, err := NewAuto(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("NewAuto(%+v) err = %v, want ErrBadOptions", o, err)
		}
	}
	if s := (AutoOptions{}).String(); s != "auto(start=low range=low..high window=8 up=3 down=1 gain=0.02 backoff=4..64)" {
		t.Errorf("default options = %s", s)
	}
}
