package bench

import "testing"

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tkura\nVmPeak:\t 1276240 kB\nVmHWM:\t  248332 kB\nVmRSS:\t  165476 kB\nThreads:\t911\nSigQ:\t0/95\n"
	rss, hwm, threads := parseProcStatus(status)
	if rss != 165476<<10 || hwm != 248332<<10 || threads != 911 {
		t.Errorf("parseProcStatus = %d, %d, %d", rss, hwm, threads)
	}
	if rss, hwm, threads := parseProcStatus("garbage\nVmRSS:\n"); rss != 0 || hwm != 0 || threads != 0 {
		t.Errorf("parseProcStatus of garbage = %d, %d, %d", rss, hwm, threads)
	}
}

func TestPercentile(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100 … 1, unsorted
	}
	for p, want := range map[float64]float64{50: 50, 99: 99, 100: 100, 1: 1} {
		if got := percentile(xs, p); got != want {
			t.Errorf("percentile(1…100, %g) = %g, want %g", p, got, want)
		}
	}
	if got := percentile([]float64{0.3}, 99); got != 0.3 {
		t.Errorf("percentile of one = %g", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of none = %g", got)
	}
	if xs[0] != 100 {
		t.Error("percentile sorted its argument")
	}
}
