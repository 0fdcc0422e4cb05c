package monitor

import (
	"sync"
	"time"
)

// Clock tells the time. The monitor reads time only through a Clock, so
// rates and elapsed times are testable with a FakeClock. Implementations
// must be safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real wall clock (with Go's monotonic reading, so rates
// are immune to wall-clock steps).
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// FakeClock is a Clock that moves only when told to. The zero value starts
// at the zero time; it is safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var _ Clock = (*FakeClock)(nil)

// NewFakeClock returns a FakeClock reading t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's current reading.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative).
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set sets the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
