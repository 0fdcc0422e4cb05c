package schedule

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// at parses "2006-01-02 15:04" in loc, or "2006-01-02 15:04 -0700" at an
// explicit offset (to name either side of a fall-back overlap).
func at(t testing.TB, loc *time.Location, s string) time.Time {
	t.Helper()
	layout := "2006-01-02 15:04"
	if strings.Count(s, " ") == 2 {
		layout += " -0700"
	}
	v, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v.In(loc)
}

func TestNext(t *testing.T) {
	for _, c := range []struct {
		name, expr, zone, after string
		want                    []string // in the schedule's zone
	}{
		{"month end", "0 3 * * *", "UTC", "2025-01-31 03:00",
			[]string{"2025-02-01 Sat 03:00 UTC"}},
		{"year end", "59 23 31 12 *", "UTC", "2025-12-31 23:59",
			[]string{"2026-12-31 Thu 23:59 UTC"}},
		{"31st skips short months", "0 0 31 * *", "UTC", "2025-01-31 00:00",
			[]string{"2025-03-31 Mon 00:00 UTC", "2025-05-31 Sat 00:00 UTC", "2025-07-31 Thu 00:00 UTC", "2025-08-31 Sun 00:00 UTC"}},
		{"leap day", "30 4 29 2 *", "UTC", "2024-02-29 04:30",
			[]string{"2028-02-29 Tue 04:30 UTC"}},
		{"leap day across 2100", "0 0 29 2 *", "UTC", "2096-03-01 00:00",
			[]string{"2104-02-29 Fri 00:00 UTC"}},
		{"last of February in a leap year", "0 0 28,29 2 *", "UTC", "2024-02-27 12:00",
			[]string{"2024-02-28 Wed 00:00 UTC", "2024-02-29 Thu 00:00 UTC", "2025-02-28 Fri 00:00 UTC"}},
		{"DOM or DOW when both restricted", "0 1 13 * FRI", "UTC", "2025-06-01 00:00",
			[]string{"2025-06-06 Fri 01:00 UTC", "2025-06-13 Fri 01:00 UTC", "2025-06-20 Fri 01:00 UTC", "2025-06-27 Fri 01:00 UTC", "2025-07-04 Fri 01:00 UTC", "2025-07-11 Fri 01:00 UTC", "2025-07-13 Sun 01:00 UTC"}},
		{"DOM only when DOW is *", "0 1 13 * *", "UTC", "2025-06-01 00:00",
			[]string{"2025-06-13 Fri 01:00 UTC", "2025-07-13 Sun 01:00 UTC"}},
		{"DOW only when DOM is *", "0 1 * * FRI", "UTC", "2025-06-01 00:00",
			[]string{"2025-06-06 Fri 01:00 UTC", "2025-06-13 Fri 01:00 UTC"}},
		{"stepped DOM restricts", "0 1 */10 * MON", "UTC", "2025-06-01 00:00",
			[]string{"2025-06-01 Sun 01:00 UTC", "2025-06-02 Mon 01:00 UTC", "2025-06-09 Mon 01:00 UTC", "2025-06-11 Wed 01:00 UTC", "2025-06-16 Mon 01:00 UTC"}},
		{"steps", "*/25 */9 * * *", "UTC", "2025-06-01 00:00",
			[]string{"2025-06-01 Sun 00:25 UTC", "2025-06-01 Sun 00:50 UTC", "2025-06-01 Sun 09:00 UTC", "2025-06-01 Sun 09:25 UTC", "2025-06-01 Sun 09:50 UTC", "2025-06-01 Sun 18:00 UTC"}},
		{"strictly after, seconds ignored", "0 1 * * *", "UTC", "2025-06-01 01:00",
			[]string{"2025-06-02 Mon 01:00 UTC"}},
		{"Tokyo", "0 1 * * *", "Asia/Tokyo", "2025-06-01 00:00",
			[]string{"2025-06-01 Sun 01:00 JST", "2025-06-02 Mon 01:00 JST"}},
		{"Tokyo weekday is Tokyo's", "0 8 * * MON", "Asia/Tokyo", "2025-06-01 00:00",
			[]string{"2025-06-02 Mon 08:00 JST"}},
		// America/New_York springs forward 2025-03-09 02:00 EST -> 03:00 EDT.
		{"spring forward: gap time runs at 03:00", "30 2 * * *", "America/New_York", "2025-03-08 00:00",
			[]string{"2025-03-08 Sat 02:30 EST", "2025-03-09 Sun 03:00 EDT", "2025-03-10 Mon 02:30 EDT"}},
		{"spring forward: gap minutes collapse with 03:00", "*/20 2-3 * * *", "America/New_York", "2025-03-09 01:00",
			[]string{"2025-03-09 Sun 03:00 EDT", "2025-03-09 Sun 03:20 EDT", "2025-03-09 Sun 03:40 EDT", "2025-03-10 Mon 02:00 EDT"}},
		{"spring forward: hourly", "0 * * * *", "America/New_York", "2025-03-09 00:30",
			[]string{"2025-03-09 Sun 01:00 EST", "2025-03-09 Sun 03:00 EDT", "2025-03-09 Sun 04:00 EDT"}},
		// America/New_York falls back 2025-11-02 02:00 EDT -> 01:00 EST.
		{"fall back: 01:30 once", "30 1 * * *", "America/New_York", "2025-11-01 12:00",
			[]string{"2025-11-02 Sun 01:30 EDT", "2025-11-03 Mon 01:30 EST"}},
		{"fall back: from inside the second 01:00 hour", "30 1 * * *", "America/New_York", "2025-11-02 01:10 -0500",
			[]string{"2025-11-03 Mon 01:30 EST"}},
		{"fall back: hourly skips the repeated hour", "0 * * * *", "America/New_York", "2025-11-02 00:30",
			[]string{"2025-11-02 Sun 01:00 EDT", "2025-11-02 Sun 02:00 EST", "2025-11-02 Sun 03:00 EST"}},
		// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST, 2026-10-25 03:00 CEST -> 02:00 CET.
		{"Berlin spring", "30 2 * * *", "Europe/Berlin", "2026-03-28 12:00",
			[]string{"2026-03-29 Sun 03:00 CEST", "2026-03-30 Mon 02:30 CEST"}},
		{"Berlin fall", "30 2 * * *", "Europe/Berlin", "2026-10-24 12:00",
			[]string{"2026-10-25 Sun 02:30 CEST", "2026-10-26 Mon 02:30 CET"}},
		// Past the zone's explicit transitions the TZ rule takes over
		// (and Time.ZoneBounds errs in leap years: golang/go#81583).
		{"Berlin 2040 spring", "30 2 * * *", "Europe/Berlin", "2040-03-24 12:00",
			[]string{"2040-03-25 Sun 03:00 CEST", "2040-03-26 Mon 02:30 CEST"}},
		{"Berlin 2040 year end", "0 1 * * *", "Europe/Berlin", "2040-12-30 12:00",
			[]string{"2040-12-31 Mon 01:00 CET", "2041-01-01 Tue 01:00 CET"}},
		{"New York 2100 fall", "30 1 * * *", "America/New_York", "2100-11-06 12:00",
			[]string{"2100-11-07 Sun 01:30 EDT", "2100-11-08 Mon 01:30 EST"}},
		// Australia/Lord_Howe moves by half an hour: 2025-10-05 02:00 -> 02:30.
		{"half-hour shift", "15 2 * * *", "Australia/Lord_Howe", "2025-10-04 12:00",
			[]string{"2025-10-05 Sun 02:30 +11", "2025-10-06 Mon 02:15 +11"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.expr, c.zone)
			got := next(s, at(t, s.Location(), c.after), len(c.want))
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("%s after %s:\n got %q\nwant %q", s, c.after, got, c.want)
			}
		})
	}
}

