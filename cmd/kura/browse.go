package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newLsCmd, newFindCmd) }

func newLsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls SAVESET [DIR]",
		Short: "List a folder of a saveset",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			dir := ""
			if len(args) == 2 {
				dir = args[1]
			}
			return withEnv(g, func(env *engine.Env) error {
				entries, err := env.List(id, dir)
				if err != nil && !errors.Is(err, engine.ErrWarnings) {
					return err
				}
				warned := warnings(err) // invalid entries left out: listed, exit 3
				if asJSON {
					out := []entryJSON{}
					for i := range entries {
						out = append(out, toEntryJSON(&entries[i]))
					}
					if err := printJSON(cmd.OutOrStdout(), out); err != nil {
						return err
					}
					return warned
				}
				tw := table(cmd.OutOrStdout())
				for i := range entries {
					e := &entries[i]
					fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\n", modeString(e), e.UID, e.GID, sizeOf(e),
						time.Unix(0, e.MTime).Local().Format("2006-01-02 15:04"), nameOf(e))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				return warned
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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "find PATTERN",
		Short: "Find every saveset and version that holds a matching path",
		Long: `Search the indexes of all complete savesets. A PATTERN with * ? or [ is a glob
matched against the whole path and the base name; otherwise it matches any
path that contains it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				out := cmd.OutOrStdout()
				var all []map[string]any
				tw := table(out)
				if !asJSON {
					fmt.Fprintln(tw, "SAVESET\tCREATED\tLEVEL\tSIZE\tMODIFIED\tPATH")
				}
				err := env.Find(args[0], func(m engine.Match) error {
					if asJSON {
						all = append(all, map[string]any{"saveset_id": m.SavesetID, "created": m.Created, "level": m.Level, "entry": toEntryJSON(&m.Entry)})
						return nil
					}
					_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t/%s\n", m.SavesetID, m.Created, m.Level, sizeOf(&m.Entry),
						time.Unix(0, m.Entry.MTime).Local().Format("2006-01-02 15:04"), m.Entry.Path)
					return err
				})
				if err != nil && !errors.Is(err, engine.ErrWarnings) {
					return err
				}
				warned := warnings(err) // invalid entries left out: listed, exit 3
				if asJSON {
					if all == nil {
						all = []map[string]any{}
					}
					if err := printJSON(out, all); err != nil {
						return err
					}
					return warned
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				return warned
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

type entryJSON struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Mode   string `json:"mode"`
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Size   int64  `json:"size_bytes"`
	MTime  string `json:"mtime"`
	Link   string `json:"link,omitempty"`
	Source uint64 `json:"data_in_saveset,omitempty"`
	Digest string `json:"digest,omitempty"`
}

func toEntryJSON(e *index.Entry) entryJSON {
	j := entryJSON{Path: "/" + e.Path, Type: e.Type.String(), Mode: fmt.Sprintf("%04o", e.Mode), UID: e.UID, GID: e.GID,
		Size: e.Size, MTime: time.Unix(0, e.MTime).UTC().Format(time.RFC3339Nano), Link: e.Link}
	if e.Flags&index.FlagUnchanged != 0 {
		j.Source = e.Source
	}
	if e.Type == index.TypeFile {
		j.Digest = fmt.Sprintf("%x", e.Digest)
	}
	return j
}

func modeString(e *index.Entry) string {
	m := fs.FileMode(e.Mode & 0o777)
	switch e.Type {
	case index.TypeDir:
		m |= fs.ModeDir
	case index.TypeSymlink:
		m |= fs.ModeSymlink
	case index.TypeFifo:
		m |= fs.ModeNamedPipe
	case index.TypeChar:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case index.TypeBlock:
		m |= fs.ModeDevice
	}
	return m.String()
}

func sizeOf(e *index.Entry) string {
	if e.Type != index.TypeFile {
		return "-"
	}
	return units.FormatSize(e.Size)
}

func nameOf(e *index.Entry) string {
	name := path.Base(e.Path)
	switch e.Type {
	case index.TypeDir:
		return name + "/"
	case index.TypeSymlink:
		return name + " -> " + e.Link
	case index.TypeHardlink:
		return name + " => /" + e.Link
	}
	return name
}
