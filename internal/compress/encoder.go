package compress

import (
	"fmt"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// zstdLevel maps the user's level to a klauspost zstd encoder level.
// Chosen by measurement; see BenchmarkZstdLevels and the figures in
// levels.go.
func zstdLevel(l Level) zstd.EncoderLevel {
	switch l {
	case LevelLow:
		return DefaultLow
	case LevelMedium:
		return DefaultMedium
	case LevelHigh:
		return DefaultHigh
	}
	return zstd.SpeedFastest
}

// ProbeThreshold: a frame whose probe compresses to more than this fraction
// of its size (worse than about 1.11:1) is stored raw under LevelAuto. On
// this project's 2-core machines the fastest zstd level runs at ~90 MB/s per
// core on text while the virtual drive writes at several hundred MB/s, so a
// frame that would save under 10 % costs far more time than it saves media:
// audio (seed 000's test1 compresses 1.11:1), video and encrypted data go
// raw at disk speed.
const ProbeThreshold = 0.90

// probeSample bytes are compressed by Probe: 4 slices of 16 KiB spread over
// the frame, so a frame that starts with a compressible tar header and then
// holds video is still judged by its body.
const (
	probeSlices = 4
	probeSlice  = 16 << 10
)

// Encoder turns frames into zstd frames. It is safe for concurrent use by
// up to Concurrency goroutines at once without blocking (more just wait).
type Encoder struct {
	enc      map[zstd.EncoderLevel]*zstd.Encoder
	probeEnc *zstd.Encoder
}

// NewEncoder returns an encoder for concurrency simultaneous callers
// (0 means GOMAXPROCS). Encoder state is allocated lazily on first use of
// each level.
func NewEncoder(concurrency int) (*Encoder, error) {
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	e := &Encoder{enc: make(map[zstd.EncoderLevel]*zstd.Encoder)}
	for _, l := range []zstd.EncoderLevel{DefaultLow, DefaultMedium, DefaultHigh, zstd.SpeedFastest} {
		if e.enc[l] != nil {
			continue
		}
		z, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(concurrency),
			zstd.WithEncoderCRC(true),
			zstd.WithZeroFrames(true))
		if err != nil {
			return nil, fmt.Errorf("compress: zstd encoder %v: %w", l, err)
		}
		e.enc[l] = z
	}
	e.probeEnc = e.enc[zstd.SpeedFastest]
	return e, nil
}

// Encode appends one zstd frame with content checksum holding src to dst
// and reports which codec produced it. Level none, and any frame that the
// compressor cannot make smaller than its raw form, is stored raw. Level
// auto is not a level here: the caller resolves it (Probe, Auto) first;
// passing it encodes at LevelLow.
func (e *Encoder) Encode(dst, src []byte, l Level) ([]byte, Codec) {
	if l == LevelNone {
		return AppendRawFrame(dst, src), CodecRaw
	}
	if l == LevelAuto {
		l = LevelLow
	}
	start := len(dst)
	out := e.enc[zstdLevel(l)].EncodeAll(src, dst)
	if len(out)-start >= RawFrameSize(len(src)) {
		return AppendRawFrame(out[:start], src), CodecRaw
	}
	return out, CodecZstd
}

// Probe estimates how well src compresses: the size ratio (compressed /
// original) of a sample of up to 64 KiB compressed with the fastest zstd
// level. Below ProbeThreshold the frame is worth compressing.
func (e *Encoder) Probe(src []byte) float64 {
	return e.probe(len(src), func(dst []byte, i, end int) []byte { return append(dst, src[i:end]...) })
}

// probe compresses the sample of n content bytes that take (which appends
// content bytes [i, end) to dst) gives, and returns the size ratio.
func (e *Encoder) probe(n int, take func(dst []byte, i, end int) []byte) float64 {
	if n == 0 {
		return 1
	}
	sample := make([]byte, 0, min(n, probeSlices*probeSlice))
	if n <= probeSlices*probeSlice {
		sample = take(sample, 0, n)
	} else {
		step := (n - probeSlice) / (probeSlices - 1)
		for i := 0; i < probeSlices; i++ {
			sample = take(sample, i*step, i*step+probeSlice)
		}
	}
	c := e.probeEnc.EncodeAll(sample, make([]byte, 0, len(sample)+len(sample)/64+64))
	return float64(len(c)) / float64(len(sample))
}

// Close releases the encoders. The Encoder must not be used afterwards.
func (e *Encoder) Close() {
	for _, z := range e.enc {
		z.Close()
	}
}
