package schedule

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // policy zones load on hosts without /usr/share/zoneinfo
)

// Schedule is a parsed cron expression in a time zone. It is immutable and
// safe for concurrent use.
type Schedule struct {
	expr string // as given, blanks normalised
	loc  *time.Location

	minute, hour, dom, month, dow uint64 // bit i set: value i matches
	domStar, dowStar              bool   // the field is exactly "*"
	minutes, hours                []int  // the set bits of minute and hour, ascending
}

// bounds describes one of the five fields.
type bounds struct {
	name     string
	min, max int
	names    []string // names[i] stands for the value i
	hint     string   // how names look, for errors
}

var fields = [5]bounds{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12,
		names: []string{"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"},
		hint:  " or a name JAN-DEC"},
	{name: "day-of-week", min: 0, max: 7,
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"},
		hint:  " or a name SUN-SAT"},
}

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse parses a 5-field cron expression, or a descriptor such as @daily,
// whose times are wall-clock times in the named zone: an IANA name such as
// "Asia/Tokyo", "UTC", or "Local"; "" means Local, the server's zone. The
// error names the expression and the bad field:
//
//	cron "61 2 * * *": minute 61 out of range 0-59
func Parse(expr, zone string) (*Schedule, error) {
	s, err := parse(expr, zone)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", expr, err)
	}
	return s, nil
}

func parse(expr, zone string) (*Schedule, error) {
	f := strings.Fields(expr)
	s := &Schedule{expr: strings.Join(f, " ")}
	switch {
	case len(f) == 0:
		return nil, errors.New("empty expression")
	case strings.HasPrefix(f[0], "CRON_TZ=") || strings.HasPrefix(f[0], "TZ="):
		return nil, errors.New("give the time zone as the policy's zone, not in the expression")
	case strings.HasPrefix(f[0], "@"):
		d, ok := descriptors[strings.ToLower(f[0])]
		if !ok {
			return nil, fmt.Errorf("unknown descriptor %q (want @hourly, @daily, @weekly, @monthly or @yearly)", f[0])
		}
		if len(f) > 1 {
			return nil, fmt.Errorf("descriptor %s takes no fields", f[0])
		}
		f = strings.Fields(d)
	case len(f) != 5:
		return nil, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(f))
	}

	sets := [5]*uint64{&s.minute, &s.hour, &s.dom, &s.month, &s.dow}
	for i, text := range f {
		set, err := parseField(text, fields[i])
		if err != nil {
			return nil, err
		}
		*sets[i] = set
	}
	if s.dow&(1<<7) != 0 { // 7 is Sunday too
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar, s.dowStar = f[2] == "*", f[4] == "*"
	s.minutes, s.hours = members(s.minute), members(s.hour)

	// Only day-of-month alone can pick days that never come: with
	// day-of-week restricted too, any matching weekday will do.
	if !s.domStar && s.dowStar {
		ok := false
		for m := 1; m <= 12 && !ok; m++ {
			ok = s.month&(1<<m) != 0 && bits.TrailingZeros64(s.dom) <= daysIn(time.Month(m), 2000)
		}
		if !ok {
			return nil, fmt.Errorf("day-of-month %s never occurs in month %s", f[2], f[3])
		}
	}

	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	s.loc = loc
	return s, nil
}

func loadZone(zone string) (*time.Location, error) {
	switch zone {
	case "", "Local":
		return time.Local, nil
	case "UTC":
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("zone %q: %w", zone, err)
	}
	return loc, nil
}

// parseField parses one field into a set of values, bit i for value i.
func parseField(text string, b bounds) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return 0, fmt.Errorf("%s %q has an empty list item", b.name, text)
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := b.min, b.max
		if rng != "*" {
			loText, hiText, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = value(loText, item, b); err != nil {
				return 0, err
			}
			switch {
			case isRange:
				if hi, err = value(hiText, item, b); err != nil {
					return 0, err
				}
				if b.name == "day-of-week" && hi == 0 && lo > 0 {
					hi = 7 // "FRI-SUN" ends on Sunday 7
				}
				if hi < lo {
					return 0, fmt.Errorf("%s range %s is backwards (ranges do not wrap)", b.name, rng)
				}
			case hasStep: // "5/10" is 5-max/10
			default:
				hi = lo
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || strings.ContainsAny(stepText, "+-") {
				return 0, fmt.Errorf("%s step %q in %q is not a number", b.name, stepText, item)
			}
			if n < 1 || n > b.max {
				return 0, fmt.Errorf("%s step %d in %q out of range 1-%d", b.name, n, item, b.max)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value parses a number or a name of field b; item is for errors.
func value(text, item string, b bounds) (int, error) {
	if text == "" || strings.ContainsAny(text, "+-/") {
		return 0, fmt.Errorf("%s %q is not a value, range or step", b.name, item)
	}
	for i, name := range b.names {
		if name != "" && strings.EqualFold(text, name) {
			return i, nil
		}
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number%s", b.name, text, b.hint)
	}
	if n < b.min || n > b.max {
		return 0, fmt.Errorf("%s %d out of range %d-%d", b.name, n, b.min, b.max)
	}
	return n, nil
}

func members(set uint64) []int {
	var out []int
	for set != 0 {
		v := bits.TrailingZeros64(set)
		out = append(out, v)
		set &^= 1 << v
	}
	return out
}

// daysIn returns the number of days in month m of year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// String returns the expression and the zone, e.g. "0 1 * * * (Asia/Tokyo)".
func (s *Schedule) String() string { return s.expr + " (" + s.loc.String() + ")" }

// Location returns the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }
