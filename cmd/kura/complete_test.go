package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completions runs `kura __complete ARGS` and returns the values offered
// (the descriptions cut off).
func (k *kura) completions(args ...string) []string {
	k.t.Helper()
	r := k.ok(append([]string{"__complete"}, args...)...)
	var vals []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		v, _, _ := strings.Cut(line, "\t")
		vals = append(vals, v)
	}
	slices.Sort(vals)
	return vals
}

// treeState is every file under dir with its size and modification time.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = st.Mode().String() + " " + itoa64(st.Size()) + " " + st.ModTime().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompletionOffersDynamicValuesAndWritesNothing: <TAB> completes
// saveset IDs, barcodes, job IDs, library, selection and policy names and
// the enum flags' words from the local home, and never writes to it — nor
// creates one.
func TestCompletionOffersDynamicValuesAndWritesNothing(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	if got := k.completions("verify", ""); len(got) != 0 {
		t.Errorf("completion without a home offered %v", got)
	}
	if _, err := os.Stat(k.home); !os.IsNotExist(err) {
		t.Fatalf("completion created the home %s: %v", k.home, err)
	}

	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	f := k.backup(src)
	k.ok("selection", "create", "docs", src)
	k.ok("policy", "create", "daily", "--selection", "docs", "--full", "0 1 * * 0", "--keep-generations", "1")
	k.ok("vtl", "create", "offsite")
	id := itoa64(f.SavesetID)
	tapes := k.tapes()
	before := treeState(t, k.home)
	var barcodes, kur []string
	for bc := range tapes {
		barcodes = append(barcodes, bc)
		if strings.HasPrefix(bc, "KUR00") {
			kur = append(kur, bc)
		}
	}
	slices.Sort(kur)
	slices.Sort(barcodes)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"verify", ""}, []string{id}},
		{[]string{"restore", ""}, []string{id}},
		{[]string{"ls", ""}, []string{id}},
		{[]string{"saveset", "recipe", ""}, []string{id}},
		{[]string{"jobs", "show", ""}, []string{itoa64(f.JobID)}},
		{[]string{"tape", "show", ""}, barcodes},
		{[]string{"tape", "scan", "KUR00"}, kur},
		{[]string{"savesets", "--tape", ""}, barcodes},
		{[]string{"vtl", "show", ""}, []string{"default", "offsite"}},
		{[]string{"copy", id, "--to-vtl", "off"}, []string{"offsite"}},
		{[]string{"tape", "list", "--vtl", ""}, []string{"default", "offsite"}},
		{[]string{"selection", "show", ""}, []string{"docs"}},
		{[]string{"backup", "--selection", "d"}, []string{"docs"}},
		{[]string{"policy", "run", ""}, []string{"daily"}},
		{[]string{"policy", "rm", "da"}, []string{"daily"}},
		{[]string{"backup", "--level", ""}, []string{"diff", "full", "incr"}},
		{[]string{"policy", "run", "daily", "--level", "i"}, []string{"incr"}},
		{[]string{"verify", id, "--level", ""}, []string{"data", "media", "source"}},
		{[]string{"restore", id, "--overwrite", ""}, []string{"always", "never", "older"}},
		{[]string{"backup", "--compress", "h"}, []string{"high"}},
	} {
		if got := k.completions(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("kura %s<TAB>: %v, want %v", strings.Join(c.args, " "), got, c.want)
		}
	}
	after := treeState(t, k.home)
	for p, st := range after {
		if before[p] != st {
			t.Errorf("completion changed %s: %q → %q", p, before[p], st)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("completion removed %s", p)
		}
	}
}
