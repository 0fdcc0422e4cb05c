package catalog

import (
	"reflect"
	"testing"
)

// A filter selects before the limit counts: the 2 newest failed backups
// of a client are 2 jobs, however many other jobs ran since.
func TestFindJobsFiltersBeforeLimit(t *testing.T) { onBoth(t, testFindJobsFiltersBeforeLimit) }

func testFindJobsFiltersBeforeLimit(t *testing.T) {
	c, _ := openTemp(t)
	id := map[string]int64{}
	for _, j := range []*Job{
		{Kind: KindBackup, State: StateFailed, Client: "web1"},    // a
		{Kind: KindBackup, State: StateSucceeded, Client: "web1"}, // b
		{Kind: KindBackup, State: StateFailed, Client: "web1"},    // c
		{Kind: KindVerify, State: StateFailed, Client: "web1"},    // d
		{Kind: KindBackup, State: StateFailed, Client: "db1"},     // e
		{Kind: KindScan, State: StateSucceeded},                   // f
		{Kind: KindBackup, State: StateFailed, Client: "web1"},    // g
		{Kind: KindBackup, State: StateSucceeded, Client: "db1"},  // h
	} {
		must(t, c.CreateJob(j))
		id[string(rune('a'+len(id)))] = j.ID
	}
	ids := func(names string) []int64 {
		var out []int64
		for _, n := range names {
			out = append(out, id[string(n)])
		}
		return out
	}
	for _, tc := range []struct {
		f    JobFilter
		want []int64
	}{
		{JobFilter{Kind: KindBackup, State: StateFailed, Client: "web1", Limit: 2}, ids("gc")},
		{JobFilter{Kind: KindBackup, State: StateFailed, Client: "web1"}, ids("gca")},
		{JobFilter{State: StateFailed, Limit: 3}, ids("ged")},
		{JobFilter{Client: "db1"}, ids("he")},
		{JobFilter{Kind: KindScan}, ids("f")},
		{JobFilter{Kind: KindRestore}, nil},
		{JobFilter{Limit: 3}, ids("hgf")},
	} {
		jobs, err := c.FindJobs(tc.f)
		must(t, err)
		var got []int64
		for _, j := range jobs {
			got = append(got, j.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FindJobs(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
}
