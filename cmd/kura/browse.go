package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newLsCmd, newFindCmd) }

func newLsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls SAVESET [DIR]",
		Short: "List a folder of a saveset",
		Long: `List a folder of a saveset. A large folder is read page by page and printed
as it comes (the columns line up within each page of ` + fmt.Sprint(api.DefaultPageLimit) + ` entries).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			q := api.EntriesQuery{SavesetID: id}
			if len(args) == 2 {
				q.Path = args[1]
			}
			return withService(cmd, g, func(svc api.Service) error {
				l := newListing(cmd, asJSON)
				for {
					page, err := svc.Entries(cmdContext(cmd), q)
					if err != nil {
						return l.fail(err)
					}
					l.notices(page.Notices, page.Skipped)
					for i := range page.Entries {
						e := &page.Entries[i]
						if asJSON {
							l.json(e)
							continue
						}
						fmt.Fprintf(l.tw, "%s\t%d/%d\t%s\t%s\t%s\n", modeString(e), e.UID, e.GID, sizeOf(e), mtimeOf(e), nameOf(e))
					}
					if page.Next == "" {
						return l.end()
					}
					if err := l.flush(); err != nil {
						return err
					}
					q.Cursor = page.Next
				}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// warnings turns an engine error wrapping ErrWarnings (or nil) into exit
// code 3, printing what it says.
func warnings(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{Code: exitWarnings, Err: err}
}

func newFindCmd(g *globals) *cobra.Command {
	var asJSON, newest bool
	cmd := &cobra.Command{
		Use:   "find PATTERN",
		Short: "Find every saveset and version that holds a matching path",
		Long: `Search the indexes of all complete savesets. A PATTERN with * ? or [ is a glob
matched against the whole path and the base name; otherwise it matches any
path that contains it. The matches are printed page by page as they come,
oldest saveset first (--newest-first: the newest first). With a server,
--client searches that client's savesets only.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := api.FindQuery{Pattern: args[0], Client: g.client, NewestFirst: newest}
			return withService(cmd, g, func(svc api.Service) error {
				l := newListing(cmd, asJSON)
				if !asJSON {
					fmt.Fprintln(l.tw, "SAVESET\tCREATED\tLEVEL\tSIZE\tMODIFIED\tPATH")
				}
				for {
					page, err := svc.Find(cmdContext(cmd), q)
					if err != nil {
						return l.fail(err)
					}
					l.notices(page.Notices, page.Skipped)
					for i := range page.Matches {
						m := &page.Matches[i]
						if asJSON {
							l.json(m)
							continue
						}
						fmt.Fprintf(l.tw, "%d\t%s\t%s\t%s\t%s\t%s\n", m.SavesetID, m.Created, m.Level, sizeOf(&m.Entry),
							mtimeOf(&m.Entry), m.Entry.FilePath())
					}
					if page.Next == "" {
						return l.end()
					}
					if err := l.flush(); err != nil {
						return err
					}
					q.Cursor = page.Next
				}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&newest, "newest-first", false, "search the newest saveset first")
	return cmd
}

// listing prints a listing that arrives in pages (ls, find) as it comes:
// a table flushed after each page, or one JSON array written element by
// element (the same text printJSON gives for the whole array). Notices are
// printed as "warning: …" when their page arrives; the invalid entries
// the pages skipped are added up per saveset and named at the end, with
// exit code 3, as the engine names them.
type listing struct {
	out, errw io.Writer
	tw        *tabwriter.Writer
	asJSON    bool
	n         int // JSON elements written
	pages     int // pages printed
	err       error
	skipped   []engine.Skipped
}

func newListing(cmd *cobra.Command, asJSON bool) *listing {
	return &listing{out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr(), tw: table(cmd.OutOrStdout()), asJSON: asJSON}
}

func (l *listing) notices(msgs []string, skipped []api.Skipped) {
	for _, m := range msgs {
		fmt.Fprintln(l.errw, "warning:", m)
	}
next:
	for _, s := range skipped {
		add := engine.Skipped{SavesetID: s.SavesetID, Count: s.Count, Examples: s.Examples}
		for i := range l.skipped {
			if l.skipped[i].SavesetID == s.SavesetID {
				l.skipped[i].Merge(add)
				continue next
			}
		}
		l.skipped = append(l.skipped, engine.Skipped{SavesetID: s.SavesetID})
		l.skipped[len(l.skipped)-1].Merge(add)
	}
}

// json writes one element of the array.
func (l *listing) json(v any) {
	if l.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		l.err = err
		return
	}
	sep := ",\n  "
	if l.n == 0 {
		sep = "[\n  "
	}
	l.n++
	_, l.err = fmt.Fprintf(l.out, "%s%s", sep, b)
}

// flush prints what the page added.
func (l *listing) flush() error {
	if l.err != nil {
		return l.err
	}
	l.pages++
	if l.asJSON {
		return nil
	}
	return l.tw.Flush()
}

// end closes the listing: the table or the array, then the warnings.
func (l *listing) end() error {
	if err := l.flush(); err != nil {
		return err
	}
	if l.asJSON {
		end := "\n]\n"
		if l.n == 0 {
			end = "[]\n"
		}
		if _, err := io.WriteString(l.out, end); err != nil {
			return err
		}
	}
	return warnings(engine.SkippedErr(l.skipped))
}

// fail ends a listing that broke off: the pages printed stay (nothing is
// printed when the first page fails, as before paging), and err says why
// it stopped.
func (l *listing) fail(err error) error {
	if l.pages > 0 && !l.asJSON {
		_ = l.tw.Flush()
	}
	return err
}

func modeString(e *api.Entry) string {
	bits, _ := strconv.ParseUint(e.Mode, 8, 32)
	m := fs.FileMode(bits & 0o777)
	switch e.Type {
	case "dir":
		m |= fs.ModeDir
	case "symlink":
		m |= fs.ModeSymlink
	case "fifo":
		m |= fs.ModeNamedPipe
	case "char":
		m |= fs.ModeDevice | fs.ModeCharDevice
	case "block":
		m |= fs.ModeDevice
	}
	return m.String()
}

func sizeOf(e *api.Entry) string {
	if e.Type != "file" {
		return "-"
	}
	return units.FormatSize(e.Size)
}

// mtimeOf is an entry's modification time in local time, to the minute.
func mtimeOf(e *api.Entry) string {
	t, err := time.Parse(time.RFC3339Nano, e.MTime)
	if err != nil {
		return e.MTime
	}
	return t.Local().Format("2006-01-02 15:04")
}

func nameOf(e *api.Entry) string {
	name := path.Base(e.FilePath())
	switch e.Type {
	case "dir":
		return name + "/"
	case "symlink":
		return name + " -> " + e.LinkTarget()
	case "hardlink":
		return name + " => /" + e.LinkTarget()
	}
	return name
}
