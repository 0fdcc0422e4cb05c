package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// An argument that names nothing (a saveset, job, library, drive, tape,
// policy or selection that does not exist) is a usage error: exit 2, one
// line "kura: no KIND NAME … (see `kura …`)" saying where to look, nothing
// on stdout, and no job recorded. So is a word that is no verb of a group.
func TestNotFoundIsAUsageError(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	k.backup(src)
	to := filepath.Join(k.dir, "to")

	for _, tc := range []struct {
		args []string
		want string // the whole message, after "kura: "
	}{
		{[]string{"restore", "999", "--to", to}, "no saveset 999 (see `kura savesets`)"},
		{[]string{"verify", "999"}, "no saveset 999 (see `kura savesets`)"},
		{[]string{"verify", "1", "--copy", "5"}, "saveset 1 has no copy 5 (see `kura savesets --json`)"},
		{[]string{"copy", "999", "--to-vtl", "default"}, "no saveset 999 (see `kura savesets`)"},
		{[]string{"copy", "1", "--to-vtl", "nolib"}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"ls", "999"}, "no saveset 999 (see `kura savesets`)"},
		{[]string{"saveset", "recipe", "999"}, "no saveset 999 (see `kura savesets`)"},
		{[]string{"drive", "set", "default/9", "--buffer", "1MiB"}, "no drive 9 in library default (it has drives 1 to 2)"},
		{[]string{"drive", "set", "nolib/1", "--buffer", "1MiB"}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"drive", "list", "--vtl", "nolib"}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"backup", "--drive", "9", src}, "no drive 9 in library default (it has drives 1 to 2)"},
		{[]string{"backup", "--vtl", "nolib", src}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"backup", "--selection", "nosel"}, `no selection "nosel" (see ` + "`kura selection list`)"},
		{[]string{"jobs", "show", "999"}, "no job 999 (see `kura jobs list`)"},
		{[]string{"jobs", "watch", "999"}, "no job 999 (see `kura jobs list`)"},
		{[]string{"tape", "show", "ZZZ999"}, "no tape ZZZ999 (see `kura tape list`)"},
		{[]string{"tape", "erase", "ZZZ999"}, "no tape ZZZ999 (see `kura tape list`)"},
		{[]string{"tape", "list", "--vtl", "nolib"}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"vtl", "show", "nolib"}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"vtl", "rm", "nolib"}, `no library named "nolib" (see ` + "`kura vtl list`)"},
		{[]string{"selection", "show", "nosel"}, `no selection "nosel" (see ` + "`kura selection list`)"},
		{[]string{"selection", "rm", "nosel"}, `no selection "nosel" (see ` + "`kura selection list`)"},
		{[]string{"policy", "show", "nopol"}, `no policy named "nopol" (see ` + "`kura policy list`)"},
		{[]string{"policy", "rm", "nopol"}, `no policy named "nopol" (see ` + "`kura policy list`)"},
		{[]string{"tape", "remove", "KUR001"}, "unknown command \"remove\" for \"kura tape\" (see `kura tape --help`)"},
		{[]string{"jobs", "log", "1"}, "unknown command \"log\" for \"kura jobs\" (see `kura jobs --help`)"},
	} {
		r := k.run(tc.args...)
		if r.code != exitUsage {
			t.Errorf("want exit 2:\n%s", r)
			continue
		}
		if got := strings.TrimSpace(r.stderr); got != "kura: "+tc.want {
			t.Errorf("stderr should be %q:\n%s", "kura: "+tc.want, r)
		}
		if r.stdout != "" {
			t.Errorf("nothing should be printed on stdout:\n%s", r)
		}
	}
	var jobs []json.RawMessage
	k.json(0, &jobs, "jobs", "list", "--json")
	if len(jobs) != 1 {
		t.Errorf("the refused commands recorded %d jobs beside the backup", len(jobs)-1)
	}
}
