package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustParse(t testing.TB, expr, zone string) *Schedule {
	t.Helper()
	s, err := Parse(expr, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// next lists the first n activations after from, in the schedule's zone.
func next(s *Schedule, from time.Time, n int) []string {
	var out []string
	for t := from; len(out) < n; {
		t = s.Next(t)
		if t.IsZero() {
			return append(out, "none")
		}
		out = append(out, t.Format("2006-01-02 Mon 15:04 MST"))
	}
	return out
}

func TestParseGood(t *testing.T) {
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		expr   string
		string string
		want   []string // the first activations after from (UTC)
	}{
		{"0 1 * * *", "0 1 * * * (UTC)", []string{"2025-01-01 Wed 01:00 UTC", "2025-01-02 Thu 01:00 UTC"}},
		{"  */20   *  * * * ", "*/20 * * * * (UTC)", []string{"2025-01-01 Wed 00:20 UTC", "2025-01-01 Wed 00:40 UTC", "2025-01-01 Wed 01:00 UTC"}},
		{"5-20/10 3 * * *", "5-20/10 3 * * * (UTC)", []string{"2025-01-01 Wed 03:05 UTC", "2025-01-01 Wed 03:15 UTC", "2025-01-02 Thu 03:05 UTC"}},
		{"50/5 0 * * *", "50/5 0 * * * (UTC)", []string{"2025-01-01 Wed 00:50 UTC", "2025-01-01 Wed 00:55 UTC", "2025-01-02 Thu 00:50 UTC"}},
		{"0 0,12 * * *", "0 0,12 * * * (UTC)", []string{"2025-01-01 Wed 12:00 UTC", "2025-01-02 Thu 00:00 UTC"}},
		{"0 2 * * mon-fri", "0 2 * * mon-fri (UTC)", []string{"2025-01-01 Wed 02:00 UTC", "2025-01-02 Thu 02:00 UTC", "2025-01-03 Fri 02:00 UTC", "2025-01-06 Mon 02:00 UTC"}},
		{"0 2 * * FRI-SUN", "0 2 * * FRI-SUN (UTC)", []string{"2025-01-03 Fri 02:00 UTC", "2025-01-04 Sat 02:00 UTC", "2025-01-05 Sun 02:00 UTC", "2025-01-10 Fri 02:00 UTC"}},
		{"0 2 * * 7", "0 2 * * 7 (UTC)", []string{"2025-01-05 Sun 02:00 UTC", "2025-01-12 Sun 02:00 UTC"}},
		{"0 2 * * 0", "0 2 * * 0 (UTC)", []string{"2025-01-05 Sun 02:00 UTC", "2025-01-12 Sun 02:00 UTC"}},
		{"0 0 1 Jan-Mar/2 *", "0 0 1 Jan-Mar/2 * (UTC)", []string{"2025-03-01 Sat 00:00 UTC", "2026-01-01 Thu 00:00 UTC"}},
		{"@hourly", "@hourly (UTC)", []string{"2025-01-01 Wed 01:00 UTC", "2025-01-01 Wed 02:00 UTC"}},
		{"@daily", "@daily (UTC)", []string{"2025-01-02 Thu 00:00 UTC", "2025-01-03 Fri 00:00 UTC"}},
		{"@midnight", "@midnight (UTC)", []string{"2025-01-02 Thu 00:00 UTC"}},
		{"@weekly", "@weekly (UTC)", []string{"2025-01-05 Sun 00:00 UTC", "2025-01-12 Sun 00:00 UTC"}},
		{"@MONTHLY", "@MONTHLY (UTC)", []string{"2025-02-01 Sat 00:00 UTC", "2025-03-01 Sat 00:00 UTC"}},
		{"@yearly", "@yearly (UTC)", []string{"2026-01-01 Thu 00:00 UTC", "2027-01-01 Fri 00:00 UTC"}},
		{"@annually", "@annually (UTC)", []string{"2026-01-01 Thu 00:00 UTC"}},
		{"0 0 29 2 *", "0 0 29 2 * (UTC)", []string{"2028-02-29 Tue 00:00 UTC", "2032-02-29 Sun 00:00 UTC"}},
		{"0 0 31 * *", "0 0 31 * * (UTC)", []string{"2025-01-31 Fri 00:00 UTC", "2025-03-31 Mon 00:00 UTC", "2025-05-31 Sat 00:00 UTC"}},
		{"0 0 30 2 1", "0 0 30 2 1 (UTC)", []string{"2025-02-03 Mon 00:00 UTC", "2025-02-10 Mon 00:00 UTC"}}, // DOW rescues it
	} {
		s, err := Parse(c.expr, "UTC")
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if got := s.String(); got != c.string {
			t.Errorf("Parse(%q).String() = %q, want %q", c.expr, got, c.string)
		}
		if got := next(s, from, len(c.want)); strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("%s: activations\n got %q\nwant %q", c.expr, got, c.want)
		}
	}
}

