package api

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAPIUpToDate: the committed document is what the generator makes
// now from paths.json and the wire types, and docs/openapi.json is the same
// file as the embedded one.
func TestOpenAPIUpToDate(t *testing.T) {
	want, err := BuildOpenAPIDir("openapigen")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(OpenAPI, want) {
		t.Errorf("internal/api/openapi.json is not what the generator makes from the wire types and openapigen/paths.json and routes/*.json: run go generate ./internal/api")
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, OpenAPI) {
		t.Errorf("docs/openapi.json differs from internal/api/openapi.json: run go generate ./internal/api")
	}
}

// TestOpenAPISchemas: the schemas follow the wire types' JSON names, and
// every $ref of the document points at something it has.
func TestOpenAPISchemas(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	comp := doc["components"].(map[string]any)
	schemas := comp["schemas"].(map[string]any)
	job := schemas["Job"].(map[string]any)["properties"].(map[string]any)
	for _, name := range []string{"id", "saveset_id", "warning_count", "figures", "request"} {
		if _, ok := job[name]; !ok {
			t.Errorf("schema Job lacks property %q", name)
		}
	}
	if _, ok := job["SavesetID"]; ok {
		t.Errorf("schema Job uses the Go name SavesetID, not its JSON name")
	}
	errProps := schemas["Error"].(map[string]any)["properties"].(map[string]any)
	for _, name := range []string{"code", "message"} {
		if _, ok := errProps[name]; !ok {
			t.Errorf("schema Error lacks %q", name)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				kind, name, _ := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
				if m, _ := comp[kind].(map[string]any); m == nil || m[name] == nil {
					t.Errorf("$ref %s points at nothing", ref)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
}
