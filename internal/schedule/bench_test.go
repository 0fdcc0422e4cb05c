package schedule

import (
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	s := mustParse(b, "0 1 * * *", "Europe/Berlin")
	t := time.Date(2026, 3, 1, 0, 0, 0, 0, s.Location())
	for b.Loop() {
		t = s.Next(t)
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
