package monitor

import (
	"sync"
	"sync/atomic"
	"time"
)

// A Meter counts a quantity (bytes or files) over time and reports its total,
// average rate and peak rate.
//
// Time is cut into 1-second buckets counted from the meter's start; the peak
// is the highest count of any bucket, per second. Invariants:
//   - Total is exact: every Add is counted, whatever the concurrency.
//   - Peak() >= Average(): a bucket is a whole 1-second window, and a job
//     shorter than a second (or one whose busiest second is its last, partial
//     one) reports its average as its peak.
//   - A zero elapsed time gives rates of 0, never NaN or Inf.
//
// Add is safe from many goroutines: the common path is two atomic adds and
// one clock read; a mutex is taken only once per second, to open a bucket.
// Other methods are safe to call concurrently with Add.
type Meter struct {
	clock Clock
	start time.Time

	total  atomic.Int64
	cur    atomic.Pointer[bucket] // the newest bucket
	frozen atomic.Bool            // set by Stop

	mu sync.Mutex // guards everything below and bucket rollover
	// prev is the bucket before cur. It is folded into peak only when the
	// next bucket opens, so that an Add that read the clock just before a
	// rollover still lands in its own second.
	prev    *bucket
	peak    int64 // highest count among buckets older than prev
	stopped bool
	stopAt  time.Time
}

type bucket struct {
	sec   int64 // whole seconds since the meter's start
	count atomic.Int64
}

// NewMeter returns a meter started at clock.Now().
func NewMeter(clock Clock) *Meter {
	m := &Meter{clock: clock, start: clock.Now()}
	m.cur.Store(&bucket{})
	return m
}

// Add counts n more units. n <= 0 and Adds after Stop are ignored: the
// figures of a stopped meter are final.
func (m *Meter) Add(n int64) {
	if n <= 0 || m.frozen.Load() {
		return
	}
	m.total.Add(n)
	sec := int64(m.clock.Now().Sub(m.start) / time.Second)
	b := m.cur.Load()
	if sec > b.sec {
		b = m.rollover(sec)
	}
	// sec < b.sec: this goroutine read the clock before another one opened
	// a newer bucket; it counts in the newest second, which is off by at
	// most one second for this one Add.
	b.count.Add(n)
}

// rollover opens the bucket for second sec (unless another goroutine
// already did) and returns the newest bucket.
func (m *Meter) rollover(sec int64) *bucket {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.cur.Load()
	if m.stopped || sec <= b.sec {
		return b
	}
	if m.prev != nil {
		m.peak = max(m.peak, m.prev.count.Load())
	}
	m.prev = b
	nb := &bucket{sec: sec}
	m.cur.Store(nb)
	return nb
}

// Total returns the count so far.
func (m *Meter) Total() int64 { return m.total.Load() }

// Start returns the time the meter started.
func (m *Meter) Start() time.Time { return m.start }

// Elapsed returns the time since the start, or between start and Stop once
// stopped. It is never negative.
func (m *Meter) Elapsed() time.Duration {
	m.mu.Lock()
	stopped, at := m.stopped, m.stopAt
	m.mu.Unlock()
	if !stopped {
		at = m.clock.Now()
	}
	return max(at.Sub(m.start), 0)
}

// Average returns Total per second of Elapsed, or 0 when no time elapsed.
func (m *Meter) Average() float64 {
	return rate(m.Total(), m.Elapsed())
}

// Peak returns the highest count in any whole 1-second window (bucketed by
// second since start), per second. A meter that ran less than a second
// reports its average; Peak is never below Average.
func (m *Meter) Peak() float64 {
	el := m.Elapsed()
	avg := rate(m.Total(), el)
	if el < time.Second {
		return avg
	}
	m.mu.Lock()
	p := m.peak
	if m.prev != nil {
		p = max(p, m.prev.count.Load())
	}
	p = max(p, m.cur.Load().count.Load())
	m.mu.Unlock()
	return max(float64(p), avg)
}

// Stop freezes the meter at the current time: Elapsed stops growing and
// later Adds are ignored. Further calls do nothing.
func (m *Meter) Stop() {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.stopped, m.stopAt = true, now
		m.frozen.Store(true)
	}
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
