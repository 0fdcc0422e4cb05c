package schedule

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	const layout = "2006-01-02 15:04:05 MST"
	for _, c := range []struct {
		name, expr, zone string
		last, now        string // "" last: never run; "-0500" suffixes pick a side of an overlap
		catchUp          time.Duration
		want             string // slot in the schedule's zone, "" = not due
	}{
		{"on time", "0 1 * * *", "UTC", "2025-06-01 01:00", "2025-06-02 01:00", time.Minute, "2025-06-02 01:00:00 UTC"},
		{"checked late", "0 1 * * *", "UTC", "2025-06-01 01:00", "2025-06-02 01:07", time.Minute, "2025-06-02 01:00:00 UTC"},
		{"before the slot", "0 1 * * *", "UTC", "2025-06-01 01:00", "2025-06-02 00:59", time.Minute, ""},
		{"slot already run", "0 1 * * *", "UTC", "2025-06-02 01:00", "2025-06-02 01:30", time.Minute, ""},
		{"run started after the slot", "0 1 * * *", "UTC", "2025-06-02 01:01", "2025-06-02 23:59", time.Minute, ""},
		{"manual run before the slot", "0 1 * * *", "UTC", "2025-06-02 00:30", "2025-06-02 01:00", time.Minute, "2025-06-02 01:00:00 UTC"},
		{"down 3 days: one run for the latest slot", "0 1 * * *", "UTC", "2025-06-01 01:00", "2025-06-04 13:00", time.Minute, "2025-06-04 01:00:00 UTC"},
		{"down a year, weekly", "0 3 * * SUN", "UTC", "2024-06-02 03:00", "2025-06-04 13:00", time.Minute, "2025-06-01 03:00:00 UTC"},
		{"clock went back", "0 1 * * *", "UTC", "2025-06-05 01:00", "2025-06-04 13:00", time.Minute, ""},
		{"never run, slot within catch-up", "0 1 * * *", "UTC", "", "2025-06-02 01:00", time.Minute, "2025-06-02 01:00:00 UTC"},
		{"never run, catch-up inclusive", "0 1 * * *", "UTC", "", "2025-06-02 01:01", time.Minute, "2025-06-02 01:00:00 UTC"},
		{"never run, slot too old", "0 1 * * *", "UTC", "", "2025-06-02 01:02", time.Minute, ""},
		{"never run, old slot", "0 1 * * *", "UTC", "", "2025-06-02 13:00", time.Minute, ""},
		{"never run, no catch-up, exact", "0 1 * * *", "UTC", "", "2025-06-02 01:00", 0, "2025-06-02 01:00:00 UTC"},
		{"never run, negative catch-up", "0 1 * * *", "UTC", "", "2025-06-02 01:00", -time.Hour, "2025-06-02 01:00:00 UTC"},
		{"Tokyo", "0 1 * * *", "Asia/Tokyo", "2025-06-01 01:00", "2025-06-02 00:59", time.Minute, ""},
		{"Tokyo due", "0 1 * * *", "Asia/Tokyo", "2025-06-01 01:00", "2025-06-02 01:00", time.Minute, "2025-06-02 01:00:00 JST"},
		// New York springs forward 2025-03-09 02:00 EST -> 03:00 EDT.
		{"spring gap slot runs at 03:00", "30 2 * * *", "America/New_York", "2025-03-08 02:30", "2025-03-09 03:00", time.Minute, "2025-03-09 03:00:00 EDT"},
		{"spring gap slot not before", "30 2 * * *", "America/New_York", "2025-03-08 02:30", "2025-03-09 01:59", time.Minute, ""},
		{"spring gap slot, never run", "30 2 * * *", "America/New_York", "", "2025-03-09 03:00", time.Minute, "2025-03-09 03:00:00 EDT"},
		// New York falls back 2025-11-02 02:00 EDT -> 01:00 EST.
		{"fall back first 01:30", "30 1 * * *", "America/New_York", "2025-11-01 01:30", "2025-11-02 01:30 -0400", time.Minute, "2025-11-02 01:30:00 EDT"},
		{"fall back second 01:30 is no slot", "30 1 * * *", "America/New_York", "2025-11-02 01:30 -0400", "2025-11-02 01:30 -0500", time.Minute, ""},
		{"fall back, never run, second 01:30", "30 1 * * *", "America/New_York", "", "2025-11-02 01:30 -0500", time.Minute, ""},
		{"fall back, slot with a later wall clock than now", "45 1 * * *", "America/New_York", "", "2025-11-02 01:10 -0500", 2 * time.Hour, "2025-11-02 01:45:00 EDT"},
		{"fall back, down through the overlap", "*/20 * * * *", "America/New_York", "2025-11-02 00:00", "2025-11-02 01:50 -0500", time.Minute, "2025-11-02 01:40:00 EDT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.expr, c.zone)
			var last time.Time
			if c.last != "" {
				last = at(t, s.Location(), c.last)
			}
			slot, due := s.Due(last, at(t, s.Location(), c.now), c.catchUp)
			got := ""
			if due {
				got = slot.Format(layout)
			} else if !slot.IsZero() {
				t.Errorf("not due, but slot %v", slot)
			}
			if got != c.want {
				t.Errorf("%s Due(%q, %q, %v) = %q, want %q", s, c.last, c.now, c.catchUp, got, c.want)
			}
		})
	}
}

