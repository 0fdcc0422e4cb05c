package schedule

import "time"

// scanDays bounds a search for a matching day. Parse rejects schedules that
// never fire, and the rarest that do, February 29, can be 8 years apart
// (2096 to 2104).
const scanDays = 9*366 + 1

// wall is a wall-clock minute in a schedule's zone, which may name a time
// that happens twice or not at all there. Days count from 1970-01-01 in
// the proleptic Gregorian calendar, so stepping through them is integer
// arithmetic.
type wall struct {
	day    int64
	h, min int
}

// wallAt returns the wall-clock minute of naive, a wall-clock time in
// seconds since 1970-01-01 00:00.
func wallAt(naive int64) wall {
	day := floorDiv(naive, 86400)
	sec := int(naive - day*86400)
	return wall{day, sec / 3600, sec % 3600 / 60}
}

// wallOf returns the wall-clock minute instant t shows in the schedule's zone.
func (s *Schedule) wallOf(t time.Time) wall {
	return wallAt(t.Unix() + s.offset(t.Unix()))
}

// naive returns the wall-clock time in seconds since 1970-01-01 00:00.
func (w wall) naive() int64 { return w.day*86400 + int64(w.h*3600+w.min*60) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// civil returns the date of day, counted from 1970-01-01 (Howard Hinnant's
// civil_from_days).
func civil(day int64) (y int, m time.Month, d int) {
	z := day + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = time.Month(mp + 3)
	if mp >= 10 {
		m = time.Month(mp - 9)
	}
	y = int(yoe + era*400)
	if m <= 2 {
		y++
	}
	return y, m, d
}

// days returns the day number of a date, counted from 1970-01-01; m may
// run one past December (days_from_civil).
func days(y int, m time.Month, d int) int64 {
	if m > 12 {
		y, m = y+1, m-12
	}
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := int64(m) + 9
	if m > 2 {
		mp = int64(m) - 3
	}
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// weekday returns the day of the week of day (1970-01-01 was a Thursday).
func weekday(day int64) time.Weekday { return time.Weekday((day%7 + 11) % 7) }

// Next returns the first activation strictly after after, in the schedule's
// zone. Activations follow the daylight-saving rules in the package doc: a
// wall-clock time that happens twice fires at its first occurrence, one that
// falls in a gap fires when the gap ends. Next would return the zero time
// if nothing fired within 9 years, which Parse rules out.
func (s *Schedule) Next(after time.Time) time.Time {
	from := wallAt(s.wallOf(after).naive() + 60)
	var next time.Time
	s.scan(from, from.day+scanDays, func(w wall) bool {
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
	// fired can show a later wall clock than t, by up to the jump back.
	tu, off := t.Unix(), s.offset(t.Unix())
	from := wallAt(tu + off)
	if back := s.offset(tu-86400) - off; back > 0 {
		from = wallAt(from.naive() + back)
	}
	// A minute in a spring-forward gap fires after its wall clock, and
	// floor's wall clock is within a day of floor: scan two days past it.
	until := max(from.day-scanDays, floorDiv(floor.Unix(), 86400)-2)
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
// until (inclusive), ascending if until is after from's day and descending
// otherwise, until f returns true.
func (s *Schedule) scan(from wall, until int64, f func(wall) bool) {
	back := until < from.day
	for day := from.day; back && day >= until || !back && day <= until; {
		y, m, d := civil(day)
		if s.month&(1<<m) == 0 { // skip the month
			if back {
				day = days(y, m, 1) - 1
			} else {
				day = days(y, m+1, 1)
			}
			continue
		}
		if s.dayMatches(d, weekday(day)) {
			first := day == from.day
			for i := range s.hours {
				h := s.hours[pick(back, i, len(s.hours))]
				if first && (back && h > from.h || !back && h < from.h) {
					continue
				}
				for j := range s.minutes {
					mi := s.minutes[pick(back, j, len(s.minutes))]
					if first && h == from.h && (back && mi > from.min || !back && mi < from.min) {
						continue
					}
					if f(wall{day, h, mi}) {
						return
					}
				}
			}
		}
		if back {
			day--
		} else {
			day++
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
// the jump lands on. It assumes, as for every real zone, that offsets stay
// within a day and change at most once in a day either side of w.
//
// It asks the zone only for offsets at instants, not for Time.ZoneBounds,
// whose end lies before the instant in leap years past a zone's last
// explicit transition (golang/go#81583), nor for time.Date, which does not
// promise which instant it picks.
func (s *Schedule) resolve(w wall) time.Time {
	naive := w.naive()
	before, after := s.offset(naive-86400), s.offset(naive+86400)
	if before == after { // the usual case: no change near w
		if u := naive - before; s.offset(u) == before {
			return time.Unix(u, 0).In(s.loc)
		}
	}
	var first time.Time
	for _, off := range [2]int64{before, after} {
		u := naive - off // w read with this offset
		if s.offset(u) == off && (first.IsZero() || u < first.Unix()) {
			first = time.Unix(u, 0)
		}
	}
	switch {
	case !first.IsZero():
		return first.In(s.loc)
	case after > before:
		// A gap: w read with the old offset lands after the jump, read
		// with the new one before it. Find the jump to the second.
		lo, hi := naive-after, naive-before
		for hi-lo > 1 {
			if mid := lo + (hi-lo)/2; s.offset(mid) == before {
				lo = mid
			} else {
				hi = mid
			}
		}
		return time.Unix(hi, 0).In(s.loc)
	}
	// Not reached for real zones; let the time package decide.
	y, m, d := civil(w.day)
	return time.Date(y, m, d, w.h, w.min, 0, 0, s.loc)
}

// offset returns the zone's UTC offset in seconds at Unix time u.
func (s *Schedule) offset(u int64) int64 {
	_, off := time.Unix(u, 0).In(s.loc).Zone()
	return int64(off)
}
