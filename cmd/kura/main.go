// Command kura is the one binary of the Kura backup system: the admin verbs
// (backup, restore, verify, vtl, tape, drive, jobs …) working on the embedded
// local home, and later the server and the agent.
//
// Exit codes (documented in README.md):
//
//	0  success
//	1  failure (the job or command failed; nothing half-done is left marked good)
//	2  usage error (bad flags or arguments)
//	3  completed with warnings (some files were skipped or changed while read; each is listed)
//	4  verify found damage or differences (each affected file is listed)
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
)

// Exit codes; see the package comment.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitWarnings = 3
	exitVerify   = 4
)

// exitError carries an exit code out of a command. A nil Err means the
// command already said what went wrong.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &exitError{Code: exitUsage, Err: fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	return exitCode(root.Execute(), os.Stderr)
}

// exitCode prints a command's error to w and returns its exit code.
func exitCode(err error, w io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(w, "kura:", withHint(ee.Err))
		}
		return ee.Code
	}
	fmt.Fprintln(w, "kura:", withHint(err))
	if code := remoteExit(err); code != 0 {
		return code
	}
	if notFound(err) {
		return exitUsage
	}
	// "kura frobnicate": cobra finds no such command before any of ours
	// runs, and says so only in the error text.
	if strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitFailure
}

// remoteExit is the exit code of an error the server answered, by its
// code in the one table api.Codes (a bad request or a name that names
// nothing exits 2, usage); 0 if err is not the server's.
func remoteExit(err error) int {
	var ae *api.Error
	if errors.As(err, &ae) {
		return api.ExitCode(ae.Code)
	}
	return 0
}

// notFound reports an error about an argument that names nothing: a
// saveset, job, library, drive, tape, policy or selection that does not
// exist. That is a usage error, exit 2, like a malformed argument: the
// command did nothing.
func notFound(err error) bool {
	return errors.Is(err, engine.ErrNotFound) || errors.Is(err, library.ErrNoDrive) || errors.Is(err, library.ErrUnknownTape)
}

// globals are the flags every command shares.
type globals struct {
	home       string
	cpuProfile string
	traceFile  string
	client     string // --client: whose data (with a server)
	local      bool   // --local: ignore a configured server
	// stderr is the command's error stream (warnings at start-up).
	stderr io.Writer
	// warned is set once the home's start-up warnings are printed.
	warned bool
}

func newRootCmd() *cobra.Command { return newRootCmdWith(&globals{}) }

func newRootCmdWith(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "kura",
		Short: "Kura: network backup to a virtual tape library",
		Long: `Kura backs up directories to a virtual tape library on disk: slots, drives and
barcoded virtual tapes, written in checksummed blocks in a format that stock
tools (cat, zstd, tar) can restore.

With no server configured, every verb works on the local home
($KURA_HOME, default ~/.local/share/kura); "kura backup DIR" needs no set-up.

With a server ("kura login", or KURA_SERVER and KURA_TOKEN), the verbs work
against the server, and --client NAME says whose data: "kura backup
--client web1 /srv" has agent web1 stream /srv to the server's drives.
An explicit home (--home or KURA_HOME) always means that local home, and
--local the default one, even when logged in.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.home, "home", "", "Kura home folder (default $KURA_HOME or ~/.local/share/kura)")
	root.PersistentFlags().StringVar(&g.client, "client", "", "with a server: the client (agent) whose data a verb is about")
	root.PersistentFlags().BoolVar(&g.local, "local", false, "work on the local home even when a server is configured")
	root.PersistentFlags().StringVar(&g.cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for developers)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().StringVar(&g.traceFile, "trace", "", "write an execution trace (go tool trace) to this file (for developers)")
	_ = root.PersistentFlags().MarkHidden("trace")
	var stops []func()
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		g.stderr = cmd.ErrOrStderr()
		if g.cpuProfile != "" {
			f, err := os.Create(g.cpuProfile)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
		if g.traceFile != "" {
			f, err := os.Create(g.traceFile)
			if err != nil {
				return err
			}
			if err := trace.Start(f); err != nil {
				return err
			}
			stops = append(stops, func() { trace.Stop(); f.Close() })
		}
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) {
		for _, stop := range stops {
			stop()
		}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{Code: exitUsage, Err: err}
	})
	for _, add := range commands {
		root.AddCommand(add(g))
	}
	root.SetHelpCommand(newHelpCmd(root))
	usageArgs(root)
	installCompletions(root, g)
	return root
}

// newHelpCmd is cobra's help command, except that a topic that is not a
// command is a usage error (exit 2), not a usage text and exit 0.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usageErrorf("unknown help topic %q (see kura help)", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			cmd.SetOut(c.OutOrStdout())
			return cmd.Help()
		},
	}
}

// usageArgs makes cobra's checks of the positional arguments (too many, too
// few, a word that is not a subcommand) usage errors, exit 2, like bad
// flags: cobra returns them as plain errors, which would exit 1.
//
// A group of verbs ("kura tape") given a word that is none of its verbs
// ("kura tape remove X") is a usage error too: cobra would print the help
// and exit 0, as if something had been done.
func usageArgs(c *cobra.Command) {
	if c.HasParent() && c.HasSubCommands() && !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &exitError{Code: exitUsage, Err: fmt.Errorf("unknown command %q for %q (see `%s --help`)", args[0], cmd.CommandPath(), cmd.CommandPath())}
			}
			return cmd.Help()
		}
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &exitError{Code: exitUsage, Err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// commands is filled by the init functions of the command files, one file
// per command.
var commands []func(*globals) *cobra.Command