// TestDueMatchesNext checks Due against a walk with Next: the slot is the
// last activation after last that is not after now.
func TestDueMatchesNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ expr, zone string }{
		{"*/20 0-3 * * *", "America/New_York"},
		{"30 2 * * 0,3", "Europe/Berlin"},
		{"0 0 * * *", "America/Santiago"},
		{"15 2 * * *", "Australia/Lord_Howe"},
		{"0 1 1 * FRI", "Asia/Tokyo"},
	} {
		s := mustParse(t, c.expr, c.zone)
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		for range 300 {
			last := base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
			now := last.Add(time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))
			var want time.Time
			for a := s.Next(last); !a.After(now); a = s.Next(a) {
				want = a
			}
			slot, due := s.Due(last, now, 0)
			if due != !want.IsZero() || !slot.Equal(want) {
				t.Fatalf("%s Due(%v, %v) = %v, %v; walking Next gives %v", s, last, now, slot, due, want)
			}
		}
	}
}

func TestDueLevel(t *testing.T) {
	utc := func(s string) time.Time { return at(t, time.UTC, s) }
	full := Entry{"full", mustParse(t, "0 1 * * SUN", "UTC")}
	diff := Entry{"diff", mustParse(t, "0 1 * * WED", "UTC")}
	incr := Entry{"incr", mustParse(t, "0 1 * * *", "UTC")}
	other := Entry{"copy", mustParse(t, "0 1 * * *", "UTC")}
	// 2025-06-01 is a Sunday, 2025-06-04 a Wednesday.
	for _, c := range []struct {
		name      string
		entries   []Entry
		last, now string
		level     string
		slot      string
	}{
		{"Sunday: full beats incr", []Entry{incr, full}, "2025-05-31 01:00", "2025-06-01 01:00", "full", "2025-06-01 01:00"},
		{"Monday: incr", []Entry{full, diff, incr}, "2025-06-01 01:00", "2025-06-02 01:00", "incr", "2025-06-02 01:00"},
		{"Wednesday: diff beats incr", []Entry{incr, diff, full}, "2025-06-03 01:00", "2025-06-04 01:00", "diff", "2025-06-04 01:00"},
		{"missed full runs in place of the incr, latest slot", []Entry{full, incr}, "2025-05-31 01:00", "2025-06-02 09:00", "full", "2025-06-02 01:00"},
		{"unknown level loses", []Entry{other, incr}, "2025-06-01 01:00", "2025-06-02 01:00", "incr", "2025-06-02 01:00"},
		{"unknown level alone", []Entry{other}, "2025-06-01 01:00", "2025-06-02 01:00", "copy", "2025-06-02 01:00"},
		{"equal levels: first", []Entry{{"incr", incr.Sched}, {"incr", mustParse(t, "0 1 * * *", "Asia/Tokyo")}}, "2025-06-01 01:00", "2025-06-02 01:00", "incr", "2025-06-02 01:00"},
		{"nil schedule skipped", []Entry{{"full", nil}, incr}, "2025-06-01 01:00", "2025-06-02 01:00", "incr", "2025-06-02 01:00"},
		{"nothing due", []Entry{full, diff, incr}, "2025-06-02 01:00", "2025-06-02 12:00", "", ""},
		{"no entries", nil, "2025-06-02 01:00", "2025-06-02 12:00", "", ""},
	} {
		level, slot, due := DueLevel(c.entries, utc(c.last), utc(c.now), time.Minute)
		got := ""
		if due {
			got = slot.UTC().Format("2006-01-02 15:04")
		}
		if level != c.level || got != c.slot || due != (c.slot != "") {
			t.Errorf("%s: DueLevel = %q, %q, %v; want %q, %q", c.name, level, got, due, c.level, c.slot)
		}
	}
}

// simulate plays the server: it checks a policy at every tick from
// start to end and records when it started which level for which slot,
// passing the last run's start time as last.
func simulate(entries []Entry, start, end time.Time, tick, catchUp time.Duration) []string {
	var last time.Time
	var runs []string
	for now := start; now.Before(end); now = now.Add(tick) {
		if level, slot, due := DueLevel(entries, last, now, catchUp); due {
			runs = append(runs, fmt.Sprintf("%s %s slot %s", now.Format("Mon 2006-01-02 15:04 MST"), level, slot.Format("15:04 MST")))
			last = now
		}
	}
	return runs
}

