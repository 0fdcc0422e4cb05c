package main

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kura-backup/kura/internal/home"
)

// Shell completion of dynamic values: saveset IDs, barcodes, job IDs and
// the names of libraries, selections, policies and clients, read from the
// local catalog; and the words of every enum flag (--level, --compress,
// --overwrite). Completion runs on every <TAB>: it never writes — it opens
// no home that does not exist, creates no default library, and reads the
// catalog through a read-only connection — and any error just means no
// suggestions. Through a server, client names come from its API.

// completeQueries are what each kind of value completes from: the value,
// then a description.
var completeQueries = map[string]string{
	"saveset":   `SELECT id, level || ' ' || status || CASE selection WHEN '' THEN '' ELSE ' ' || selection END FROM savesets WHERE expired = 0 ORDER BY id DESC LIMIT 500`,
	"barcode":   `SELECT barcode, 'library ' || library FROM tapes ORDER BY barcode`,
	"library":   `SELECT name, dir FROM libraries ORDER BY name`,
	"selection": `SELECT DISTINCT name, '' FROM selections ORDER BY name`,
	"policy":    `SELECT name, 'selection ' || selection FROM policies ORDER BY name`,
	"client":    `SELECT name, address FROM clients ORDER BY name`,
	"job":       `SELECT id, kind || ' ' || state FROM jobs ORDER BY id DESC LIMIT 200`,
}

// completeFrom returns the values of one kind that start with prefix.
// With a server configured the values are the server's: the local home's
// would be the wrong ones, so only what the typed API lists (clients) is
// offered.
func completeFrom(ctx context.Context, g *globals, kind, prefix string) []cobra.Completion {
	if srv, err := g.server(); err != nil || srv != nil {
		if err != nil || kind != "client" {
			return nil
		}
		defer srv.Close()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cs, err := srv.Clients(ctx)
		if err != nil {
			return nil
		}
		var out []cobra.Completion
		for _, c := range cs {
			if strings.HasPrefix(c.Name, prefix) && c.Revoked.IsZero() {
				out = append(out, cobra.CompletionWithDesc(c.Name, c.Address))
			}
		}
		return out
	}
	dir := g.home
	if dir == "" {
		d, err := home.Dir()
		if err != nil {
			return nil
		}
		dir = d
	}
	path := home.CatalogPath(dir)
	if _, err := os.Stat(path); err != nil {
		return nil // no home, no catalog: nothing to offer, nothing created
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	// mode=ro: this connection cannot write; it neither creates the file
	// nor migrates its schema. Without a write-ahead log (no other process
	// has the catalog open) even a read-only connection would create one
	// and its shared-memory file: immutable=1 reads the file as it is.
	q := "mode=ro&_pragma=busy_timeout(1000)"
	if _, err := os.Stat(abs + "-wal"); err != nil {
		q = "mode=ro&immutable=1"
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil
	}
	defer db.Close()
	rows, err := db.Query(completeQueries[kind])
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []cobra.Completion
	for rows.Next() {
		var v, desc sql.NullString
		if rows.Scan(&v, &desc) != nil || !strings.HasPrefix(v.String, prefix) || v.String == "" {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(v.String, desc.String))
	}
	return out
}

// completer is a completion function for values of one kind.
func completer(g *globals, kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeFrom(cmdContext(cmd), g, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// argKinds maps the first argument word of a command's Use ("show
// BARCODE") to the kind of value it takes; NAME depends on the command
// group.
var argKinds = map[string]string{"SAVESET": "saveset", "[SAVESET]": "saveset", "BARCODE": "barcode", "JOB": "job"}

var nameKinds = map[string]string{"vtl": "library", "policy": "policy", "selection": "selection", "client": "client"}

// flagKinds maps a flag name to the kind of value it takes.
var flagKinds = map[string]string{"tape": "barcode", "vtl": "library", "to-vtl": "library", "selection": "selection",
	"to-client": "client", "policy": "policy"}

// installCompletions gives every command of root its completions.
func installCompletions(root *cobra.Command, g *globals) {
	_ = root.RegisterFlagCompletionFunc("client", completer(g, "client"))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if kind := argKind(c); kind != "" && c.ValidArgsFunction == nil {
			complete := completer(g, kind)
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveDefault // a later argument (ls SAVESET DIR …)
				}
				return complete(cmd, args, toComplete)
			}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if _, done := c.GetFlagCompletionFunc(f.Name); done {
				return
			}
			if e, ok := f.Value.(*enumFlag); ok {
				words := e.words
				_ = c.RegisterFlagCompletionFunc(f.Name, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
					var out []cobra.Completion
					for _, w := range words {
						if strings.HasPrefix(w, strings.ToLower(toComplete)) {
							out = append(out, w)
						}
					}
					return out, cobra.ShellCompDirectiveNoFileComp
				})
				return
			}
			if kind, ok := flagKinds[f.Name]; ok && f.Value.Type() == "string" {
				_ = c.RegisterFlagCompletionFunc(f.Name, completer(g, kind))
			}
		})
	}
	walk(root)
}

// argKind is the kind of value c's first argument takes, or "".
func argKind(c *cobra.Command) string {
	words := strings.Fields(c.Use)
	if len(words) < 2 {
		return ""
	}
	if kind, ok := argKinds[words[1]]; ok {
		return kind
	}
	if words[1] == "NAME" && c.Name() != "create" && c.HasParent() {
		return nameKinds[c.Parent().Name()]
	}
	return ""
}