// TestZonesDiffer checks that one expression means different instants in
// different zones.
func TestZonesDiffer(t *testing.T) {
	after := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	utc := mustParse(t, "0 1 * * *", "UTC").Next(after)
	tokyo := mustParse(t, "0 1 * * *", "Asia/Tokyo").Next(after)
	if want := time.Date(2025, 6, 1, 1, 0, 0, 0, time.UTC); !utc.Equal(want) {
		t.Errorf("UTC: %v, want %v", utc, want)
	}
	if want := time.Date(2025, 6, 1, 16, 0, 0, 0, time.UTC); !tokyo.Equal(want) { // 01:00 JST on the 2nd
		t.Errorf("Tokyo: %v, want %v", tokyo.UTC(), want)
	}
}

// TestNextInvariants walks several schedules and zones through 2025 (the
// minutely one through the autumn change), checking that activations
// strictly increase, fall on matching wall clocks (or the end of a gap), and
// that no wall-clock minute fires twice.
func TestNextInvariants(t *testing.T) {
	for _, c := range []struct {
		expr, zone string
		from       time.Month
		months     int
	}{
		{"*/11 * * * *", "America/New_York", time.October, 2},
		{"30 1,2 * * *", "Europe/Berlin", time.January, 12},
		{"0 0 1,15 * MON", "Australia/Lord_Howe", time.January, 12},
		{"0 2 * * *", "America/Santiago", time.January, 12},
	} {
		s := mustParse(t, c.expr, c.zone)
		seen := map[wall]bool{}
		prev := time.Date(2025, c.from, 1, 0, 0, 0, 0, s.Location())
		end := prev.AddDate(0, c.months, 0)
		for prev.Before(end) {
			a := s.Next(prev)
			if !a.After(prev) {
				t.Fatalf("%s: Next(%v) = %v, not after", s, prev, a)
			}
			w := s.wallOf(a)
			if seen[w] {
				t.Fatalf("%s: wall clock %v fired twice (at %v)", s, w, a)
			}
			seen[w] = true
			if a.Second() != 0 {
				t.Fatalf("%s: activation %v not on a minute", s, a)
			}
			if _, off := a.Add(-time.Second).Zone(); off == offsetOf(a) { // not the end of a gap: the wall clock matches
				if !s.dayMatches(a.Day(), a.Weekday()) || s.month&(1<<a.Month()) == 0 || s.hour&(1<<w.h) == 0 || s.minute&(1<<w.min) == 0 {
					t.Fatalf("%s: activation %v does not match", s, a)
				}
			}
			prev = a
		}
	}
}

