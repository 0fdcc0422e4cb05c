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

// flipFile flips one bit in the middle of the file at p.
func flipFile(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dataFile is the path of a saveset's first data tape file (from its recipe).
func dataFile(t *testing.T, k *kura, id string) string {
	t.Helper()
	rec := k.ok("saveset", "recipe", id)
	m := recipeRE.FindStringSubmatch(rec.stdout)
	if m == nil {
		t.Fatalf("recipe is not `cat FILE | zstd -dc | tar …`:\n%s", rec)
	}
	return m[1]
}

// TestVerifyNeverSaysNoProblemsOnFailure: a verify that cannot finish (the
// cached index and the index tape file both damaged) exits 1 and does not
// claim "no problems".
func TestVerifyNeverSaysNoProblemsOnFailure(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	id := itoa64(k.backup(src).SavesetID)
	data := dataFile(t, k, id)
	// The index tape file follows the data on the same tape.
	flipFile(t, strings.TrimSuffix(data, "000001.data")+"000002.data")
	cache := filepath.Join(k.home, "index", id+".idx")
	if err := os.Truncate(cache, 100); err != nil {
		t.Fatal(err)
	}
	r := k.expect(exitFailure, "verify", id)
	if strings.Contains(r.stdout, "no problems") || !strings.Contains(r.stdout, "did not finish") {
		t.Errorf("a verify that failed must not say \"no problems\":\n%s", r)
	}
}

// TestDamagedLabelAndCacheFromTheCLI: with one bit of a tape's label
// flipped, tape show, tape list, vtl list and restore work, verify exits 4
// naming the tape; a damaged index cache makes ls warn on stderr and list
// the saveset all the same.
func TestDamagedLabelAndCacheFromTheCLI(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	f := k.backup(src)
	id := itoa64(f.SavesetID)
	bc := f.Tapes[0]
	data := dataFile(t, k, id)

	cache := filepath.Join(k.home, "index", id+".idx")
	if err := os.Truncate(cache, 100); err != nil {
		t.Fatal(err)
	}
	r := k.ok("ls", id, strings.TrimPrefix(src, "/"))
	if !strings.Contains(r.stderr, "warning: the cached index of saveset "+id+" was damaged") || r.stdout == "" {
		t.Errorf("ls with a damaged index cache should list and warn:\n%s", r)
	}

	flipFile(t, filepath.Join(filepath.Dir(data), "label"))
	if r := k.ok("tape", "show", bc); !strings.Contains(r.stdout, "DAMAGED") || !strings.Contains(r.stdout, "file 2: complete") {
		t.Errorf("tape show of a tape with a damaged label:\n%s", r)
	}
	if r := k.ok("tape", "list"); !strings.Contains(r.stdout, "label") {
		t.Errorf("tape list should name the damaged label:\n%s", r)
	}
	k.ok("vtl", "list")
	r = k.expect(exitVerify, "verify", id, "--level", "media")
	if !strings.Contains(r.stdout, "PROBLEM tape "+bc+": ") || strings.Contains(r.stdout, "no problems") {
		t.Errorf("verify of a tape with a damaged label:\n%s", r)
	}
	k.ok("restore", id, "--to", filepath.Join(k.dir, "restored"))
}
