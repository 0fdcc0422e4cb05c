package catalog

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func fullSaveset() *Saveset {
	return &Saveset{
		JobID: 7, Client: "db1", Selection: "home", Level: LevelFull, Status: StatusRunning,
		Created: t0, Paths: []string{"/home", "/srv"}, Label: "weekly", Codec: "zstd", Library: "default",
		Parts: []Part{{Barcode: "A1", File: 3, Bytes: 1 << 30}, {Barcode: "A2", File: 1, Bytes: 5}},
	}
}

func TestSavesetLifecycle(t *testing.T) { onBoth(t, testSavesetLifecycle) }

func testSavesetLifecycle(t *testing.T) {
	c, _ := openTemp(t)
	s := fullSaveset()
	must(t, c.CreateSaveset(s))
	if s.ID == 0 {
		t.Fatal("CreateSaveset did not assign an ID")
	}
	got, err := c.Saveset(s.ID)
	must(t, err)
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("Saveset = %+v\nwant %+v", got, s)
	}

	// The job finishes: status, figures, index and one more part.
	s.Status, s.Finished = StatusComplete, t0.Add(time.Hour)
	s.Files, s.SourceBytes, s.MediaBytes = 1000, 5<<30, 1<<30
	s.Parts = append(s.Parts, Part{Barcode: "A3", File: 1, Bytes: 7})
	s.IndexPart, s.IndexBytes, s.IndexEntries = Part{Barcode: "A3", File: 2, Bytes: 999}, 999, 1000
	s.Expired = true
	must(t, c.UpdateSaveset(s))
	got, err = c.Saveset(s.ID)
	must(t, err)
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("after update Saveset = %+v\nwant %+v", got, s)
	}

	// Fewer parts after an update: the old ones are gone.
	s.Parts, s.IndexPart = s.Parts[:1], Part{}
	must(t, c.UpdateSaveset(s))
	got, err = c.Saveset(s.ID)
	must(t, err)
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("after shrinking Saveset = %+v\nwant %+v", got, s)
	}

	must(t, c.DeleteSaveset(s.ID))
	if _, err := c.Saveset(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Saveset after delete: %v, want ErrNotFound", err)
	}
	if err := c.DeleteSaveset(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteSaveset twice: %v, want ErrNotFound", err)
	}
	if err := c.UpdateSaveset(s); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateSaveset of a deleted saveset: %v, want ErrNotFound", err)
	}
	if ss, _ := c.Savesets(SavesetFilter{Barcode: "A1"}); len(ss) != 0 {
		t.Errorf("parts of a deleted saveset still found: %+v", ss)
	}

	// IDs are not reused after a delete.
	s2 := fullSaveset()
	s2.Created = time.Time{}
	must(t, c.CreateSaveset(s2))
	if s2.ID <= s.ID {
		t.Errorf("new saveset got ID %d after deleting %d", s2.ID, s.ID)
	}
	// A zero Created is set to now, in s2 and in the catalog.
	got, err = c.Saveset(s2.ID)
	must(t, err)
	if s2.Created.IsZero() || !got.Created.Equal(s2.Created) {
		t.Errorf("Created %v, stored %v: want both set to now", s2.Created, got.Created)
	}
}

func TestSavesetInvalid(t *testing.T) { onBoth(t, testSavesetInvalid) }

func testSavesetInvalid(t *testing.T) {
	c, _ := openTemp(t)
	for name, mod := range map[string]func(*Saveset){
		"level":   func(s *Saveset) { s.Level = "weekly" },
		"status":  func(s *Saveset) { s.Status = "" },
		"barcode": func(s *Saveset) { s.Parts = []Part{{File: 1}} },
		"id":      func(s *Saveset) { s.ID = -1 },
	} {
		s := fullSaveset()
		mod(s)
		if err := c.CreateSaveset(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: CreateSaveset: %v, want ErrInvalid", name, err)
		}
	}
	if ss, _ := c.Savesets(SavesetFilter{}); len(ss) != 0 {
		t.Errorf("invalid savesets were stored: %d", len(ss))
	}
}

