package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every size, rate and count flag refuses zero, negative and absurd values
// with a usage error (exit 2) that names the flag, before anything is
// created; enum flags take their words in any case.
func TestFlagsRefuseBadNumbers(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "alpha", "sub/b.txt": "beta"})
	bad := [][]string{
		{"vtl", "create", "x", "--tape-size", "0"},
		{"vtl", "create", "x", "--tape-size", "-1GiB"},
		{"vtl", "create", "x", "--tape-size", "9000TiB"},
		{"vtl", "create", "x", "--tape-size", "1KiB"},
		{"vtl", "create", "x", "--slots", "0"},
		{"vtl", "create", "x", "--slots", "-3"},
		{"vtl", "create", "x", "--drives", "0"},
		{"vtl", "create", "x", "--drives", "100000"},
		{"vtl", "create", "x", "--block-size", "0"},
		{"vtl", "create", "x", "--block-size", "1000"},
		{"vtl", "create", "x", "--block-size", "64MiB"},
		{"vtl", "create", "x", "--buffer", "0"},
		{"vtl", "create", "x", "--buffer", "100GiB"},
		{"drive", "set", "default/1", "--block-size", "-4KiB"},
		{"drive", "set", "default/1", "--buffer", "0"},
		{"backup", src, "--frame-size", "0"},
		{"backup", src, "--frame-size", "1GiB"},
		{"backup", src, "--readers", "-1"},
		{"backup", src, "--streams", "0"},
		{"backup", src, "--drive", "-1"},
		{"backup", src, "--level", "weekly"},
		{"backup", src, "--compress", "max"},
		{"tape", "add", "--count", "0"},
		{"jobs", "list", "--limit", "-5"},
		{"policy", "create", "p", "--client", "c", "--keep-days", "-1"},
		{"restore", "1", "--overwrite", "sometimes"},
		{"verify", "1", "--level", "deep"},
		{"plan", "--full-every", "0"},
	}
	for _, args := range bad {
		r := k.expect(2, args...)
		flag := ""
		for _, a := range args {
			if strings.HasPrefix(a, "--") {
				flag = a
			}
		}
		if !strings.Contains(r.stderr, `"`+flag+`"`) || !strings.Contains(r.stderr, "want") {
			t.Errorf("the error should name %s and say what it wants:\n%s", flag, r)
		}
	}
	if _, err := os.Stat(k.home); !os.IsNotExist(err) {
		t.Errorf("refused commands touched the home: %v", err)
	}

	// Enum words in any case.
	full := k.backup(src, "--level", "FULL", "--compress", "High")
	if full.Level != "full" {
		t.Errorf("--level FULL ran a %q backup", full.Level)
	}
	if incr := k.backup(src, "--level", "Incr"); incr.Level != "incr" {
		t.Errorf("--level Incr ran a %q backup", incr.Level)
	}
	k.ok("verify", itoa64(full.SavesetID), "--level", "MEDIA")
	k.ok("restore", itoa64(full.SavesetID), "--to", filepath.Join(k.dir, "r"), "--overwrite", "Never")
	k.ok("vtl", "create", "small", "--tape-size", "16MiB", "--slots", "1", "--drives", "1", "--block-size", "32KiB", "--buffer", "257KiB")
}
