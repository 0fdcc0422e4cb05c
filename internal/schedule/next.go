package schedule

import "time"

// scanDays bounds a search for a matching day. Parse rejects schedules that
// never fire, and the rarest that do, February 29, can be 8 years apart
// (2096 to 2104).
const scanDays = 9*366 + 1

// wall is a wall-clock minute in a schedule's zone, which may name a time
// that happens twice or not at all there.
type wall struct {
	y         int
	m         time.Month
	d, h, min int
}

func wallOf(t time.Time) wall {
	y, m, d := t.Date()
	return wall{y, m, d, t.Hour(), t.Minute()}
}

// naive returns the wall time as if it were UTC, in Unix seconds.
func (w wall) naive() int64 { return time.Date(w.y, w.m, w.d, w.h, w.min, 0, 0, time.UTC).Unix() }

func (w wall) add(d time.Duration) wall { return wallOf(time.Unix(w.naive(), 0).UTC().Add(d)) }

func (w wall) day() time.Time { return time.Date(w.y, w.m, w.d, 0, 0, 0, 0, time.UTC) }

// Next returns the first activation strictly after after, in the schedule's
// zone. Activations follow the daylight-saving rules in the package doc: a
// wall-clock time that happens twice fires at its first occurrence, one that
// falls in a gap fires when the gap ends. Next returns the zero time only for
// times so far in the future that no activation follows within 9 years.
func (s *Schedule) Next(after time.Time) time.Time {
	from := wallOf(after.In(s.loc)).add(time.Minute)
	var next time.Time
	s.scan(from, from.day().AddDate(0, 0, scanDays), func(w wall) bool {
		// Activations never decrease as the wall clock advances, but in an
		// overlap the first few may still lie at or before after.
		if t := s.resolve(w); t.After(after) {
			next = t
			return true
		}
		return false
	})
	return next
}

// prev returns the latest activation in [floor, t], if there is one.
func (s *Schedule) prev(t, floor time.Time) (time.Time, bool) {
	// When clocks fell back within the last day, minutes that already
	// fired can show a later wall clock than t: start from the latest wall
	// clock any instant of that day showed.
	from := wallOf(t.In(s.loc))
	for u := t.In(s.loc); ; {
		start, _ := u.ZoneBounds()
		if start.IsZero() || t.Sub(start) > 24*time.Hour {
			break
		}
		u = start.Add(-time.Second).In(s.loc)
		if w := wallOf(u); w.naive() > from.naive() {
			from = w
		}
	}
	// A minute in a spring-forward gap fires after its wall clock: scan a
	// day past floor's wall clock.
	until := from.day().AddDate(0, 0, -scanDays)
	if f := wallOf(floor.In(s.loc)).day().AddDate(0, 0, -1); f.After(until) {
		until = f
	}
	var prev time.Time
	found := false
	s.scan(from, until, func(w wall) bool {
		a := s.resolve(w)
		if a.After(t) {
			return false
		}
		prev, found = a, !a.Before(floor)
		return true
	})
	return prev, found
}

// scan calls f with each matching wall-clock minute from from to the day
// until (inclusive), ascending if until is after from and descending
// otherwise, until f returns true.
func (s *Schedule) scan(from wall, until time.Time, f func(wall) bool) {
	back := until.Before(from.day())
	first := from.day()
	for day := first; ; {
		if back && day.Before(until) || !back && day.After(until) {
			return
		}
		y, m, d := day.Date()
		if s.month&(1<<m) == 0 { // skip the month
			if back {
				day = time.Date(y, m, 0, 0, 0, 0, 0, time.UTC)
			} else {
				day = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
			}
			continue
		}
		if s.dayMatches(d, day.Weekday()) {
			isFirst := day.Equal(first)
			for i := range s.hours {
				h := s.hours[pick(back, i, len(s.hours))]
				if isFirst && (back && h > from.h || !back && h < from.h) {
					continue
				}
				for j := range s.minutes {
					mi := s.minutes[pick(back, j, len(s.minutes))]
					if isFirst && h == from.h && (back && mi > from.min || !back && mi < from.min) {
						continue
					}
					if f(wall{y, m, d, h, mi}) {
						return
					}
				}
			}
		}
		if back {
			day = day.AddDate(0, 0, -1)
		} else {
			day = day.AddDate(0, 0, 1)
		}
	}
}

// pick returns the i-th index of n, counting from the end if back.
func pick(back bool, i, n int) int {
	if back {
		return n - 1 - i
	}
	return i
}

// dayMatches applies the cron day rule: when day-of-month and day-of-week
// are both restricted, either may match; otherwise the restricted one must.
func (s *Schedule) dayMatches(d int, wd time.Weekday) bool {
	domOK, dowOK := s.dom&(1<<d) != 0, s.dow&(1<<wd) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// resolve returns the instant wall-clock minute w fires in the schedule's
// zone: its first occurrence, or, if a forward jump skips it, the instant
// the jump lands on. It walks the zone's offset periods from a day before w
// to a day after, since no offset exceeds a day.
func (s *Schedule) resolve(w wall) time.Time {
	naive := w.naive()
	for t := time.Unix(naive-86400, 0).In(s.loc); ; {
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		u := naive - int64(off) // w read with this period's offset
		switch {
		case !start.IsZero() && u < start.Unix():
			// w comes before this period's wall clocks and, as no earlier
			// period held it, after the previous one's: a gap.
			return start.In(s.loc)
		case end.IsZero() || u < end.Unix():
			return time.Unix(u, 0).In(s.loc)
		case end.Unix() > naive+86400:
			// Not reached for real zones; let the time package decide.
			return time.Date(w.y, w.m, w.d, w.h, w.min, 0, 0, s.loc)
		}
		t = end.In(s.loc)
	}
}
