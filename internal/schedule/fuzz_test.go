package schedule

import (
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, that what it accepts prints as
// an expression it accepts again, and that Next and Due of it behave.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"0 1 * * *", "*/15 2-3 * * MON-FRI", "0 0 29 2 *", "0 0 30 2 1", "5/10 0,12 1-31/2 JAN-DEC/3 FRI-SUN",
		"@daily", "@weekly", "61 2 * * *", "1-2-3 * * * *", "*/0 * * * *", "", "@every 5m",
	} {
		f.Add(seed, int64(1_750_000_000))
	}
	f.Fuzz(func(t *testing.T, expr string, at int64) {
		at %= 1 << 33 // 1698 to 2242
		s, err := Parse(expr, "America/New_York")
		if err != nil {
			return
		}
		if _, err := Parse(s.expr, "America/New_York"); err != nil {
			t.Fatalf("%q parses, but its normal form %q does not: %v", expr, s.expr, err)
		}
		now := time.Unix(at, 0)
		next := s.Next(now)
		if !next.After(now) {
			t.Fatalf("%s: Next(%v) = %v", s, now, next)
		}
		if slot, due := s.Due(now, next, 0); !due || !slot.Equal(next) {
			t.Fatalf("%s: Due(%v, %v) = %v, %v; want the slot %v", s, now, next, slot, due, next)
		}
	})
}
