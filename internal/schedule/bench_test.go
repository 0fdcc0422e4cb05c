package schedule

import (
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	s := mustParse(b, "0 1 * * *", "Europe/Berlin")
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, s.Location())
	t := start
	for b.Loop() {
		if t = s.Next(t); t.Year() > 2026 {
			t = start
		}
	}
}

func BenchmarkDue(b *testing.B) {
	s := mustParse(b, "0 1 * * *", "Europe/Berlin")
	last := time.Date(2026, 3, 1, 1, 0, 0, 0, s.Location())
	now := last.Add(23 * time.Hour)
	for b.Loop() {
		s.Due(last, now, time.Minute)
	}
}
