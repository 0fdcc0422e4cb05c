package compress

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// AutoOptions tunes the Auto controller. Zero fields take the defaults.
type AutoOptions struct {
	// Start is the level the controller begins at (default LevelLow: the
	// safe choice until the sink has shown its speed).
	Start Level
	// Min and Max bound the levels it moves between (default low..high).
	Min, Max Level
	// Window is how many observations are summed before a decision
	// (default 8 frames: 8 MiB at the default frame size, enough to smooth
	// a drive's buffer flushes).
	Window int
	// UpRatio: go up a level when the sink time exceeds UpRatio × the
	// compression time over a window (default 3: in BenchmarkZstdLevels
	// each step up costs 1.2-5× the time, so below 3× headroom a step up
	// would often make compression the bottleneck and bounce straight back).
	UpRatio float64
	// DownRatio: go down a level when the compression time exceeds
	// DownRatio × the sink time (default 1: compression is the bottleneck).
	DownRatio float64
}

func (o AutoOptions) withDefaults() AutoOptions {
	// LevelAuto (the zero value) means "unset" for the three levels.
	if o.Min == 0 {
		o.Min = LevelLow
	}
	if o.Max == 0 {
		o.Max = LevelHigh
	}
	if o.Start == 0 {
		o.Start = o.Min
	}
	if o.Window == 0 {
		o.Window = 8
	}
	if o.UpRatio == 0 {
		o.UpRatio = 3
	}
	if o.DownRatio == 0 {
		o.DownRatio = 1
	}
	return o
}

// ErrBadOptions is wrapped by option validation errors.
var ErrBadOptions = errors.New("compress: bad options")

// Validate checks the options after defaults are applied.
func (o AutoOptions) Validate() error {
	o = o.withDefaults()
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrBadOptions}, a...)...) }
	switch {
	case o.Min < LevelLow || o.Max > LevelHigh || o.Min > o.Max:
		return bad("level range %v..%v not within low..high", o.Min, o.Max)
	case o.Start < o.Min || o.Start > o.Max:
		return bad("start level %v outside %v..%v", o.Start, o.Min, o.Max)
	case o.Window < 1:
		return bad("window %d < 1", o.Window)
	case o.UpRatio <= o.DownRatio || o.DownRatio <= 0:
		return bad("need 0 < DownRatio (%g) < UpRatio (%g)", o.DownRatio, o.UpRatio)
	}
	return nil
}

// String describes the options (for benchmark records).
func (o AutoOptions) String() string {
	o = o.withDefaults()
	return fmt.Sprintf("auto(start=%v range=%v..%v window=%d up=%g down=%g)", o.Start, o.Min, o.Max, o.Window, o.UpRatio, o.DownRatio)
}

// Auto picks the compression level that keeps up with the sink. It is fed
// one observation per compressed frame: the time compression needed for it
// (wall time per frame of the encoder pool, i.e. encode time divided by the
// number of parallel encoders) and the time the writer spent handing it to
// the sink (drive or network). Over each window:
//
//   - sink ≥ UpRatio × compress: the sink is the bottleneck and the CPU has
//     room; go up a level (better ratio, same throughput).
//   - compress ≥ DownRatio × sink: compression is the bottleneck; go down.
//   - otherwise stay.
//
// The gap between the ratios is hysteresis: after a step up, the slower
// level must still leave the sink the bottleneck or the next window steps
// back down. Auto is pure logic (no clock, no goroutines) and safe for
// concurrent use.
type Auto struct {
	mu        sync.Mutex
	o         AutoOptions
	level     Level
	n         int
	comp, snk time.Duration
	changes   int
}

// NewAuto returns a controller, or an error wrapping ErrBadOptions.
func NewAuto(o AutoOptions) (*Auto, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	return &Auto{o: o, level: o.Start}, nil
}

// Level is the level to compress the next frame at.
func (a *Auto) Level() Level {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.level
}

// Changes counts the level changes so far.
func (a *Auto) Changes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changes
}

// Observe records one compressed frame: compress is the effective time
// compression took for it, sink the time spent writing it to the sink. It
// returns the level for the next frames.
func (a *Auto) Observe(compress, sink time.Duration) Level {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.comp += max(compress, 0)
	a.snk += max(sink, 0)
	a.n++
	if a.n < a.o.Window {
		return a.level
	}
	c, s := float64(a.comp), float64(a.snk)
	a.n, a.comp, a.snk = 0, 0, 0
	switch {
	case s >= a.o.UpRatio*c && a.level < a.o.Max:
		a.level++
		a.changes++
	case c >= a.o.DownRatio*s && c > 0 && a.level > a.o.Min:
		a.level--
		a.changes++
	}
	return a.level
}
