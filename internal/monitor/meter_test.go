package monitor

import (
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)

func TestMeterAverageAndPeak(t *testing.T) {
	c := NewFakeClock(t0)
	m := NewMeter(c)
	// Second 0: 100 bytes; second 1: 300 bytes in three Adds; second 2: 50;
	// second 3: nothing; stop at 4.0 s.
	m.Add(100)
	c.Advance(1200 * time.Millisecond)
	m.Add(100)
	c.Advance(300 * time.Millisecond)
	m.Add(100)
	m.Add(100)
	c.Advance(time.Second)
	m.Add(50)
	c.Advance(1500 * time.Millisecond)
	m.Stop()
	c.Advance(time.Hour) // a stopped meter's time does not move

	if got := m.Total(); got != 450 {
		t.Errorf("Total = %d, want 450", got)
	}
	if got := m.Elapsed(); got != 4*time.Second {
		t.Errorf("Elapsed = %v, want 4s", got)
	}
	if got := m.Average(); got != 112.5 {
		t.Errorf("Average = %v, want 112.5", got)
	}
	if got := m.Peak(); got != 300 {
		t.Errorf("Peak = %v, want 300 (second 1)", got)
	}
}

func TestMeterPeakIsAnyWindowNotJustRecent(t *testing.T) {
	c := NewFakeClock(t0)
	m := NewMeter(c)
	rates := []int64{10, 20, 5000, 30, 40, 50, 60, 70} // the burst is long gone at the end
	for _, r := range rates {
		m.Add(r)
		c.Advance(time.Second)
	}
	if got := m.Peak(); got != 5000 {
		t.Errorf("Peak = %v, want 5000", got)
	}
	// Idle seconds (no Add) do not disturb buckets.
	c.Advance(10 * time.Second)
	m.Add(1)
	if got := m.Peak(); got != 5000 {
		t.Errorf("Peak after idle = %v, want 5000", got)
	}
}

func TestMeterShortJobPeakIsAverage(t *testing.T) {
	c := NewFakeClock(t0)
	m := NewMeter(c)
	m.Add(1000)
	c.Advance(250 * time.Millisecond)
	m.Stop()
	if got, want := m.Average(), 4000.0; got != want {
		t.Errorf("Average = %v, want %v", got, want)
	}
	if got := m.Peak(); got != m.Average() {
		t.Errorf("Peak = %v, want the average %v for a job under a second", got, m.Average())
	}
}

func TestMeterPeakNeverBelowAverage(t *testing.T) {
	// 1.2 s job whose data came in the partial last second: the bucket holds
	// 100 but the average is 166.7 B/s.
	c := NewFakeClock(t0)
	m := NewMeter(c)
	c.Advance(1100 * time.Millisecond)
	m.Add(200)
	c.Advance(100 * time.Millisecond)
	m.Stop()
	if m.Peak() < m.Average() {
		t.Errorf("Peak %v < Average %v", m.Peak(), m.Average())
	}
}

func TestMeterZeroDuration(t *testing.T) {
	c := NewFakeClock(t0)
	m := NewMeter(c)
	m.Add(12345)
	m.Stop()
	for name, v := range map[string]float64{"Average": m.Average(), "Peak": m.Peak()} {
		if v != 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, want 0 for a zero-length job", name, v)
		}
	}
	var f Figures
	f.Measure(m, m, NewMeter(c))
	if _, err := json.Marshal(f); err != nil {
		t.Errorf("figures of a zero-length job do not encode: %v", err)
	}
	if f.CompressionRatio != "-" {
		t.Errorf("ratio without media bytes = %q, want -", f.CompressionRatio)
	}
}

func TestMeterClockBackwards(t *testing.T) {
	c := NewFakeClock(t0)
	m := NewMeter(c)
	c.Advance(-time.Minute)
	m.Add(5)
	if m.Elapsed() != 0 || m.Average() != 0 || m.Total() != 5 {
		t.Errorf("clock before start: Elapsed %v Average %v Total %d", m.Elapsed(), m.Average(), m.Total())
	}
}

func TestMeterConcurrentAdd(t *testing.T) {
	c := NewFakeClock(t0)
	m := NewMeter(c)
	const workers, adds = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range adds {
				m.Add(3)
				if w == 0 && i%200 == 0 {
					c.Advance(100 * time.Millisecond) // rollovers race with Adds
				}
				_ = m.Peak()
			}
		}()
	}
	wg.Wait()
	m.Stop()
	if got, want := m.Total(), int64(workers*adds*3); got != want {
		t.Fatalf("Total = %d, want %d", got, want)
	}
	if m.Peak() < m.Average() || m.Peak() > float64(m.Total()) {
		t.Errorf("Peak %v outside [Average %v, Total %d]", m.Peak(), m.Average(), m.Total())
	}
}

func TestPhaseFigures(t *testing.T) {
	c := NewFakeClock(t0)
	c.Advance(5 * time.Second) // the phase starts later than the clock's origin
	p := StartPhase(c, "backup")
	p.Files.Add(3)
	p.Source.Add(10 << 20)
	p.Media.Add(2 << 20)
	c.Advance(2 * time.Second)
	p.End()
	c.Advance(time.Minute)
	f := p.Figures()
	want := PhaseFigures{
		Name: "backup", Files: 3, SourceBytes: 10 << 20, MediaBytes: 2 << 20,
		AvgKBps: 5120, PeakKBps: 10240, ElapsedSeconds: 2, CompressionRatio: "5.00:1",
	}
	if f != want {
		t.Errorf("Figures =\n%+v\nwant\n%+v", f, want)
	}
}
