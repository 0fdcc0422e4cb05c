package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// docs/api.md is checked against the OpenAPI document two ways: its
// endpoint reference (between EndpointsBegin and EndpointsEnd) is
// generated from the document by openapigen, and every endpoint its prose
// describes ("### METHOD /path") must be one the document has.

// The markers around the generated endpoint reference in docs/api.md.
const (
	EndpointsBegin = "<!-- BEGIN GENERATED: endpoint reference (go generate ./internal/api) -->"
	EndpointsEnd   = "<!-- END GENERATED -->"
)

type oaDoc struct {
	Paths map[string]map[string]struct {
		Summary     string `json:"summary"`
		RequestBody *struct {
			Content map[string]struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
		Responses map[string]struct {
			Content map[string]struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
		Tags []string `json:"tags"`
	} `json:"paths"`
}

// Operations lists "METHOD /path" for every operation of an OpenAPI
// document, sorted.
func Operations(doc []byte) ([]string, error) {
	var d oaDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	var out []string
	for p, item := range d.Paths {
		for m := range item {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func schemaName(raw json.RawMessage) string {
	var s struct {
		Ref   string          `json:"$ref"`
		Type  string          `json:"type"`
		Items json.RawMessage `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	switch {
	case s.Ref != "":
		return s.Ref[strings.LastIndexByte(s.Ref, '/')+1:]
	case s.Type == "array" && s.Items != nil:
		return "[]" + schemaName(s.Items)
	}
	return s.Type
}

// EndpointTable is the endpoint reference of docs/api.md: one row per
// operation with its summary, request body, answer and who may call it.
func EndpointTable(doc []byte) (string, error) {
	var d oaDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return "", err
	}
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString("| Method and path | What it does | Request | Answer | Caller |\n|---|---|---|---|---|\n")
	for _, p := range paths {
		methods := make([]string, 0, len(d.Paths[p]))
		for m := range d.Paths[p] {
			methods = append(methods, m)
		}
		sort.Slice(methods, func(i, j int) bool { return methodOrder(methods[i]) < methodOrder(methods[j]) })
		for _, m := range methods {
			op := d.Paths[p][m]
			in, out := "", ""
			if op.RequestBody != nil {
				if c, ok := op.RequestBody.Content["application/json"]; ok {
					in = "`" + schemaName(c.Schema) + "`"
				}
			}
			codes := make([]string, 0, len(op.Responses))
			for code := range op.Responses {
				codes = append(codes, code)
			}
			sort.Strings(codes)
			for _, code := range codes {
				if code[0] != '2' {
					continue
				}
				out = code
				if c, ok := op.Responses[code].Content["application/json"]; ok {
					out += " `" + schemaName(c.Schema) + "`"
				}
				break
			}
			fmt.Fprintf(&b, "| `%s %s` | %s | %s | %s | %s |\n", strings.ToUpper(m), p, op.Summary, in, out, strings.Join(op.Tags, ", "))
		}
	}
	return b.String(), nil
}

func methodOrder(m string) int {
	return strings.Index("get post put patch delete", m)
}

var headingRE = regexp.MustCompile(`(?m)^### (GET|POST|PUT|PATCH|DELETE) (/[^\s?]*)`)

// DocHeadings lists the "METHOD /path" of every "### METHOD /path"
// heading of a markdown document (a query string left off).
func DocHeadings(md string) []string {
	var out []string
	for _, m := range headingRE.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// ReplaceEndpoints puts table between the markers of md.
func ReplaceEndpoints(md, table string) (string, error) {
	i := strings.Index(md, EndpointsBegin)
	j := strings.Index(md, EndpointsEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("docs/api.md lacks the markers %q … %q", EndpointsBegin, EndpointsEnd)
	}
	return md[:i+len(EndpointsBegin)] + "\n\n" + table + "\n" + md[j:], nil
}