func TestParseZones(t *testing.T) {
	for _, c := range []struct{ zone, string string }{
		{"", "0 1 * * * (Local)"},
		{"Local", "0 1 * * * (Local)"},
		{"UTC", "0 1 * * * (UTC)"},
		{"Asia/Tokyo", "0 1 * * * (Asia/Tokyo)"},
		{"Europe/Berlin", "0 1 * * * (Europe/Berlin)"},
	} {
		s := mustParse(t, "0 1 * * *", c.zone)
		if got := s.String(); got != c.string {
			t.Errorf("zone %q: String() = %q, want %q", c.zone, got, c.string)
		}
	}
	if s := mustParse(t, "0 1 * * *", ""); s.Location() != time.Local {
		t.Errorf(`zone "": location %v, want Local`, s.Location())
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ expr, zone, want string }{
		{"61 2 * * *", "", `cron "61 2 * * *": minute 61 out of range 0-59`},
		{"0 24 * * *", "", `cron "0 24 * * *": hour 24 out of range 0-23`},
		{"0 0 0 * *", "", `cron "0 0 0 * *": day-of-month 0 out of range 1-31`},
		{"0 0 32 * *", "", `cron "0 0 32 * *": day-of-month 32 out of range 1-31`},
		{"0 0 * 13 *", "", `cron "0 0 * 13 *": month 13 out of range 1-12`},
		{"0 0 * * 8", "", `cron "0 0 * * 8": day-of-week 8 out of range 0-7`},
		{"0 0 * FOO *", "", `cron "0 0 * FOO *": month "FOO" is not a number or a name JAN-DEC`},
		{"0 0 * * MONDAY", "", `cron "0 0 * * MONDAY": day-of-week "MONDAY" is not a number or a name SUN-SAT`},
		{"x 0 * * *", "", `cron "x 0 * * *": minute "x" is not a number`},
		{"0 MON * * *", "", `cron "0 MON * * *": hour "MON" is not a number`},
		{"*/0 * * * *", "", `cron "*/0 * * * *": minute step 0 in "*/0" out of range 1-59`},
		{"*/60 * * * *", "", `cron "*/60 * * * *": minute step 60 in "*/60" out of range 1-59`},
		{"0 */x * * *", "", `cron "0 */x * * *": hour step "x" in "*/x" is not a number`},
		{"0 1/2/3 * * *", "", `cron "0 1/2/3 * * *": hour step "2/3" in "1/2/3" is not a number`},
		{"5-1 * * * *", "", `cron "5-1 * * * *": minute range 5-1 is backwards (ranges do not wrap)`},
		{"0 0 * * FRI-MON", "", `cron "0 0 * * FRI-MON": day-of-week range FRI-MON is backwards (ranges do not wrap)`},
		{"1-2-3 * * * *", "", `cron "1-2-3 * * * *": minute "1-2-3" is not a value, range or step`},
		{"-5 * * * *", "", `cron "-5 * * * *": minute "-5" is not a value, range or step`},
		{"1,,2 * * * *", "", `cron "1,,2 * * * *": minute "1,,2" has an empty list item`},
		{"* * * *", "", `cron "* * * *": want 5 fields (minute hour day-of-month month day-of-week), got 4`},
		{"0 0 * * * *", "", `cron "0 0 * * * *": want 5 fields (minute hour day-of-month month day-of-week), got 6`},
		{"", "", `cron "": empty expression`},
		{"@every 5m", "", `cron "@every 5m": unknown descriptor "@every" (want @hourly, @daily, @weekly, @monthly or @yearly)`},
		{"@reboot", "", `cron "@reboot": unknown descriptor "@reboot" (want @hourly, @daily, @weekly, @monthly or @yearly)`},
		{"@daily 5", "", `cron "@daily 5": descriptor @daily takes no fields`},
		{"CRON_TZ=Asia/Tokyo 0 1 * * *", "", `cron "CRON_TZ=Asia/Tokyo 0 1 * * *": give the time zone as the policy's zone, not in the expression`},
		{"0 0 30 2 *", "", `cron "0 0 30 2 *": day-of-month 30 never occurs in month 2`},
		{"0 0 31 4,6,9,11 *", "", `cron "0 0 31 4,6,9,11 *": day-of-month 31 never occurs in month 4,6,9,11`},
		{"0 1 * * *", "Mars/Olympus", `cron "0 1 * * *": zone "Mars/Olympus": unknown time zone Mars/Olympus`},
	} {
		s, err := Parse(c.expr, c.zone)
		if err == nil {
			t.Errorf("Parse(%q, %q) = %v, want error %s", c.expr, c.zone, s, c.want)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("Parse(%q, %q):\n got %s\nwant %s", c.expr, c.zone, err, c.want)
		}
	}
}