// A tape scan rebuilds savesets with their original IDs, in any order.
func TestSavesetExplicitID(t *testing.T) { onBoth(t, testSavesetExplicitID) }

func testSavesetExplicitID(t *testing.T) {
	c, _ := openTemp(t)
	s := fullSaveset()
	s.ID = 42
	must(t, c.CreateSaveset(s))
	if s.ID != 42 {
		t.Fatalf("explicit ID changed to %d", s.ID)
	}
	low := fullSaveset()
	low.ID = 5
	must(t, c.CreateSaveset(low))
	if _, err := c.Saveset(5); err != nil {
		t.Fatal(err)
	}
	dup := fullSaveset()
	dup.ID = 42
	dup.Parts = []Part{{Barcode: "OTHER"}}
	if err := c.CreateSaveset(dup); !errors.Is(err, ErrExists) {
		t.Fatalf("CreateSaveset with a taken ID: %v, want ErrExists", err)
	}
	// The failed create left nothing behind, not even its parts.
	if ss, _ := c.Savesets(SavesetFilter{Barcode: "OTHER"}); len(ss) != 0 {
		t.Errorf("failed create left parts: %+v", ss)
	}
	got, _ := c.Saveset(42)
	if !reflect.DeepEqual(got, s) {
		t.Errorf("saveset 42 changed by failed create: %+v", got)
	}
	// Assigned IDs continue after the highest one.
	next := fullSaveset()
	must(t, c.CreateSaveset(next))
	if next.ID != 43 {
		t.Errorf("next assigned ID %d, want 43", next.ID)
	}
}

