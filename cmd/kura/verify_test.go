package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var recipeRE = regexp.MustCompile(`^cat (\S+) \| zstd -dc \| tar `)

func TestVerifyFindsAFlippedByte(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	f := k.backup(src)
	id := itoa64(f.SavesetID)

	r := k.ok("verify", id)
	if !strings.Contains(r.stdout, "no problems") || strings.Contains(r.stdout, "PROBLEM") {
		t.Errorf("verify of a good saveset:\n%s", r)
	}

	rec := k.ok("saveset", "recipe", id)
	m := recipeRE.FindStringSubmatch(rec.stdout)
	if m == nil {
		t.Fatalf("recipe is not `cat FILE | zstd -dc | tar …`:\n%s", rec)
	}
	data := m[1]
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatalf("the recipe's data file: %v", err)
	}
	if len(b) < 1000 {
		t.Fatalf("data file %s has only %d bytes", data, len(b))
	}
	b[len(b)/2] ^= 0x5a
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}

	problemRE := regexp.MustCompile(`(?m)^PROBLEM ` + regexp.QuoteMeta(src) + `/\S+: `)
	r = k.expect(exitVerify, "verify", id)
	if !problemRE.MatchString(r.stdout) {
		t.Errorf("verify should print PROBLEM lines naming files of %s:\n%s", src, r)
	}
	r = k.expect(exitVerify, "verify", id, "--level", "media")
	if !strings.Contains(r.stdout, "PROBLEM ") {
		t.Errorf("verify --level media should print PROBLEM lines:\n%s", r)
	}

	var v struct {
		Level    string `json:"level"`
		Problems []struct {
			Path    string `json:"path"`
			Problem string `json:"problem"`
		} `json:"problems"`
	}
	k.json(exitVerify, &v, "verify", id, "--json")
	if v.Level != "data" || len(v.Problems) == 0 {
		t.Fatalf("verify --json: %+v, want level data and problems", v)
	}
	for _, p := range v.Problems {
		if p.Path == "" || p.Problem == "" {
			t.Errorf("problem without a path or a text: %+v", p)
		}
	}
}
