// Command openapigen writes Kura's OpenAPI document: it adds the schemas of
// the wire types of internal/api to the hand-written paths.json and writes
// internal/api/openapi.json (embedded and served by the server) and
// docs/openapi.json, byte for byte the same. Run it from internal/api
// (go generate ./internal/api) or the repository root. It also writes the
// endpoint reference of docs/api.md between its markers.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kura-backup/kura/internal/api"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := "."
	if _, err := os.Stat(filepath.Join("internal", "api", "openapigen", "paths.json")); err == nil {
		dir = filepath.Join("internal", "api")
	}
	doc, err := api.BuildOpenAPIDir(filepath.Join(dir, "openapigen"))
	if err != nil {
		return err
	}
	for _, out := range []string{filepath.Join(dir, "openapi.json"), filepath.Join(dir, "..", "..", "docs", "openapi.json")} {
		if err := os.WriteFile(out, doc, 0o644); err != nil {
			return err
		}
	}
	// docs/api.md's endpoint reference.
	table, err := api.EndpointTable(doc)
	if err != nil {
		return err
	}
	mdPath := filepath.Join(dir, "..", "..", "docs", "api.md")
	md, err := os.ReadFile(mdPath)
	if err != nil {
		return err
	}
	out, err := api.ReplaceEndpoints(string(md), table)
	if err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(out), 0o644)
}
