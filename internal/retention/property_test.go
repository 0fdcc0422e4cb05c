package retention

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// fataler is what checkInvariants needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkInvariants checks what must hold for any input; the golden tests run
// it too.
func checkInvariants(t fataler, sets []Saveset, rules Rules, ds []Decision) {
	t.Helper()
	if !slices.IsSortedFunc(ds, func(a, b Decision) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatalf("decisions not sorted by ID")
	}
	byID := make(map[int64]Saveset, len(sets))
	for _, s := range sets {
		byID[s.ID] = s
	}
	dec := make(map[int64]Decision, len(ds))
	for _, d := range ds {
		dec[d.ID] = d
	}
	valid := rules.Validate() == nil
	for _, d := range ds {
		s := byID[d.ID]
		if d.Reason == "" || d.Rule == "" {
			t.Fatalf("saveset %d: empty reason or rule: %+v", d.ID, d)
		}
		if s.Expired && (d.Keep || d.Rule != RuleAlreadyExpired) {
			t.Fatalf("saveset %d was expired, decision %+v", d.ID, d)
		}
		if !s.Expired && s.Status == StatusRunning && !d.Keep {
			t.Fatalf("running saveset %d expired: %+v", d.ID, d)
		}
		if !valid && !s.Expired && !d.Keep {
			t.Fatalf("invalid rules expired saveset %d: %+v", d.ID, d)
		}
		// No kept saveset depends, over a usable link, on one this
		// decision expires.
		if d.Keep && s.Level != LevelFull && s.BaseID != 0 {
			if b, ok := byID[s.BaseID]; ok && usable(&b) && !dec[b.ID].Keep {
				t.Fatalf("kept saveset %d (%s) depends on %d, expired (%s)", s.ID, d.Reason, b.ID, dec[b.ID].Reason)
			}
		}
	}
}

// genSets draws one policy's savesets: unique IDs, creation times growing
// with the ID (mostly), bases among earlier IDs, now and then a missing or
// odd base.
func genSets(t *rapid.T) []Saveset {
	n := rapid.IntRange(0, 30).Draw(t, "n")
	start := time.Date(2026, 9, 1, 1, 0, 0, 0, time.UTC)
	sets := make([]Saveset, 0, n)
	for i := range n {
		id := int64(i + 1)
		s := Saveset{
			ID:      id,
			Level:   rapid.SampledFrom([]string{LevelFull, LevelFull, LevelDiff, LevelIncr, LevelIncr, LevelIncr, "synth"}).Draw(t, "level"),
			Status:  rapid.SampledFrom([]string{StatusComplete, StatusComplete, StatusComplete, StatusComplete, StatusFailed, StatusIncomplete, StatusRunning, "odd"}).Draw(t, "status"),
			Created: start.Add(time.Duration(i)*24*time.Hour + time.Duration(rapid.IntRange(-48, 48).Draw(t, "jitter"))*time.Hour),
			Expired: rapid.IntRange(0, 9).Draw(t, "expired") == 0,
			Policy:  "p",
		}
		if s.Level != LevelFull {
			switch k := rapid.IntRange(0, 9).Draw(t, "base"); {
			case k == 0:
				s.BaseID = 0
			case k == 1:
				s.BaseID = id + int64(rapid.IntRange(0, 3).Draw(t, "fwd")) // self, loop or missing
			default:
				if i > 0 {
					s.BaseID = int64(rapid.IntRange(max(1, i-3), i).Draw(t, "prev"))
				}
			}
		}
		sets = append(sets, s)
	}
	return sets
}

func genRules(t *rapid.T) Rules {
	r := Rules{
		KeepGenerations: rapid.IntRange(0, 4).Draw(t, "gens"),
		KeepDays:        rapid.IntRange(0, 60).Draw(t, "days"),
	}
	if rapid.IntRange(0, 19).Draw(t, "invalid") == 0 {
		r = Rules{KeepGenerations: rapid.IntRange(-1, 0).Draw(t, "badgens")}
	}
	return r
}

func TestProperties(t *testing.T) {
	now := time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		sets := genSets(rt)
		rules := genRules(rt)
		ds := Decide(sets, rules, now)
		if len(ds) != len(sets) {
			rt.Fatalf("%d decisions for %d savesets", len(ds), len(sets))
		}
		checkInvariants(rt, sets, rules, ds)

		// Deterministic and independent of the input order.
		if again := Decide(sets, rules, now); !slices.Equal(again, ds) {
			rt.Fatalf("second run differs:\n%v\n%v", ds, again)
		}
		perm := rapid.Permutation(slices.Clone(sets)).Draw(rt, "perm")
		if got := Decide(perm, rules, now); !slices.Equal(got, ds) {
			rt.Fatalf("shuffled input differs:\n%v\n%v", ds, got)
		}

		// The newest usable full is generation 1 and kept.
		var newest *Saveset
		for i := range sets {
			s := &sets[i]
			if s.Level != LevelFull || s.Status != StatusComplete || s.Expired {
				continue
			}
			if newest == nil || s.Created.After(newest.Created) || s.Created.Equal(newest.Created) && s.ID > newest.ID {
				newest = s
			}
		}
		if rules.Validate() == nil && rules.KeepGenerations >= 1 && newest != nil {
			i, _ := slices.BinarySearchFunc(ds, newest.ID, func(d Decision, id int64) int { return cmp.Compare(d.ID, id) })
			if d := ds[i]; !d.Keep || d.Generation != 1 || d.Rule != RuleGeneration {
				rt.Fatalf("newest full %d: %+v", newest.ID, d)
			}
		}

		// Deciding again with the expired savesets marked keeps the same.
		marked := slices.Clone(sets)
		slices.SortFunc(marked, compare)
		for i := range marked {
			if !ds[i].Keep {
				marked[i].Expired = true
			}
		}
		for i, d := range Decide(marked, rules, now) {
			if d.Keep != ds[i].Keep {
				rt.Fatalf("second pass changed saveset %d: %+v, first %+v", d.ID, d, ds[i])
			}
		}
	})
}
