package index

import (
	"slices"
	"testing"
)

func TestCompareOrder(t *testing.T) {
	// The order a walker produces: children of a directory first, then each
	// subdirectory's children, subdirectories in name order.
	want := []string{
		"a",
		"a/b", "a/b-2", "a/c",
		"a/b/x", "a/b/y",
		"a/b/x/deep",
		"a/b-2/z",
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, Compare)
	if !slices.Equal(got, want) {
		t.Fatalf("sorted = %q\nwant     %q", got, want)
	}
}