func offsetOf(t time.Time) int { _, off := t.Zone(); return off }

// TestNextGolden draws the activations of a few schedules around the
// daylight-saving changes of 2025, in wall-clock and UTC time.
func TestNextGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range []struct {
		expr, zone, after string
		n                 int
	}{
		{"30 2 * * *", "America/New_York", "2025-03-07 12:00", 4},
		{"30 1 * * *", "America/New_York", "2025-10-31 12:00", 4},
		{"*/30 1-3 * * *", "America/New_York", "2025-03-09 00:00", 6},
		{"*/30 0-2 * * *", "America/New_York", "2025-11-02 00:00", 6},
		{"0 2 * * SUN", "Europe/Berlin", "2025-03-20 00:00", 3},
		{"0 2 * * SUN", "Europe/Berlin", "2025-10-20 00:00", 3},
		{"0 0 * * *", "America/Santiago", "2025-09-05 00:00", 3}, // springs forward at midnight
		{"0 1 * * *", "Asia/Tokyo", "2025-03-08 00:00", 3},
	} {
		s := mustParse(t, c.expr, c.zone)
		fmt.Fprintf(&b, "%s after %s\n", s, c.after)
		a := at(t, s.Location(), c.after)
		for range c.n {
			a = s.Next(a)
			fmt.Fprintf(&b, "\t%s  =  %s\n", a.Format("Mon 2006-01-02 15:04 MST"), a.UTC().Format("2006-01-02 15:04Z"))
		}
	}
	golden(t, "next.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (rerun with -update and review the diff):\n%s", path, got)
	}
}

// TestCivil checks the day arithmetic against the time package.
func TestCivil(t *testing.T) {
	for _, start := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1899, 12, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2096, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2399, 12, 1, 0, 0, 0, 0, time.UTC),
	} {
		for d := start; d.Before(start.AddDate(5, 0, 0)); d = d.AddDate(0, 0, 1) {
			n := floorDiv(d.Unix(), 86400)
			y, m, dd := civil(n)
			if y != d.Year() || m != d.Month() || dd != d.Day() || weekday(n) != d.Weekday() {
				t.Fatalf("day %d: civil %d-%d-%d %v, want %v %v", n, y, m, dd, weekday(n), d, d.Weekday())
			}
			if got := days(y, m, dd); got != n {
				t.Fatalf("days(%v) = %d, want %d", d, got, n)
			}
		}
	}
	if got, want := days(2025, 13, 1), days(2026, 1, 1); got != want {
		t.Errorf("days(2025, 13, 1) = %d, want %d", got, want)
	}
}
