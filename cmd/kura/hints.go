package main

import (
	"errors"
	"strings"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
)

// The words that tell a user which command to run next live here, in the
// CLI, and only here: the engine and the server say what is wrong (and,
// for a name that names nothing, what kind of thing it is), the CLI says
// where to look.

// seeAlso is where to look for each kind of thing a name can name.
var seeAlso = map[string]string{
	"saveset":   "kura savesets",
	"library":   "kura vtl list",
	"tape":      "kura tape list",
	"selection": "kura selection list",
	"policy":    "kura policy list",
	"client":    "kura client list",
	"job":       "kura jobs list",
	"copy":      "kura savesets --json",
	"token":     "kura token list",
}

// withHint is err's message with "(see `kura …`)" added when err says a
// thing of a known kind was not found, locally or from a server.
func withHint(err error) string {
	msg := err.Error()
	what := ""
	var ae *api.Error
	var nf *engine.NotFoundError
	switch {
	case errors.As(err, &ae) && ae.Code == api.CodeNotFound:
		what = ae.Field
	case errors.As(err, &nf):
		what = nf.What
	}
	see, ok := seeAlso[what]
	if !ok || strings.Contains(msg, "(see `") {
		return msg
	}
	return msg + " (see `" + see + "`)"
}
