package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// docRoutes is the set of "METHOD /path" of the OpenAPI document.
func docRoutes(t *testing.T) map[string]bool {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	out := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				out[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPICoversRoutes: every route the server serves is in the OpenAPI
// document, and every route of the document is served.
func TestOpenAPICoversRoutes(t *testing.T) {
	s := &Server{}
	served := map[string]bool{}
	for _, rt := range s.routes() {
		k := rt.Method + " " + rt.Path
		if served[k] {
			t.Errorf("route %s is listed twice", k)
		}
		served[k] = true
	}
	doc := docRoutes(t)
	full := func(k string) string { m, p, _ := strings.Cut(k, " "); return m + " " + api.Prefix + p }
	for _, k := range keys(served) {
		if !doc[k] {
			t.Errorf("the server serves %s but docs/openapi.json lacks it (edit internal/api/openapigen/paths.json, go generate ./internal/api)", full(k))
		}
	}
	for _, k := range keys(doc) {
		if !served[k] {
			t.Errorf("docs/openapi.json documents %s but the server does not serve it", full(k))
		}
	}

	// And the mux the server answers with dispatches each documented
	// route to its pattern, not to the catch-all 404.
	mux, ok := s.Handler().(*http.ServeMux)
	if !ok {
		t.Fatalf("Handler is a %T, not a *http.ServeMux", s.Handler())
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, k := range keys(doc) {
		method, path, _ := strings.Cut(k, " ")
		r := httptest.NewRequest(method, api.Prefix+param.ReplaceAllString(path, "1"), nil)
		if _, pattern := mux.Handler(r); pattern != method+" "+api.Prefix+path {
			t.Errorf("%s %s reaches pattern %q, want %q", method, r.URL.Path, pattern, method+" "+api.Prefix+path)
		}
	}
}
