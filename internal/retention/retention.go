package retention

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Levels of a saveset.
const (
	LevelFull = "full"
	LevelDiff = "diff"
	LevelIncr = "incr"
)

// Statuses of a saveset.
const (
	StatusComplete   = "complete"
	StatusFailed     = "failed"
	StatusIncomplete = "incomplete"
	StatusRunning    = "running"
)

// Rule codes of a Decision. They are stable: scripts, the web console and
// reports may match on them.
const (
	RuleRunning      = "running"       // kept: a running backup
	RuleGeneration   = "generation"    // kept: within the KeepGenerations newest generations
	RuleAge          = "age"           // kept: younger than KeepDays
	RuleDependency   = "dependency"    // kept: a kept saveset depends on it
	RuleUnknown      = "unknown"       // kept: unknown level or status, not judged
	RuleInvalidRules = "invalid-rules" // kept: the rules failed Validate

	RuleExpiredGeneration = "expired-generation" // its generation is beyond KeepGenerations
	RuleExpiredAge        = "expired-age"        // older than KeepDays, no generation rule
	RuleExpiredFailed     = "expired-failed"     // a failed or incomplete backup
	RuleExpiredOrphan     = "expired-orphan"     // its chain is broken
	RuleAlreadyExpired    = "already-expired"    // was expired before
)

// Saveset is what retention needs to know about one saveset.
type Saveset struct {
	ID, BaseID int64 // BaseID: the saveset this one is relative to; 0 for a full
	Level      string
	Status     string
	Policy     string // carried, not read: the caller groups by policy
	Created    time.Time
	Expired    bool
}

// Rules are a policy's retention rules. A saveset is kept if any rule keeps
// it (see the package documentation).
type Rules struct {
	KeepGenerations int // keep the N newest complete generations (0 = no generation rule)
	KeepDays        int // keep anything younger than D days (0 = no age rule)
}

// ErrKeepsNothing is returned by Validate for rules that would expire every
// saveset.
var ErrKeepsNothing = errors.New("a policy must keep something: give --keep-generations or --keep-days")

// Validate rejects negative values and rules that keep nothing.
func (r Rules) Validate() error {
	if r.KeepGenerations < 0 {
		return fmt.Errorf("--keep-generations %d: must not be negative", r.KeepGenerations)
	}
	if r.KeepDays < 0 {
		return fmt.Errorf("--keep-days %d: must not be negative", r.KeepDays)
	}
	if r.KeepGenerations == 0 && r.KeepDays == 0 {
		return ErrKeepsNothing
	}
	return nil
}

// String describes the rules as their flags.
func (r Rules) String() string {
	return fmt.Sprintf("--keep-generations %d --keep-days %d", r.KeepGenerations, r.KeepDays)
}

// Decision is the verdict on one saveset.
type Decision struct {
	ID         int64
	Keep       bool
	Reason     string // human text: which rule decided, and on what
	Rule       string // stable code, one of the Rule constants
	Generation int    // 1 = newest; 0 = none (orphans, failed, running, expired)
}

// link is a broken link of a chain: the base of saveset at is unusable.
type link struct {
	at, base int64
	cause    string // "(full) failed", "is missing", …; "" for a loop or no base
	loop     bool
	unknown  bool // the base has a level or status retention does not know
}

// describe says what is broken, as seen from saveset id.
func (l link) describe(id int64) string {
	var what string
	switch {
	case l.loop:
		return fmt.Sprintf("its chain loops at saveset %d", l.at)
	case l.base == 0:
		what = "it has no base"
	default:
		what = fmt.Sprintf("base %d %s", l.base, l.cause)
	}
	if l.at == id {
		return what
	}
	return fmt.Sprintf("its chain breaks at saveset %d: %s", l.at, what)
}

// root is where a chain ends: a usable full, or a broken link.
type root struct {
	full   int64
	broken *link
}

func knownLevel(l string) bool { return l == LevelFull || l == LevelDiff || l == LevelIncr }
func knownStatus(s string) bool {
	return s == StatusComplete || s == StatusFailed || s == StatusIncomplete || s == StatusRunning
}

// usable reports whether s can serve as a link of a restorable chain.
func usable(s *Saveset) bool {
	return s != nil && s.Status == StatusComplete && !s.Expired && knownLevel(s.Level)
}

// newer orders savesets by Created, then ID.
func newer(a, b *Saveset) bool {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c > 0
	}
	return a.ID > b.ID
}

