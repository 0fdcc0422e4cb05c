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
	// MinGain: a step up must make the output at least this fraction
	// smaller than at the level below, or it is undone (default 0.02: in
	// levels.go medium saves 2.5-5 % over low; on a pgbench dump it saves
	// nothing, its output is 5 % larger).
	MinGain float64
	// Backoff is how many windows to wait after a lost trial before the
	// next step up (default 4), doubled after each lost trial up to
	// MaxBackoff (default 64 windows: 512 MiB at the default frame size).
	Backoff, MaxBackoff int
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
	if o.MinGain == 0 {
		o.MinGain = 0.02
	}
	if o.Backoff == 0 {
		o.Backoff = 4
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 64
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
	case o.MinGain < 0 || o.MinGain >= 1:
		return bad("min gain %g not in [0, 1)", o.MinGain)
	case o.Backoff < 1 || o.MaxBackoff < o.Backoff:
		return bad("need 1 <= Backoff (%d) <= MaxBackoff (%d)", o.Backoff, o.MaxBackoff)
	}
	return nil
}

// String describes the options (for benchmark records).
func (o AutoOptions) String() string {
	o = o.withDefaults()
	return fmt.Sprintf("auto(start=%v range=%v..%v window=%d up=%g down=%g gain=%g backoff=%d..%d)",
		o.Start, o.Min, o.Max, o.Window, o.UpRatio, o.DownRatio, o.MinGain, o.Backoff, o.MaxBackoff)
}

// Auto picks the compression level that keeps up with the sink and pays
// for itself. It is fed one observation per compressed frame: the time
// compression needed for it (wall time per frame of the encoder pool, i.e.
// encode time divided by the number of parallel encoders), the time the
// writer spent handing it to the sink (drive or network), and the frame's
// size before and after. Over each window:
//
//   - sink ≥ UpRatio × compress: the sink is the bottleneck and the CPU has
//     room; try a level up (better ratio, same throughput).
//   - compress ≥ DownRatio × sink: compression is the bottleneck; go down.
//   - after a step up, the first window at the new level must also make the
//     output at least MinGain smaller than the window before it at the
//     level below; otherwise the step did not pay (some data, like a
//     pgbench dump, compresses no better or even worse at higher zstd
//     levels) and the controller steps back down.
//   - otherwise stay.
//
// A step up undone by the first rule, or by the second within two windows,
// is a lost trial: the controller then waits Backoff windows before it
// steps up again, doubling the wait after each lost trial up to
// MaxBackoff, so that a backup whose higher levels never pay spends
// almost nothing on trying them. A level held for MaxBackoff windows with
// no step up wanted (the data or the sink may have changed) starts the
// wait afresh.
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
	raw, out  int64 // bytes of this window's frames at the current level
	changes   int
	tried     int // steps up
	lost      int // steps up undone

	// trial: the level was just stepped up to and has not yet had a window
	// of its own frames; base is the output ÷ input of the window before
	// the step.
	trial bool
	base  float64
	// wentUp: the last change was a step up.
	wentUp bool
	// held counts windows since the last change; wait is how many windows
	// to let pass before the next step up, backoff the wait the next lost
	// trial sets.
	held, wait, backoff int
}

// Obs is one compressed frame as Auto sees it.
type Obs struct {
	Level    Level         // the level it was compressed at
	Compress time.Duration // effective compression time (per encoder pool)
	Sink     time.Duration // time spent handing it to the sink
	Raw, Out int           // its size before and after compression
}

// NewAuto returns a controller, or an error wrapping ErrBadOptions.
func NewAuto(o AutoOptions) (*Auto, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	return &Auto{o: o, level: o.Start, backoff: o.Backoff}, nil
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

// Trials counts the steps up tried, and how many of them were undone
// because they did not pay.
func (a *Auto) Trials() (tried, lost int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tried, a.lost
}

// Observe records one compressed frame and returns the level for the next
// frames. Frames still in flight from before a change (compressed at
// another level) count for the times but not for the ratio.
func (a *Auto) Observe(f Obs) Level {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.comp += max(f.Compress, 0)
	a.snk += max(f.Sink, 0)
	if f.Level == a.level && f.Raw > 0 {
		a.raw += int64(f.Raw)
		a.out += int64(max(f.Out, 0))
	}
	a.n++
	if a.n < a.o.Window || (a.trial && a.raw == 0) {
		return a.level
	}
	c, s := float64(a.comp), float64(a.snk)
	// ratio is the current level's output ÷ input in this window; known
	// says the window had frames at that level (after a change, the first
	// frames may all be in-flight ones from the level before).
	ratio, known := 1.0, a.raw > 0
	if known {
		ratio = float64(a.out) / float64(a.raw)
	}
	a.n, a.comp, a.snk, a.raw, a.out = 0, 0, 0, 0, 0
	trial := a.trial
	a.trial = false
	a.held++
	if a.wait > 0 {
		a.wait--
	}
	switch {
	case trial && ratio > a.base*(1-a.o.MinGain):
		// The step up made the output no smaller: it does not pay.
		a.step(-1, true)
	case c >= a.o.DownRatio*s && c > 0 && a.level > a.o.Min:
		// Compression is the bottleneck. Right after a step up, that
		// step was a lost trial.
		a.step(-1, a.wentUp && a.held <= 2)
	case s >= a.o.UpRatio*c && a.level < a.o.Max && a.wait == 0 && known:
		// (A step up needs this level's ratio to judge the next one by.)
		a.step(+1, false)
		a.trial, a.base = true, ratio
	case a.wait == 0 && a.held >= a.o.MaxBackoff:
		// A level held this long with no step up wanted: the data or
		// the sink may have changed, so the next lost trial starts the
		// backoff afresh.
		a.backoff = a.o.Backoff
	}
	return a.level
}

// step changes the level by d; lost says a step up just made did not pay
// and sets the wait before the next one, doubling it each time.
func (a *Auto) step(d int, lost bool) {
	if d > 0 {
		a.level++
		a.tried++
	} else {
		a.level--
	}
	a.changes++
	a.held = 0
	a.wentUp = d > 0
	if lost {
		a.lost++
		a.wait = a.backoff + 1 // counted down from the next window on
		a.backoff = min(2*a.backoff, a.o.MaxBackoff)
	}
}
