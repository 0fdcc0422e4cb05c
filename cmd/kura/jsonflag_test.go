package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// noJSON are the verbs that print without a --json form, and why.
var noJSON = map[string]string{
	"kura server":           "a daemon: its log is its output",
	"kura agent run":        "a daemon: its log is its output",
	"kura agent enroll":     "prints the command to run next; the enrollment is in the agent's config.json",
	"kura node run":         "a daemon: its log is its output",
	"kura node enroll":      "prints the command to run next; the enrollment is in the node's node.json",
	"kura agent key export": "prints the key ring itself (an age identity file)",
	"kura login":            "configures this CLI; `kura version --json` and `client list --json` show the server",
	"kura logout":           "configures this CLI",
	"kura bench gen":        "writes data sets; their manifest is JSON",
	"kura bench run":        "writes results.json beside report.md",
	"kura bench report":     "writes report.md again from results.json",
	"kura vtl rm":           "prints nothing",
	"kura policy rm":        "prints nothing",
	"kura selection rm":     "prints nothing",
	"kura wal archive":      "PostgreSQL's archive_command: prints nothing; the exit status is the answer",
	"kura wal get":          "PostgreSQL's restore_command: prints nothing; the exit status is the answer",
}

// Every verb that prints takes --json, so that scripts never parse text;
// the few that do not are listed with the reason.
func TestEveryVerbTakesJSON(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.HasSubCommands() {
			return
		}
		_, exempt := noJSON[c.CommandPath()]
		has := c.Flags().Lookup("json") != nil
		switch {
		case !has && !exempt:
			t.Errorf("%s has no --json", c.CommandPath())
		case has && exempt:
			t.Errorf("%s has --json now: drop it from noJSON", c.CommandPath())
		}
	}
	walk(newRootCmd())
}
