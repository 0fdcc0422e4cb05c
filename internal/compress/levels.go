package compress

import "github.com/klauspost/compress/zstd"

// Default zstd encoder levels behind low, medium and high, chosen by
// measurement: BenchmarkZstdLevels, 1 MiB frames, one goroutine, on the
// project machine (AMD EPYC, 2 shared cores, klauspost/compress v1.20.4,
// go test -bench ZstdLevels -benchtime 20x). Ratio = compressed/original.
//
//	level      text MB/s  text ratio   SQL-dump MB/s  SQL ratio
//	fastest      87.3      0.322          80.1         0.281
//	default      45.7      0.306          69.3         0.274
//	better       17.4      0.302          12.4         0.258
//	best          5.3      0.285           8.2         0.251
//
// Reasons:
//   - low = fastest: the cheapest level by far, and already ~3.1:1 on text
//     and ~3.6:1 on SQL; the next level saves only 2-5 % more media for
//     roughly half the speed.
//   - medium = default: 1.2-2× slower than fastest for a 2-5 % smaller
//     output; still above typical drive/network rates with 2 workers.
//   - high = better: 6 % smaller than fastest on SQL dumps at 12-17 MB/s per
//     core. best would save another 3-5 % but at 5-8 MB/s per core it cannot
//     feed a drive or a gigabit link on a small machine, so it is not used.
const (
	DefaultLow    = zstd.SpeedFastest
	DefaultMedium = zstd.SpeedDefault
	DefaultHigh   = zstd.SpeedBetterCompression
)
