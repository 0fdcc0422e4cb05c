package schedule

import "time"

// Due decides whether a run is due at now for a policy whose last run
// started at last (zero: never), and for which slot. The slot is the latest
// activation in (last, now], so after downtime the missed slots collapse
// into one run for the latest. The last run's slot (catalog.Policy.LastSlot)
// works as last as well as its start time.
//
// A policy that has never run only counts a slot at most catchUp before
// now, so a new policy does not fire at once for a slot long past; catchUp
// is typically the interval the scheduler checks at. A last after now (the
// clock went back) means nothing is due until now passes it.
func (s *Schedule) Due(last, now time.Time, catchUp time.Duration) (slot time.Time, due bool) {
	floor := last
	if last.IsZero() {
		floor = now.Add(-max(catchUp, 0))
	}
	slot, ok := s.prev(now, floor)
	if !ok || !last.IsZero() && !slot.After(last) {
		return time.Time{}, false
	}
	return slot, true
}

// Entry is one schedule of a policy and the backup level it runs: "full",
// "diff" or "incr".
type Entry struct {
	Level string
	Sched *Schedule
}

// rank orders levels for DueLevel: full beats diff beats incr, which beats
// any level it does not know.
func rank(level string) int {
	switch level {
	case "full":
		return 3
	case "diff":
		return 2
	case "incr":
		return 1
	}
	return 0
}

// DueLevel decides, like Due, whether a policy with several schedules is due
// at now given its last run of any level, and which level runs: one run per
// policy, the highest level among those due (full, then diff, then incr;
// among equals the first entry). The slot is the latest due slot of any
// level, since the run stands for them all: a Sunday full and a daily incr
// at the same minute run the full alone, and a full missed during downtime
// is run in place of the incr due after it. Entries with a nil Sched are
// skipped.
func DueLevel(entries []Entry, last, now time.Time, catchUp time.Duration) (level string, slot time.Time, due bool) {
	for _, e := range entries {
		if e.Sched == nil {
			continue
		}
		t, ok := e.Sched.Due(last, now, catchUp)
		if !ok {
			continue
		}
		if !due || rank(e.Level) > rank(level) {
			level = e.Level
		}
		if !due || t.After(slot) {
			slot = t
		}
		due = true
	}
	return level, slot, due
}