// compare is a total order on savesets, so that the sort, and therefore
// the result, does not depend on the input order even with duplicate IDs.
func compare(a, b Saveset) int {
	return cmp.Or(
		cmp.Compare(a.ID, b.ID),
		a.Created.Compare(b.Created),
		cmp.Compare(a.BaseID, b.BaseID),
		cmp.Compare(a.Level, b.Level),
		cmp.Compare(a.Status, b.Status),
		cmp.Compare(a.Policy, b.Policy),
		compareBool(a.Expired, b.Expired),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func days(n int) string {
	if n == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%d days", n)
}

func date(t time.Time) string { return t.Format("2006-01-02") }

// Decide applies the rules to one policy's savesets at time now and returns
// one decision per saveset, sorted by ID. It does not modify sets.
func Decide(sets []Saveset, rules Rules, now time.Time) []Decision {
	sorted := slices.Clone(sets)
	slices.SortFunc(sorted, compare)
	out := make([]Decision, len(sorted))
	for i := range sorted {
		out[i].ID = sorted[i].ID
	}

	if err := rules.Validate(); err != nil {
		for i, s := range sorted {
			if s.Expired {
				out[i].Rule, out[i].Reason = RuleAlreadyExpired, "expired: already expired"
				continue
			}
			out[i].Keep, out[i].Rule = true, RuleInvalidRules
			out[i].Reason = "kept: rules are invalid, nothing expires: " + err.Error()
		}
		return out
	}

	byID := make(map[int64]int, len(sorted)) // ID → index of its first saveset
	for i, s := range sorted {
		if _, dup := byID[s.ID]; !dup {
			byID[s.ID] = i
		}
	}
	get := func(id int64) *Saveset {
		if i, ok := byID[id]; ok {
			return &sorted[i]
		}
		return nil
	}

	roots := resolve(sorted, byID)

	// Number the generations: usable fulls, newest first.
	var fulls []*Saveset
	for i := range sorted {
		if s := &sorted[i]; usable(s) && s.Level == LevelFull {
			fulls = append(fulls, s)
		}
	}
	slices.SortFunc(fulls, func(a, b *Saveset) int {
		if newer(a, b) {
			return -1
		}
		if newer(b, a) {
			return 1
		}
		return 0
	})
	gen := make(map[int64]int, len(fulls)) // full ID → generation
	for g, f := range fulls {
		if _, dup := gen[f.ID]; !dup {
			gen[f.ID] = g + 1
		}
	}
	generation := func(i int) (g int, full *Saveset) {
		r, ok := roots[i]
		if !ok || r.broken != nil {
			return 0, nil
		}
		return gen[r.full], get(r.full)
	}

	young := func(s *Saveset) bool {
		if rules.KeepDays == 0 {
			return false
		}
		if int64(rules.KeepDays) > math.MaxInt64/int64(24*time.Hour) {
			return true
		}
		return s.Created.After(now.Add(-time.Duration(rules.KeepDays) * 24 * time.Hour))
	}
	orphanNote := func(i int) string {
		if r, ok := roots[i]; ok && r.broken != nil {
			return " (orphan: " + r.broken.describe(sorted[i].ID) + ")"
		}
		return ""
	}

	// The rules that keep a saveset on its own.
	keep := make([]bool, len(sorted))
	for i := range sorted {
		s, d := &sorted[i], &out[i]
		g, full := generation(i)
		d.Generation = g
		switch {
		case s.Expired:
			d.Rule, d.Reason, d.Generation = RuleAlreadyExpired, "expired: already expired", 0
			continue
		case !knownStatus(s.Status):
			d.Rule, d.Reason = RuleUnknown, fmt.Sprintf("kept: unknown status %q, not judged", s.Status)
		case !knownLevel(s.Level):
			d.Rule, d.Reason = RuleUnknown, fmt.Sprintf("kept: unknown level %q, not judged", s.Level)
		case s.Status == StatusRunning:
			d.Rule, d.Reason = RuleRunning, "kept: running"
		case roots[i].broken != nil && roots[i].broken.unknown:
			d.Rule = RuleUnknown
			d.Reason = "kept: not judged, " + roots[i].broken.describe(s.ID)
		case g > 0 && g <= rules.KeepGenerations:
			d.Rule = RuleGeneration
			d.Reason = fmt.Sprintf("kept: generation %d of %d (full %d, %s)", g, rules.KeepGenerations, full.ID, date(full.Created))
		case young(s):
			d.Rule = RuleAge
			switch s.Status {
			case StatusFailed, StatusIncomplete:
				d.Reason = fmt.Sprintf("kept: %s backup, younger than %s", s.Status, days(rules.KeepDays))
			default:
				d.Reason = fmt.Sprintf("kept: younger than %s", days(rules.KeepDays)) + orphanNote(i)
			}
		default:
			continue
		}
		keep[i] = true
	}

	// Dependency: whatever is kept keeps its usable base, down the chain.
	work := make([]int, 0, len(sorted))
	for i := range sorted {
		if keep[i] {
			work = append(work, i)
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		s := &sorted[i]
		if s.Level == LevelFull {
			continue
		}
		j, ok := byID[s.BaseID]
		if !ok || s.BaseID == 0 || keep[j] || !usable(&sorted[j]) {
			continue
		}
		keep[j] = true
		out[j].Rule = RuleDependency
		work = append(work, j)
	}
	// Name the newest kept saveset that depends directly on each one kept
	// by dependency.
	dependent := make(map[int64]*Saveset)
	for i := range sorted {
		s := &sorted[i]
		if !keep[i] || s.Level == LevelFull || s.BaseID == 0 {
			continue
		}
		if d, ok := dependent[s.BaseID]; !ok || newer(s, d) {
			dependent[s.BaseID] = s
		}
	}
	for i := range sorted {
		if keep[i] && out[i].Rule == RuleDependency {
			out[i].Reason = fmt.Sprintf("kept: saveset %d (kept) depends on it", dependent[sorted[i].ID].ID) + orphanNote(i)
		}
	}

	// Everything else expires.
	for i := range sorted {
		s, d := &sorted[i], &out[i]
		if keep[i] || s.Expired {
			continue
		}
		older := ""
		if rules.KeepDays > 0 {
			older = "older than " + days(rules.KeepDays)
		}
		switch {
		case s.Status == StatusFailed || s.Status == StatusIncomplete:
			d.Rule, d.Reason = RuleExpiredFailed, join(fmt.Sprintf("expired: %s backup", s.Status), older)
		case d.Generation == 0:
			d.Rule = RuleExpiredOrphan
			d.Reason = join("expired: orphan ("+roots[i].broken.describe(s.ID)+")", older)
		default:
			_, full := generation(i)
			what := fmt.Sprintf("expired: generation %d (full %d, %s)", d.Generation, full.ID, date(full.Created))
			if rules.KeepGenerations > 0 {
				d.Rule = RuleExpiredGeneration
				beyond := fmt.Sprintf("beyond --keep-generations %d", rules.KeepGenerations)
				if older != "" {
					beyond += " and " + older
				}
				d.Reason = join(what, beyond)
			} else {
				d.Rule, d.Reason = RuleExpiredAge, join(what, older)
			}
		}
	}
	for i := range out {
		out[i].Keep = keep[i]
	}
	return out
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + ", " + b
}

// resolve finds, for every complete, not expired saveset, where its chain
// ends: the full itself for a full, else the usable full its chain leads to
// or the first broken link. Each saveset is walked once.
func resolve(sorted []Saveset, byID map[int64]int) map[int]root {
	roots := make(map[int]root)
	onPath := make(map[int]bool)
	for start := range sorted {
		if !usable(&sorted[start]) {
			continue
		}
		var path []int
		var r root
		for i := start; ; {
			if done, ok := roots[i]; ok {
				r = done
				break
			}
			s := &sorted[i]
			if s.Level == LevelFull {
				r = root{full: s.ID}
				path = append(path, i)
				break
			}
			if onPath[i] {
				r = root{broken: &link{at: s.ID, loop: true}}
				break
			}
			onPath[i] = true
			path = append(path, i)
			if s.BaseID == 0 {
				r = root{broken: &link{at: s.ID}}
				break
			}
			j, ok := byID[s.BaseID]
			if !ok {
				r = root{broken: &link{at: s.ID, base: s.BaseID, cause: "is missing"}}
				break
			}
			if b := &sorted[j]; !usable(b) {
				unknown := !b.Expired && (!knownLevel(b.Level) || !knownStatus(b.Status))
				r = root{broken: &link{at: s.ID, base: b.ID, cause: brokenCause(b), unknown: unknown}}
				break
			}
			i = j
		}
		for _, i := range path {
			roots[i] = r
			delete(onPath, i)
		}
	}
	return roots
}

// brokenCause says why an unusable base breaks a chain.
func brokenCause(b *Saveset) string {
	var what string
	switch {
	case b.Expired:
		what = "is expired"
	case b.Status == StatusFailed:
		what = "failed"
	case b.Status == StatusIncomplete:
		what = "is incomplete"
	case b.Status == StatusRunning:
		what = "is still running"
	case !knownStatus(b.Status):
		what = fmt.Sprintf("has unknown status %q", b.Status)
	default:
		what = fmt.Sprintf("has unknown level %q", b.Level)
	}
	if knownLevel(b.Level) {
		return fmt.Sprintf("(%s) %s", b.Level, what)
	}
	return what
}
