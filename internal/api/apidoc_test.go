package api

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docs/api.md is checked against the OpenAPI document: its endpoint
// reference is the one generated from the document now, and every
// endpoint its prose describes exists in the document.
func TestAPIDocMatchesOpenAPI(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	table, err := EndpointTable(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceEndpoints(md, table)
	if err != nil {
		t.Fatal(err)
	}
	if want != md {
		t.Errorf("docs/api.md's endpoint reference is not the one the OpenAPI document gives: run go generate ./internal/api")
	}
	ops, err := Operations(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range DocHeadings(md) {
		if !slices.Contains(ops, h) {
			t.Errorf("docs/api.md describes %s, which the OpenAPI document lacks", h)
		}
	}
	// Every operation is in the reference.
	for _, op := range ops {
		if !strings.Contains(table, "`"+op+"`") {
			t.Errorf("the endpoint reference lacks %s", op)
		}
	}
}
