package main

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/units"
)

// kura agent ls / find: browse this client's savesets on the agent, which
// holds the key of the encrypted ones (the server cannot read their
// indexes). They print as kura ls and kura find do.

func openAgent(g *globals) (*agent.Agent, error) {
	h, err := agentHome(g)
	if err != nil {
		return nil, err
	}
	return agent.Open(agent.Options{Home: h, Log: io.Discard})
}

func newAgentLsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls SAVESET [DIR]",
		Short: "List a folder of one of this client's savesets, encrypted ones included (as kura ls)",
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
			a, err := openAgent(g)
			if err != nil {
				return err
			}
			r, err := a.OpenIndex(cmdContext(cmd), id)
			if err != nil {
				return err
			}
			defer r.Close()
			l := newListing(cmd, asJSON)
			it := r.Children(strings.Trim(path.Clean("/"+dir), "/"))
			for it.Next() {
				e := service.Entry(it.Entry())
				if asJSON {
					l.json(&e)
					continue
				}
				fmt.Fprintf(l.tw, "%s\t%d/%d\t%s\t%s\t%s\n", modeString(&e), e.UID, e.GID, sizeOf(&e), mtimeOf(&e), nameOf(&e))
			}
			if err := it.Err(); err != nil {
				return l.fail(err)
			}
			return l.end()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newAgentFindCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "find PATTERN",
		Short: "Search every saveset of this client, encrypted ones included (as kura find)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := openAgent(g)
			if err != nil {
				return err
			}
			sets, err := a.Savesets(cmdContext(cmd))
			if err != nil {
				return err
			}
			match := engine.PathMatcher(args[0])
			l := newListing(cmd, asJSON)
			if !asJSON {
				fmt.Fprintln(l.tw, "SAVESET\tCREATED\tLEVEL\tSIZE\tMODIFIED\tPATH")
			}
			for _, ss := range sets {
				r, err := a.OpenIndex(cmdContext(cmd), ss.ID)
				if err != nil {
					return l.fail(err)
				}
				it := r.Iter()
				for it.Next() {
					en := it.Entry()
					if !match(en.Path) {
						continue
					}
					m := api.Match{SavesetID: ss.ID, Created: ss.Created.Local().Format("2006-01-02 15:04:05"), Level: ss.Level, Entry: service.Entry(en)}
					if asJSON {
						l.json(&m)
						continue
					}
					fmt.Fprintf(l.tw, "%d\t%s\t%s\t%s\t%s\t%s\n", m.SavesetID, m.Created, m.Level, sizeOf(&m.Entry), mtimeOf(&m.Entry), m.Entry.FilePath())
				}
				err = it.Err()
				r.Close()
				if err != nil {
					return l.fail(fmt.Errorf("saveset %d: %w", ss.ID, err))
				}
			}
			return l.end()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newAgentVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	var level string
	cmd := &cobra.Command{
		Use:   "verify SAVESET",
		Short: "Verify one of this client's savesets at the data or source level, encrypted ones included (with this agent's keys)",
		Long: `Read one of this client's savesets through the server, decrypt it here when it
is encrypted (every 64 KiB chunk authenticated), decode the stream and check
every file's content against its digest in the index: kura verify --level
data, run where the key is. --level source also compares every entry with
the file on this machine now (content, type, mode, owner, times, link
target, xattrs), as kura verify --level source does for a saveset in the
clear. The server checks the media of an encrypted saveset (verify --level
media) without a key. Exit 4 when a file fails or differs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0], "SAVESET")
			if err != nil {
				return err
			}
			a, err := openAgent(g)
			if err != nil {
				return err
			}
			verify := a.VerifyData
			if level == "source" {
				verify = a.VerifySource
			}
			res, err := verify(cmdContext(cmd), id)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), agentVerifyJSON{SavesetID: res.SavesetID, Checked: res.Checked, Bytes: res.Bytes,
					Problems: append([]string{}, res.Problems...)}); err != nil {
					return err
				}
			} else {
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Verify (%s) of saveset %d on this agent: %d entries checked, %s of file content, %d problem(s).\n",
					level, res.SavesetID, res.Checked, units.FormatSize(res.Bytes), len(res.Problems))
				for _, p := range res.Problems {
					fmt.Fprintf(out, "  %s\n", p)
				}
			}
			if len(res.Problems) > 0 {
				return &exitError{Code: exitVerify, Err: fmt.Errorf("saveset %d: %d problem(s)", res.SavesetID, len(res.Problems))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	enumVar(cmd.Flags(), &level, "level", "data", []string{"data", "source"}, "data (the saveset against its digests) or source (and against the files on this machine now)")
	return cmd
}

// agentVerifyJSON is `agent verify --json`.
type agentVerifyJSON struct {
	SavesetID int64    `json:"saveset_id"`
	Checked   int64    `json:"checked"`
	Bytes     int64    `json:"bytes"`
	Problems  []string `json:"problems"`
}
