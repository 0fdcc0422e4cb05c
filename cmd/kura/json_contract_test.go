package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// schema is the part of JSON Schema (draft 2020-12) that docs/schema uses:
// type, properties, required, additionalProperties: false, items, and
// local $refs to $defs.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties *bool              `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Defs                 map[string]*schema `json:"$defs"`
}

// loadSchema reads docs/schema/NAME.json.
func loadSchema(t *testing.T, name string) *schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("docs/schema/%s.json: %v", name, err)
	}
	return &s
}

// check returns the places where v (decoded with UseNumber) breaks s.
func (s *schema) check(root *schema, v any, at string) []string {
	if s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
		if !ok || root.Defs[name] == nil {
			return []string{at + ": unknown $ref " + s.Ref}
		}
		return root.Defs[name].check(root, v, at)
	}
	var bad []string
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", at, v)}
		}
		for _, k := range s.Required {
			if _, ok := m[k]; !ok {
				bad = append(bad, at+": no "+k)
			}
		}
		for k, x := range m {
			p := s.Properties[k]
			if p == nil {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					bad = append(bad, at+"."+k+": not in the schema")
				}
				continue
			}
			bad = append(bad, p.check(root, x, at+"."+k)...)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", at, v)}
		}
		for i, x := range a {
			if s.Items != nil {
				bad = append(bad, s.Items.check(root, x, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case "string", "boolean", "number", "integer":
		ok := false
		switch x := v.(type) {
		case string:
			ok = s.Type == "string"
		case bool:
			ok = s.Type == "boolean"
		case json.Number:
			_, err := x.Int64()
			ok = s.Type == "number" || err == nil
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: %v (%T), want %s", at, v, v, s.Type))
		}
	default:
		bad = append(bad, at+": schema type "+s.Type+" unknown to this check")
	}
	return bad
}

// decodeAny decodes one JSON value keeping numbers as json.Number.
func decodeAny(t *testing.T, r result) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r)
	}
	return v
}

// conforms fails the test unless the output r (one object, or with list
// true an array of them) follows docs/schema/NAME.json.
func conforms(t *testing.T, name string, r result, list bool) {
	t.Helper()
	s := loadSchema(t, name)
	v := decodeAny(t, r)
	items := []any{v}
	if list {
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			t.Fatalf("want a non-empty JSON array:\n%s", r)
		}
		items = a
	}
	for i, x := range items {
		for _, b := range s.check(s, x, fmt.Sprintf("item %d", i)) {
			t.Errorf("kura %s: breaks docs/schema/%s.json: %s", strings.Join(r.args, " "), name, b)
		}
	}
}

var (
	snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	// unitless names an amount without its unit (block_size, used,
	// avg_rate, bwlimit): it should end in _bytes, _kbps, _seconds.
	unitless = regexp.MustCompile(`(^|_)(size|capacity|used|margin|rate|bwlimit|elapsed)$`)
)

// snakeKeys fails the test for every key of r's JSON output that is not
// snake_case or names an amount without its unit, and for every zero time ("0001-01-01T00:00:00Z": a time that
// has not happened is left out instead).
func snakeKeys(t *testing.T, r result) {
	t.Helper()
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				if !snakeKey.MatchString(k) {
					t.Errorf("kura %s: key %s%s is not snake_case", strings.Join(r.args, " "), at, k)
				}
				if unitless.MatchString(k) && !strings.HasPrefix(at, "label.") { // tape show: the label as on the medium
					t.Errorf("kura %s: key %s%s has no unit in its name", strings.Join(r.args, " "), at, k)
				}
				walk(y, at+k+".")
			}
		case []any:
			for _, y := range x {
				walk(y, at)
			}
		case string:
			if strings.HasPrefix(x, "0001-01-01T") {
				t.Errorf("kura %s: %s is the zero time", strings.Join(r.args, " "), strings.TrimSuffix(at, "."))
			}
		}
	}
	walk(decodeAny(t, r), "")
}

