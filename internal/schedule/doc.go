// Package schedule decides when backup policies run: 5-field cron
// expressions in a time zone, and the pure "is a run due now, and for which
// slot" decisions the server's scheduler makes each time it checks. Nothing
// here reads the clock; every function takes the times it reasons about.
//
// # Expressions
//
// An expression has five fields separated by blanks:
//
//	minute        0-59
//	hour          0-23
//	day-of-month  1-31
//	month         1-12 or JAN-DEC
//	day-of-week   0-7 or SUN-SAT (0 and 7 are both Sunday)
//
// A field is a comma-separated list of items; an item is "*", a value "5",
// a range "1-5", or either of those with a step: "*/15", "1-30/10", or "5/10"
// (which means 5-max/10). Names are case-insensitive and may stand wherever a
// number may, as in "MON-FRI". A range may end on Sunday ("FRI-SUN" is
// 5-7) but does not wrap: "FRI-MON" is an error, write "FRI-SUN,MON". The descriptors @hourly, @daily
// (@midnight), @weekly, @monthly and @yearly (@annually) stand for
// "0 * * * *", "0 0 * * *", "0 0 * * 0", "0 0 1 * *" and "0 0 1 1 *".
//
// Day-of-month and day-of-week follow the classic cron rule: when both are
// restricted, a day matches if either matches ("0 1 1 * MON" runs on the
// 1st and on every Monday); when one is "*", only the other counts. A field
// counts as restricted unless it is exactly "*" — "*/2" restricts, as in
// robfig/cron (Vixie cron looks only at the first character).
//
// Parse rejects an expression that can never fire, such as "0 0 30 2 *",
// so Next always finds an activation.
//
// # Time zones
//
// A schedule's fields are wall-clock times in its zone: "Asia/Tokyo", "UTC",
// or "Local". The empty zone means Local, the server's own zone, because
// that is what an administrator typing "0 1 * * *" expects (and what
// catalog.Policy.Zone documents).
//
// Daylight saving time moves the wall clock, and the rules are:
//
//   - Every matching wall-clock minute fires at most once.
//   - A wall-clock time that happens twice, when clocks fall back, fires at
//     its first occurrence only: "30 1 * * *" in America/New_York runs at
//     01:30 EDT on the first Sunday of November, not again at 01:30 EST. This
//     applies to every field, so "0 * * * *" has one hour that day with no run.
//   - A wall-clock time that does not exist, when clocks spring forward, fires
//     at the first instant after the gap: "30 2 * * *" in America/New_York
//     runs at 03:00 EDT on the second Sunday of March. Several times in one
//     gap ("*/15 2 * * *") collapse into that one instant. A daily backup is
//     thus never skipped on the short day, and never doubled on the long day.
//
// # Due
//
// The scheduler checks each policy every so often and asks Due whether a run
// is due now, and for which slot (activation time). Due answers with the
// latest slot after the policy's last run, so slots missed while the server
// was down collapse into one run, not one per missed slot. A policy that has
// never run only counts a slot within a catch-up interval before now, so a
// new policy does not fire at once for a slot long past. DueLevel does the
// same for a policy with several schedules (full, diff, incr) and picks one
// level: one run per policy per slot, full beating diff beating incr.
//
// # Why not robfig/cron
//
// github.com/robfig/cron/v3 (MIT) parses the same syntax, but v3.0.1 gets
// both daylight-saving cases wrong for backups — it skips "30 2 * * *" on the
// spring-forward day and runs "30 1 * * *" twice on the fall-back day — and
// its errors do not name the field ("end of range (61) above maximum (59):
// 61"). Keeping its parser and fixing the stepping would leave half of it
// unused, so this package has its own small parser and stepper with errors
// such as
//
//	cron "61 2 * * *": minute 61 out of range 0-59
package schedule
