package compress

import (
	"fmt"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// BenchmarkZstdLevels measures throughput (MB/s of input, one goroutine)
// and ratio (compressed/original, reported as "ratio") of each klauspost
// zstd level on 1 MiB frames of text-like and SQL-dump-like data. The
// defaults in levels.go are chosen from its output.
func BenchmarkZstdLevels(b *testing.B) {
	const frame = 1 << 20
	data := map[string][]byte{
		"text": genText(8*frame, 1),
		"sql":  genSQL(8*frame, 1),
	}
	levels := []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression}
	for _, kind := range []string{"text", "sql"} {
		src := data[kind]
		for _, l := range levels {
			b.Run(fmt.Sprintf("%s/%v", kind, l), func(b *testing.B) {
				enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
				if err != nil {
					b.Fatal(err)
				}
				defer enc.Close()
				dst := make([]byte, 0, frame+frame/8)
				var in, out int64
				b.SetBytes(frame)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					off := (i % 8) * frame
					dst = enc.EncodeAll(src[off:off+frame], dst[:0])
					in += frame
					out += int64(len(dst))
				}
				b.ReportMetric(float64(out)/float64(in), "ratio")
			})
		}
	}
}

// BenchmarkEncode measures Encoder.Encode per Kura level on text and random
// data (random data exercises the stored-raw fallback).
func BenchmarkEncode(b *testing.B) {
	const frame = 1 << 20
	e, err := NewEncoder(1)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, kind := range []string{"text", "random"} {
		src := genText(frame, 2)
		if kind == "random" {
			src = genRandom(frame, 2)
		}
		for _, l := range []Level{LevelNone, LevelLow, LevelMedium, LevelHigh} {
			b.Run(fmt.Sprintf("%s/%v", kind, l), func(b *testing.B) {
				dst := make([]byte, 0, frame+frame/8)
				b.SetBytes(frame)
				for i := 0; i < b.N; i++ {
					dst, _ = e.Encode(dst[:0], src, l)
				}
				b.ReportMetric(float64(len(dst))/frame, "ratio")
			})
		}
	}
}

// BenchmarkProbe measures the cost of the auto probe on a 1 MiB frame.
func BenchmarkProbe(b *testing.B) {
	e, err := NewEncoder(1)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	src := genRandom(1<<20, 3)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		e.Probe(src)
	}
}