// TestJSONOutputsFollowTheContract: every verb that prints takes --json;
// its keys are snake_case; the main outputs follow docs/schema; a job and
// the backup it ran report the same figures under the same names.
func TestJSONOutputsFollowTheContract(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": strings.Repeat("kura ", 1000), "sub/b.txt": "b\n"})
	k.ok("selection", "create", "docs", src)
	k.ok("policy", "create", "daily", "--selection", "docs", "--full", "0 1 * * 0", "--keep-generations", "1")
	k.ok("vtl", "create", "offsite")

	js := func(args ...string) result { return k.expect(0, append(args, "--json")...) }
	run1 := js("policy", "run", "daily")
	run2 := js("policy", "run", "daily", "--level", "full")
	backup := js("backup", src)
	var f figures
	if err := json.Unmarshal([]byte(backup.stdout), &f); err != nil {
		t.Fatal(err)
	}
	id := itoa64(f.SavesetID)
	results := []result{run1, run2, backup,
		js("verify", id), js("copy", id, "--to-vtl", "offsite"),
		js("restore", id, "--to", filepath.Join(k.dir, "out"))}
	for _, r := range results {
		conforms(t, "result", r, false)
	}
	job := js("jobs", "show", itoa64(f.JobID))
	conforms(t, "job", job, false)
	conforms(t, "job", js("jobs", "list"), true)
	conforms(t, "saveset", js("savesets"), true)
	conforms(t, "tape", js("tape", "list"), true)
	conforms(t, "version", js("version"), false)

	// A job and its backup: the same names for the same figures.
	var jb, bk map[string]any
	_ = json.Unmarshal([]byte(job.stdout), &jb)
	_ = json.Unmarshal([]byte(backup.stdout), &bk)
	for _, key := range []string{"saveset_id", "level", "files", "source_bytes", "media_bytes", "ratio", "ratio_text", "tapes", "warnings", "warning_list"} {
		if fmt.Sprint(jb[key]) != fmt.Sprint(bk[key]) {
			t.Errorf("%s: job %v, backup %v", key, jb[key], bk[key])
		}
	}
	if _, ok := jb["avg_kbps"]; !ok {
		t.Errorf("jobs show --json has no avg_kbps:\n%s", job)
	}

	others := [][]string{
		{"savesets", "--why"}, {"prune", "--dry-run"}, {"vtl", "list"}, {"vtl", "show", "default"}, {"tape", "show", f.Tapes[0]},
		{"drive", "list"}, {"policy", "list"}, {"policy", "show", "daily"}, {"selection", "list"}, {"catalog", "list"},
		{"plan", "--throughput", "25MiB/s", "--window", "8h", "--capacity", "3TiB"}, {"ls", id}, {"find", "a.txt"},
		{"tape", "scan", f.Tapes[0]},
	}
	for _, args := range others {
		snakeKeys(t, js(args...))
	}

	// The verbs that change something print what they changed.
	added := js("tape", "add", "--vtl", "offsite")
	conforms(t, "tape", added, true)
	var newTapes []tapeJSON
	_ = json.Unmarshal([]byte(added.stdout), &newTapes)
	if len(newTapes) != 1 || newTapes[0].Library != "offsite" || newTapes[0].State != "blank" {
		t.Fatalf("tape add --json: %+v\n%s", newTapes, added)
	}
	bc := newTapes[0].Barcode
	for _, args := range [][]string{{"tape", "export", bc}, {"tape", "import", bc}, {"tape", "erase", bc}} {
		r := js(args...)
		conforms(t, "tape", r, false)
		var tp tapeJSON
		if err := json.Unmarshal([]byte(r.stdout), &tp); err != nil || tp.Barcode != bc {
			t.Errorf("kura %s --json: %+v %v", strings.Join(args, " "), tp, err)
		}
	}
	snakeKeys(t, js("catalog", "backup"))
	snakeKeys(t, js("catalog", "list"))
	var recipe recipeOut
	if err := json.Unmarshal([]byte(js("saveset", "recipe", id).stdout), &recipe); err != nil || recipe.SavesetID != f.SavesetID || !strings.Contains(recipe.Recipe, "zstd") {
		t.Errorf("saveset recipe --json: %+v %v", recipe, err)
	}
	for _, args := range [][]string{
		{"vtl", "create", "third"}, {"selection", "create", "more", src},
		{"policy", "create", "weekly", "--selection", "more", "--full", "0 1 * * 0", "--keep-days", "30"},
		{"policy", "edit", "weekly", "--keep-days", "60"},
	} {
		r := js(args...)
		snakeKeys(t, r)
		var m map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m["name"] != args[2] {
			t.Errorf("kura %s --json does not print the %s named %s:\n%s", strings.Join(args, " "), args[0], args[2], r)
		}
	}
	for _, r := range append(results, job) {
		snakeKeys(t, r)
	}
	// The figures are numbers, the ratio too.
	for _, r := range results {
		var m map[string]any
		_ = json.Unmarshal([]byte(r.stdout), &m)
		if _, ok := m["ratio"].(float64); !ok {
			t.Errorf("kura %s: ratio %v is not a number", strings.Join(r.args, " "), m["ratio"])
		}
	}
}