// TestSimulate30Days runs the server's loop minute by minute for 30 days,
// across the start of summer time in Berlin: "0 1 * * *" runs exactly once
// a day, at 01:00.
func TestSimulate30Days(t *testing.T) {
	for _, zone := range []string{"UTC", "Europe/Berlin"} {
		s := mustParse(t, "0 1 * * *", zone)
		start := at(t, s.Location(), "2026-03-15 00:00") // summer time from 2026-03-29
		runs := simulate([]Entry{{"incr", s}}, start, start.AddDate(0, 0, 30), time.Minute, time.Minute)
		checkDaily(t, s, runs, 30, "01:00")
	}
}

// TestSimulateDST runs the server's loop minute by minute over the days
// around New York's clock changes: a job in the spring-forward gap runs once,
// at 03:00; a job in the fall-back overlap runs once.
func TestSimulateDST(t *testing.T) {
	for _, c := range []struct {
		expr, start string
		runAt       []string
	}{
		{"30 2 * * *", "2025-03-08 00:00", []string{"02:30", "03:00", "02:30"}},
		{"30 1 * * *", "2025-11-01 00:00", []string{"01:30", "01:30", "01:30"}},
		{"0 * * * *", "2025-11-02 00:00", nil},
	} {
		s := mustParse(t, c.expr, "America/New_York")
		start := at(t, s.Location(), c.start)
		runs := simulate([]Entry{{"incr", s}}, start, start.AddDate(0, 0, len(c.runAt)), time.Minute, time.Minute)
		checkDaily(t, s, runs, len(c.runAt), c.runAt...)
	}
	// Hourly on the long day: 25 hours, 24 wall-clock hours, 24 runs.
	s := mustParse(t, "0 * * * *", "America/New_York")
	start := at(t, s.Location(), "2025-11-02 00:00")
	if runs := simulate([]Entry{{"incr", s}}, start, start.AddDate(0, 0, 1), time.Minute, time.Minute); len(runs) != 24 {
		t.Errorf("%s on 2025-11-02: %d runs, want 24:\n%s", s, len(runs), strings.Join(runs, "\n"))
	}
}

// checkDaily checks that runs holds exactly one run on each of n days, at
// runAt[i] on day i (or all at runAt[0]).
func checkDaily(t *testing.T, s *Schedule, runs []string, n int, runAt ...string) {
	t.Helper()
	if len(runAt) == 0 {
		return
	}
	days := map[string]int{}
	for i, r := range runs {
		f := strings.Fields(r) // Mon 2006-01-02 15:04 MST level slot ...
		days[f[1]]++
		want := runAt[0]
		if len(runAt) == n && i < n {
			want = runAt[i]
		}
		if f[2] != want {
			t.Errorf("%s: run %d at %s, want at %s", s, i, r, want)
		}
	}
	if len(runs) != n || len(days) != n {
		t.Errorf("%s: %d runs on %d days, want %d on %d:\n%s", s, len(runs), len(days), n, n, strings.Join(runs, "\n"))
	}
}

// TestSimulateGolden draws three weeks of a policy with a Sunday full, a
// Wednesday diff and a nightly incr, with the server down from Saturday
// evening to Monday noon in the second week.
func TestSimulateGolden(t *testing.T) {
	loc := mustZone(t, "Europe/Berlin")
	entries := []Entry{
		{"incr", mustParse(t, "0 1 * * *", "Europe/Berlin")},
		{"diff", mustParse(t, "0 1 * * WED", "Europe/Berlin")},
		{"full", mustParse(t, "0 1 * * SUN", "Europe/Berlin")},
	}
	start := at(t, loc, "2026-03-16 00:00") // a Monday; DST starts 2026-03-29
	down, up := at(t, loc, "2026-03-28 20:00"), at(t, loc, "2026-03-30 12:00")
	var b strings.Builder
	const tick = 5 * time.Minute // the server's check interval
	for _, r := range simulate(entries, start, down, tick, tick) {
		fmt.Fprintln(&b, r)
	}
	fmt.Fprintf(&b, "-- down %s to %s\n", down.Format("Mon 15:04"), up.Format("Mon 15:04"))
	// The server comes back knowing the last run: Saturday's incr.
	last := at(t, loc, "2026-03-28 01:00")
	for now := up; now.Before(start.AddDate(0, 0, 21)); now = now.Add(tick) {
		if level, slot, due := DueLevel(entries, last, now, tick); due {
			fmt.Fprintf(&b, "%s %s slot %s\n", now.Format("Mon 2006-01-02 15:04 MST"), level, slot.Format("Mon 15:04 MST"))
			last = now
		}
	}
	golden(t, "simulate.golden", b.String())
}