func ids(ss []*Saveset) []int64 {
	out := []int64{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func TestSavesetsFilter(t *testing.T) { onBoth(t, testSavesetsFilter) }

func testSavesetsFilter(t *testing.T) {
	c, _ := openTemp(t)
	mk := func(client, sel, level, status, lib string, created time.Time, parts []string, index string) int64 {
		s := &Saveset{Client: client, Selection: sel, Level: level, Status: status, Library: lib, Created: created}
		for i, b := range parts {
			s.Parts = append(s.Parts, Part{Barcode: b, File: i + 1})
		}
		if index != "" {
			s.IndexPart = Part{Barcode: index, File: 9}
		}
		must(t, c.CreateSaveset(s))
		return s.ID
	}
	h := time.Hour
	s1 := mk("", "home", LevelFull, StatusComplete, "default", t0, []string{"T1", "T2"}, "T2")
	s2 := mk("", "home", LevelIncr, StatusComplete, "default", t0.Add(h), []string{"T2"}, "T3")
	s3 := mk("db1", "home", LevelFull, StatusFailed, "big", t0.Add(2*h), []string{"T4"}, "")
	s4 := mk("db1", "etc", LevelDiff, StatusRunning, "big", t0.Add(3*h), nil, "")
	s5 := mk("", "etc", LevelFull, StatusIncomplete, "default", t0.Add(4*h), []string{"T1"}, "")

	for _, tc := range []struct {
		name string
		f    SavesetFilter
		want []int64
	}{
		{"all", SavesetFilter{}, []int64{s1, s2, s3, s4, s5}},
		{"local client", SavesetFilter{Clients: []string{""}}, []int64{s1, s2, s5}},
		{"client db1", SavesetFilter{Clients: []string{"db1"}}, []int64{s3, s4}},
		{"two clients", SavesetFilter{Clients: []string{"", "db1"}}, []int64{s1, s2, s3, s4, s5}},
		{"unknown client", SavesetFilter{Clients: []string{"nobody"}}, []int64{}},
		{"selection", SavesetFilter{Selections: []string{"etc"}}, []int64{s4, s5}},
		{"client and selection", SavesetFilter{Clients: []string{""}, Selections: []string{"home"}}, []int64{s1, s2}},
		{"status", SavesetFilter{Statuses: []string{StatusComplete}}, []int64{s1, s2}},
		{"statuses", SavesetFilter{Statuses: []string{StatusFailed, StatusIncomplete}}, []int64{s3, s5}},
		{"level", SavesetFilter{Levels: []string{LevelFull}}, []int64{s1, s3, s5}},
		{"library", SavesetFilter{Library: "big"}, []int64{s3, s4}},
		{"barcode of data", SavesetFilter{Barcode: "T1"}, []int64{s1, s5}},
		{"barcode of data and index", SavesetFilter{Barcode: "T2"}, []int64{s1, s2}},
		{"barcode of index only", SavesetFilter{Barcode: "T3"}, []int64{s2}},
		{"after (inclusive)", SavesetFilter{After: t0.Add(3 * h)}, []int64{s4, s5}},
		{"before (exclusive)", SavesetFilter{Before: t0.Add(h)}, []int64{s1}},
		{"window", SavesetFilter{After: t0.Add(h), Before: t0.Add(3 * h)}, []int64{s2, s3}},
		{"combined", SavesetFilter{Clients: []string{""}, Levels: []string{LevelFull}, Barcode: "T1", Before: t0.Add(h)}, []int64{s1}},
	} {
		ss, err := c.Savesets(tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(ss); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got savesets %v, want %v", tc.name, got, tc.want)
		}
	}

	// Listed savesets come with all their parts.
	ss, err := c.Savesets(SavesetFilter{Barcode: "T3"})
	must(t, err)
	want := []Part{{Barcode: "T2", File: 1}}
	if len(ss) != 1 || !reflect.DeepEqual(ss[0].Parts, want) || ss[0].IndexPart != (Part{Barcode: "T3", File: 9}) {
		t.Errorf("listed saveset parts: %+v", ss)
	}
}

func TestLastSaveset(t *testing.T) { onBoth(t, testLastSaveset) }

func testLastSaveset(t *testing.T) {
	c, _ := openTemp(t)
	h := time.Hour
	mk := func(client, level, status string, created time.Time, expired bool) int64 {
		s := &Saveset{Client: client, Selection: "home", Level: level, Status: status, Created: created, Expired: expired}
		must(t, c.CreateSaveset(s))
		return s.ID
	}
	if _, err := c.LastSaveset("", "home", nil, time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LastSaveset of nothing: %v, want ErrNotFound", err)
	}
	full1 := mk("", LevelFull, StatusComplete, t0, false)
	incr1 := mk("", LevelIncr, StatusComplete, t0.Add(h), false)
	mk("", LevelIncr, StatusFailed, t0.Add(2*h), false)     // not complete
	mk("", LevelIncr, StatusIncomplete, t0.Add(3*h), false) // not complete
	mk("", LevelIncr, StatusRunning, t0.Add(4*h), false)    // not complete
	diff1 := mk("", LevelDiff, StatusComplete, t0.Add(5*h), false)
	mk("", LevelFull, StatusComplete, t0.Add(6*h), true)     // expired
	mk("db1", LevelFull, StatusComplete, t0.Add(7*h), false) // another client
	// Created out of ID order: a rebuilt older saveset with a higher ID.
	old := mk("", LevelFull, StatusComplete, t0.Add(-h), false)
	// Two at the same time: the higher ID wins.
	mk("", LevelIncr, StatusComplete, t0.Add(8*h), false)
	tieB := mk("", LevelIncr, StatusComplete, t0.Add(8*h), false)

	for _, tc := range []struct {
		name   string
		levels []string
		before time.Time
		want   int64
	}{
		{"latest of any level", nil, time.Time{}, tieB},
		{"latest full (diff base)", []string{LevelFull}, time.Time{}, full1},
		{"latest full or diff", []string{LevelFull, LevelDiff}, time.Time{}, diff1},
		{"before is exclusive", nil, t0.Add(5 * h), incr1},
		{"at a time between", nil, t0.Add(5*h + 1), diff1},
		{"full before the first", []string{LevelFull}, t0, old},
		{"tie before", nil, t0.Add(8*h + 1), tieB},
	} {
		s, err := c.LastSaveset("", "home", tc.levels, tc.before)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.ID != tc.want {
			t.Errorf("%s: got saveset %d, want %d", tc.name, s.ID, tc.want)
		}
	}
	if _, err := c.LastSaveset("", "home", nil, t0.Add(-h)); !errors.Is(err, ErrNotFound) {
		t.Errorf("LastSaveset before everything: %v, want ErrNotFound", err)
	}
	if _, err := c.LastSaveset("", "etc", nil, time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("LastSaveset of another selection: %v, want ErrNotFound", err)
	}
	if s, err := c.LastSaveset("db1", "home", nil, time.Time{}); err != nil || s.Client != "db1" {
		t.Errorf("LastSaveset of db1: %+v, %v", s, err)
	}
}

// Reserved IDs are never given out, however the catalog was started, and a
// reservation never lowers the sequence.
func TestReserveSavesetIDs(t *testing.T) { onBoth(t, testReserveSavesetIDs) }

func testReserveSavesetIDs(t *testing.T) {
	c, _ := openTemp(t)
	if err := c.ReserveSavesetIDs(7); err != nil { // before any saveset
		t.Fatal(err)
	}
	s := &Saveset{Level: LevelFull, Status: StatusRunning, Selection: "x"}
	if err := c.CreateSaveset(s); err != nil {
		t.Fatal(err)
	}
	if s.ID != 8 {
		t.Fatalf("first saveset after reserving 7 got ID %d", s.ID)
	}
	if err := c.ReserveSavesetIDs(3); err != nil {
		t.Fatal(err)
	}
	if err := c.ReserveSavesetIDs(20); err != nil {
		t.Fatal(err)
	}
	s2 := &Saveset{Level: LevelFull, Status: StatusRunning, Selection: "x"}
	if err := c.CreateSaveset(s2); err != nil {
		t.Fatal(err)
	}
	if s2.ID != 21 {
		t.Fatalf("saveset after reserving 20 got ID %d", s2.ID)
	}
}

func TestLiveSavesetsByTape(t *testing.T) { onBoth(t, testLiveSavesetsByTape) }

// testLiveSavesetsByTape: the one-query map agrees, tape by tape, with the
// Barcode filter it replaces, and leaves out expired, failed and
// incomplete savesets; copies' parts count on their tapes.
func testLiveSavesetsByTape(t *testing.T) {
	c, _ := openTemp(t)
	mk := func(status string, parts []string, index string, copyParts ...string) int64 {
		s := &Saveset{Selection: "home", Level: LevelFull, Status: status, Library: "default", Created: t0}
		for i, b := range parts {
			s.Parts = append(s.Parts, Part{Barcode: b, File: i + 1})
		}
		if index != "" {
			s.IndexPart = Part{Barcode: index, File: 9}
		}
		if len(copyParts) > 0 {
			cp := Copy{Copy: 1, Library: "vault", Created: t0}
			for i, b := range copyParts {
				cp.Parts = append(cp.Parts, Part{Barcode: b, File: i + 1})
			}
			s.Copies = []Copy{cp}
		}
		must(t, c.CreateSaveset(s))
		return s.ID
	}
	s1 := mk(StatusComplete, []string{"T1", "T2"}, "T2")
	s2 := mk(StatusComplete, []string{"T2"}, "T3", "V1")
	mk(StatusFailed, []string{"T4"}, "")
	s4 := mk(StatusRunning, []string{"T4", "T1"}, "")
	mk(StatusIncomplete, []string{"T5"}, "")
	s6 := mk(StatusComplete, []string{"T6"}, "T6")
	must(t, c.ExpireSaveset(s6, "kept 1 generation"))

	got, err := c.LiveSavesetsByTape()
	must(t, err)
	want := map[string][]int64{"T1": {s1, s4}, "T2": {s1, s2}, "T3": {s2}, "T4": {s4}, "V1": {s2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("live savesets by tape = %v, want %v", got, want)
	}
	for _, bc := range []string{"T1", "T2", "T3", "T4", "T5", "T6", "V1", "NONE"} {
		ss, err := c.Savesets(SavesetFilter{Barcode: bc, Statuses: []string{StatusComplete, StatusRunning}})
		must(t, err)
		var live []int64
		for _, s := range ss {
			if !s.Expired {
				live = append(live, s.ID)
			}
		}
		if !reflect.DeepEqual(live, got[bc]) {
			t.Errorf("tape %s: the filter gives %v, the map %v", bc, live, got[bc])
		}
	}
}
