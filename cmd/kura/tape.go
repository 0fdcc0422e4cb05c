package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newTapeCmd) }

func newTapeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tape",
		Short: "Virtual tapes: list, show, add, label, export, import, load, unload, erase, scan; selftest of a real drive",
	}
	var (
		vtl, listPool string
		listJSON      bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List tapes: barcode, location, state, used/capacity, tape files, savesets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				tapes, err := svc.Tapes(cmdContext(cmd), api.TapeQuery{Library: vtl, Pool: listPool})
				if err != nil {
					return err
				}
				if listJSON {
					return printJSON(cmd.OutOrStdout(), tapes)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "BARCODE\tLIBRARY\tPOOL\tLOCATION\tSTATE\tUSED\tCAPACITY\tFILES\tSAVESETS")
				for _, t := range tapes {
					var ids []string
					for _, id := range t.Savesets {
						ids = append(ids, fmt.Sprint(id))
					}
					state := t.State
					if t.Error != "" {
						state += " (" + t.Error + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.Barcode, t.Library, orDash(t.Pool, "scratch"), t.Location, state,
						units.FormatSize(t.UsedBytes), units.FormatSize(t.CapacityBytes), t.Files, dash(strings.Join(ids, ",")))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&vtl, "vtl", "", "only this library")
	list.Flags().StringVar(&listPool, "pool", "", "only this tape pool (scratch: the scratch pool)")
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show BARCODE",
		Short: "Draw a tape's layout: label, tape files, blocks, checksums, filemarks, end of data",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				l, err := svc.TapeLayout(cmdContext(cmd), args[0])
				if err != nil {
					return err
				}
				if showJSON {
					if l.FilesError != "" {
						return errors.New(l.FilesError)
					}
					return printJSON(cmd.OutOrStdout(), l)
				}
				return describeTape(cmd.OutOrStdout(), l)
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
			lib := vtl
			if lib == "" {
				lib = engine.DefaultLibrary
			}
			return withService(cmd, g, func(svc api.Service) error {
				tapes, err := svc.AddTapes(cmdContext(cmd), lib, api.TapeAdd{Count: count})
				if err != nil {
					return err
				}
				if addJSON {
					return printJSON(cmd.OutOrStdout(), tapes)
				}
				var codes []string
				for _, t := range tapes {
					codes = append(codes, t.Barcode)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Added %s\n", strings.Join(codes, ", "))
				return nil
			})
		},
	}
	add.Flags().StringVar(&vtl, "vtl", "", "library (default: the default library)")
	intVar(add.Flags(), &count, "count", 1, 1, library.MaxSlots, "how many tapes")
	add.Flags().BoolVar(&addJSON, "json", false, "print the new tapes as JSON (as tape list does)")

	// move runs one move of a tape and says where it went.
	move := func(use, short string, done func(t *api.Tape) string, op func(ctx context.Context, svc api.Service, barcode string) (*api.Tape, error)) *cobra.Command {
		var asJSON bool
		c := &cobra.Command{
			Use: use, Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withService(cmd, g, func(svc api.Service) error {
					t, err := op(cmdContext(cmd), svc, args[0])
					if err != nil {
						return err
					}
					if asJSON {
						return printJSON(cmd.OutOrStdout(), t)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "Tape %s %s.\n", t.Barcode, done(t))
					return nil
				})
			},
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print the tape as JSON (as tape list does)")
		return c
	}
	export := move("export BARCODE", "Move a tape to the mail slot: it goes offline",
		func(*api.Tape) string { return "is in the mail slot (offline)" },
		func(ctx context.Context, svc api.Service, bc string) (*api.Tape, error) {
			return svc.ExportTape(ctx, bc)
		})
	imp := move("import BARCODE", "Move a tape from the mail slot back into a free slot",
		func(*api.Tape) string { return "is back in a slot" },
		func(ctx context.Context, svc api.Service, bc string) (*api.Tape, error) {
			return svc.ImportTape(ctx, bc)
		})
	var pool string
	label := move("label BARCODE", "Put a tape into a tape pool (scratch: back to scratch); refused while it holds unexpired savesets",
		func(t *api.Tape) string { return "is in pool " + orDash(t.Pool, api.Scratch) },
		func(ctx context.Context, svc api.Service, bc string) (*api.Tape, error) {
			return svc.LabelTape(ctx, bc, api.TapeLabelRequest{Pool: pool})
		})
	label.Flags().StringVar(&pool, "pool", "", "the pool (scratch for the scratch pool)")
	label.PreRunE = func(cmd *cobra.Command, args []string) error {
		if pool == "" {
			return usageErrorf("say which pool: --pool NAME (--pool %s returns the tape to scratch)", api.Scratch)
		}
		return nil
	}
	var drive int
	load := move("load BARCODE", "Move a tape into a drive of its library (refused while a job holds the drive)",
		func(t *api.Tape) string { return fmt.Sprintf("is in drive %d of library %s", t.Drive, t.Library) },
		func(ctx context.Context, svc api.Service, bc string) (*api.Tape, error) {
			return svc.LoadTape(ctx, bc, api.TapeLoad{Drive: drive})
		})
	intVar(load.Flags(), &drive, "drive", 1, 1, library.MaxDrives, "the drive, by its number in the tape's library")
	unload := move("unload BARCODE", "Move a tape from its drive back to its home slot (refused while a job holds the drive)",
		func(t *api.Tape) string { return "is back in " + t.Location },
		func(ctx context.Context, svc api.Service, bc string) (*api.Tape, error) {
			return svc.UnloadTape(ctx, bc)
		})
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

	cmd.AddCommand(list, show, add, label, export, imp, load, unload, erase, scan, newTapeSelftestCmd())
	return cmd
}

// describeTape draws a tape's layout as `tape show` does (tape.Describe),
// from what the service read off the tape.
func describeTape(w io.Writer, l *api.TapeLayout) error {
	lb := tape.Label{Version: l.Label.Version, Barcode: l.Label.Barcode, Library: l.Label.Library, BlockSize: l.Label.BlockSize,
		Capacity: l.Label.Capacity, EarlyWarning: l.Label.EarlyWarning, Created: l.Label.Created, Labelled: l.Label.Labelled,
		Generation: l.Label.Generation}
	files := make([]tape.FileInfo, 0, len(l.Files))
	for _, f := range l.Files {
		files = append(files, tape.FileInfo{Number: f.Number, Status: tape.FileStatus(f.Status), Bytes: f.Bytes, Blocks: f.Blocks,
			BlockSize: f.BlockSizeBytes, CRCTable: f.CRCTable, Written: f.Written, Tag: f.Tag})
	}
	var damage, ferr error
	if l.LabelDamage != "" {
		damage = errors.New(l.LabelDamage)
	}
	if l.FilesError != "" {
		ferr = errors.New(l.FilesError)
	}
	return tape.DescribeLayout(w, lb, damage, files, ferr)
}

// printErased prints what a tape erase did.
func printErased(cmd *cobra.Command, rec *engine.EraseRecord, asJSON bool) error {
	if asJSON {
		if rec.Tape == nil {
			return fmt.Errorf("tape %s: not found after the erase", rec.Barcode)
		}
		return printJSON(cmd.OutOrStdout(), erasedJSON{tapeJSON: service.Tape(*rec.Tape), ExpiredSavesets: nonNil64(rec.Expired)})
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
