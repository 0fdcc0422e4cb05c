package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newTapeCmd) }

func newTapeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tape",
		Short: "Virtual tapes: list, show, add, export, import, erase, scan",
	}
	var (
		vtl      string
		listJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List tapes: barcode, location, state, used/capacity, tape files, savesets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				if _, err := env.OpenLibrary(vtl); err != nil && vtl == "" {
					return err
				}
				tapes, err := env.Tapes(vtl)
				if err != nil {
					return err
				}
				if listJSON {
					out := []tapeJSON{}
					for _, t := range tapes {
						out = append(out, toTapeJSON(t))
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "BARCODE\tLIBRARY\tPOOL\tLOCATION\tSTATE\tUSED\tCAPACITY\tFILES\tSAVESETS")
				for _, t := range tapes {
					var ids []string
					for _, id := range t.Savesets {
						ids = append(ids, fmt.Sprint(id))
					}
					state := string(t.State)
					if t.Error != "" {
						state += " (" + t.Error + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.Barcode, t.Library, orDash(t.Pool, "scratch"), t.Location, state,
						units.FormatSize(t.Used), units.FormatSize(t.Capacity), t.Files, dash(strings.Join(ids, ",")))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&vtl, "vtl", "", "only this library")
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show BARCODE",
		Short: "Draw a tape's layout: label, tape files, blocks, checksums, filemarks, end of data",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				lib, err := env.LibraryOfTape(args[0])
				if err != nil {
					return err
				}
				t, err := lib.OpenTape(args[0])
				if err != nil {
					return err
				}
				defer t.Close()
				if showJSON {
					files, err := t.Files()
					if err != nil {
						return err
					}
					return printJSON(cmd.OutOrStdout(), toTapeShowJSON(t.Label(), files, t.Used()))
				}
				return tape.Describe(cmd.OutOrStdout(), t)
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON")

	var count int
	var addJSON bool
	add := &cobra.Command{
		Use:   "add",
		Short: "Add labelled blank tapes to a library",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if count <= 0 {
				return usageErrorf("--count must be at least 1")
			}
			return withEnv(g, func(env *engine.Env) error {
				codes, err := env.AddTapes(vtl, count)
				if err != nil {
					return err
				}
				if addJSON {
					return printTapesJSON(cmd, env, codes...)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Added %s\n", strings.Join(codes, ", "))
				return nil
			})
		},
	}
	add.Flags().StringVar(&vtl, "vtl", "", "library (default: the default library)")
	intVar(add.Flags(), &count, "count", 1, 1, library.MaxSlots, "how many tapes")
	add.Flags().BoolVar(&addJSON, "json", false, "print the new tapes as JSON (as tape list does)")

	// move runs one library move on the tape's library and says where it went.
	move := func(use, short, done string, op func(lib *library.Library, barcode string) error) *cobra.Command {
		var asJSON bool
		c := &cobra.Command{
			Use: use + " BARCODE", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withEnv(g, func(env *engine.Env) error {
					lib, err := env.LibraryOfTape(args[0])
					if err != nil {
						return err
					}
					if err := op(lib, args[0]); err != nil {
						return err
					}
					if asJSON {
						return printTapesJSON(cmd, env, args[0])
					}
					fmt.Fprintf(cmd.OutOrStdout(), "Tape %s %s.\n", args[0], done)
					return nil
				})
			},
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print the tape as JSON (as tape list does)")
		return c
	}
	export := move("export", "Move a tape to the mail slot: it goes offline", "is in the mail slot (offline)", (*library.Library).Export)
	var impJSON bool
	imp := &cobra.Command{
		Use: "import BARCODE", Short: "Move a tape from the mail slot back into a free slot", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				if err := env.ImportTape(args[0]); err != nil {
					return err
				}
				if impJSON {
					return printTapesJSON(cmd, env, args[0])
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Tape %s is back in a slot.\n", args[0])
				return nil
			})
		},
	}
	imp.Flags().BoolVar(&impJSON, "json", false, "print the tape as JSON (as tape list does)")
	var force, eraseJSON bool
	erase := &cobra.Command{
		Use:   "erase BARCODE",
		Short: "Relabel a tape; its data is gone (refused while it holds unexpired savesets, unless --force)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if srv, err := g.server(); err != nil {
				return err
			} else if srv != nil {
				defer srv.Close()
				j, err := runServerJob(cmd, srv, api.JobRequest{Kind: api.KindErase, Barcode: args[0], Force: force}, eraseJSON)
				if err != nil {
					return err
				}
				if end := serverJobError(j); end != nil {
					return eraseError(end)
				}
				var rec engine.EraseRecord
				if _, err := jobResult(j, &rec); err != nil {
					return err
				}
				return printErased(cmd, &rec, eraseJSON)
			}
			return withEnv(g, func(env *engine.Env) error {
				ctx, cancel := signal.NotifyContext(cmdContext(cmd), os.Interrupt)
				defer cancel()
				rec, err := env.EraseTapeJob(ctx, args[0], engine.EraseOptions{Force: force})
				if err != nil {
					return eraseError(err)
				}
				return printErased(cmd, rec, eraseJSON)
			})
		},
	}
	erase.Flags().BoolVar(&eraseJSON, "json", false, "print the tape and the savesets expired as JSON")
	erase.Flags().BoolVar(&force, "force", false, "erase even if unexpired savesets are on it (they are expired)")

	var scanJSON bool
	var scanDir string
	scan := &cobra.Command{
		Use:   "scan BARCODE",
		Short: "Rebuild the catalog records of a tape's savesets from the media alone",
		Long: `Read a tape and rebuild the catalog records of the savesets whose index it
holds (like Bacula's bscan). After losing the catalog: register the library
folder (--dir, or "kura vtl register DIR"), then scan each tape.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if srv, err := g.server(); err != nil {
				return err
			} else if srv != nil {
				defer srv.Close()
				if scanDir != "" {
					return usageErrorf("--dir with a server: register the library folder on the server first (kura vtl register DIR), then scan")
				}
				j, err := runServerJob(cmd, srv, api.JobRequest{Kind: api.KindScan, Barcode: args[0]}, scanJSON)
				if err != nil {
					return err
				}
				var rec engine.ScanRecord
				if _, err := jobResult(j, &rec); err != nil {
					return err
				}
				if end := serverJobError(j); end != nil {
					return scanError(end)
				}
				return printScan(cmd, &rec, scanJSON)
			}
			return withEnv(g, func(env *engine.Env) error {
				if scanDir != "" {
					if _, err := env.RegisterLibrary(scanDir); err != nil {
						return err
					}
				}
				ctx, cancel := signal.NotifyContext(cmdContext(cmd), os.Interrupt)
				defer cancel()
				rec, err := env.ScanTape(ctx, args[0], engine.ScanOptions{})
				if err != nil {
					return scanError(err)
				}
				return printScan(cmd, rec, scanJSON)
			})
		},
	}
	scan.Flags().StringVar(&scanDir, "dir", "", "register the library in this folder first")
	scan.Flags().BoolVar(&scanJSON, "json", false, "print as JSON")

	cmd.AddCommand(list, show, add, export, imp, erase, scan)
	return cmd
}

// printErased prints what a tape erase did.
func printErased(cmd *cobra.Command, rec *engine.EraseRecord, asJSON bool) error {
	if asJSON {
		if rec.Tape == nil {
			return fmt.Errorf("tape %s: not found after the erase", rec.Barcode)
		}
		return printJSON(cmd.OutOrStdout(), erasedJSON{tapeJSON: toTapeJSON(*rec.Tape), ExpiredSavesets: nonNil64(rec.Expired)})
	}
	msg := "Tape " + rec.Barcode + " erased."
	if len(rec.Expired) > 0 {
		msg += fmt.Sprintf(" Savesets %v expired.", rec.Expired)
	}
	fmt.Fprintln(cmd.OutOrStdout(), msg)
	return nil
}

// eraseError is the error a tape erase ends the command with.
func eraseError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{Code: exitFailure, Err: errors.New("interrupted: the erase was canceled before it began; the tape is untouched")}
	}
	return err
}

// printScan prints what a tape scan found.
func printScan(cmd *cobra.Command, rec *engine.ScanRecord, asJSON bool) error {
	if asJSON {
		found := rec.Found
		if found == nil {
			found = []engine.ScanFound{}
		}
		return printJSON(cmd.OutOrStdout(), found)
	}
	tw := table(cmd.OutOrStdout())
	fmt.Fprintln(tw, "FILE\tKIND\tSAVESET\tPART\tCATALOG\tNOTE")
	added := 0
	for _, f := range rec.Found {
		cat := "-"
		if f.Added {
			cat = "rebuilt"
			added++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", f.File, f.Kind, idOrDash(f.SavesetID), f.Part, cat, f.Note)
	}
	tw.Flush()
	fmt.Fprintf(cmd.OutOrStdout(), "%d saveset records rebuilt from tape %s.\n", added, rec.Barcode)
	return nil
}

// scanError is the error a tape scan ends the command with.
func scanError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{Code: exitFailure, Err: errors.New("interrupted: the scan was canceled; the records it rebuilt stay")}
	}
	return err
}

func nonNil64(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}
