package main

import (
	"encoding/json"
	"io"
	"os"
	"text/tabwriter"

	"github.com/mattn/go-isatty"

	"github.com/kura-backup/kura/internal/units"
)

// printJSON writes v as indented JSON: the machine-readable form of every
// list and show verb.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table returns a tab-aligned writer for human listings; call Flush.
func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// isTerminal reports whether f is an interactive terminal (live progress).
func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd())
}

// countWord is the noun for a list of n things: "tape" for one, "tapes"
// for more ("rebuilt savesets 4, 5").
func countWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return units.Plural(noun)
}
