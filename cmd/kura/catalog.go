package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newCatalogCmd) }

func newCatalogCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "The catalog's own backups: write one to tape, find them, restore one after losing the catalog; move it to PostgreSQL",
	}

	var (
		vtl        string
		drive      int
		backupJSON bool
	)
	backup := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent snapshot of the catalog to a tape",
		Long: `Write a consistent snapshot of the catalog as one tape file on a writable tape
of a library, in a drive of its own; safe while backups run. The server does
this after its daily prune. The tape file is self-describing: "zstd -dc" of it
gives catalog.db back, and "kura catalog restore" finds it from the library
folders alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if srv, err := g.server(); err != nil {
				return err
			} else if srv != nil {
				defer srv.Close()
				j, err := runServerJob(cmd, srv, api.JobRequest{Kind: api.KindCatalog, Library: vtl, Drive: drive}, backupJSON)
				if err != nil {
					return err
				}
				if end := serverJobError(j); end != nil {
					return catalogBackupError(end)
				}
				var rec engine.CatalogBackupResult
				if _, err := jobResult(j, &rec); err != nil {
					return err
				}
				return printCatalogBackup(cmd, &rec, backupJSON)
			}
			return withEnv(g, func(env *engine.Env) error {
				ctx, cancel := signal.NotifyContext(cmdContext(cmd), os.Interrupt)
				defer cancel()
				rec, err := env.BackupCatalog(ctx, engine.CatalogBackupOptions{Library: vtl, Drive: drive})
				if err != nil {
					return catalogBackupError(err)
				}
				return printCatalogBackup(cmd, rec, backupJSON)
			})
		},
	}
	backup.Flags().StringVar(&vtl, "vtl", "", "library (default: the default library)")
	intVar(backup.Flags(), &drive, "drive", 0, 1, library.MaxDrives, "drive number (default: any free drive)")
	backup.Flags().BoolVar(&backupJSON, "json", false, "print as JSON")

	var (
		dirs     []string
		listJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the catalog backups on the tapes of library folders, newest first (needs no catalog)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				found, err := svc.CatalogCopies(cmdContext(cmd), dirs)
				if err != nil {
					return err
				}
				copies := found.Copies
				if listJSON {
					return printJSON(cmd.OutOrStdout(), copies)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TAPE\tFILE\tLIBRARY\tCREATED\tSAVESETS\tLAST ID\tSIZE\tSTATE")
				for _, c := range copies {
					if c.Label == nil {
						fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t-\t-\t-\tunreadable: %s\n", c.Barcode, c.File, c.Library,
							c.Written.Local().Format("2006-01-02 15:04:05"), c.Error)
						continue
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\tlabel ok\n", c.Barcode, c.File, c.Library,
						c.Label.Created.Local().Format("2006-01-02 15:04:05"), c.Label.Savesets, c.Label.LastSavesetID,
						units.FormatSize(c.Label.Size))
				}
				tw.Flush()
				printNotes(cmd.OutOrStdout(), found.Notes)
				if len(copies) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "No catalog backups found.")
				}
				return nil
			})
		},
	}
	list.Flags().StringArrayVar(&dirs, "vtl-dir", nil, "a library folder to search (repeat; default: every library in the home's vtl folder)")
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")

	var (
		ropts       engine.CatalogRestoreOptions
		restoreJSON bool
	)
	restore := &cobra.Command{
		Use:   "restore",
		Short: "Restore the catalog from the newest good catalog backup on tape (after losing it)",
		Long: `Find the catalog backups on the tapes of library folders (default: every
library in the home's vtl folder), check the newest one (tape block CRCs, zstd
checksums, SHA-256) and install it as the home's catalog; a damaged one is
skipped for the next newest. Then the library folders are matched with the
libraries the catalog records, and the tapes written after the backup are
scanned, so that the savesets made since come back too (--no-scan leaves that
to "kura tape scan").

It runs on the server's machine, with the server stopped, and never through
the server. A home whose catalog holds savesets or jobs is replaced only with
--force (the old catalog is kept as catalog.db.replaced-TIME).`,
		Example: `  kura catalog restore
  kura catalog restore --vtl-dir /backup/lib1 --vtl-dir /backup/offsite
  kura catalog restore --tape KUR003 --file 12 --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ropts.File != 0 && ropts.Barcode == "" {
				return usageErrorf("--file needs --tape")
			}
			if ropts.File < 0 {
				return usageErrorf("--file must be a tape file number (1 or more)")
			}
			return withEnv(g, func(env *engine.Env) error {
				res, err := env.RestoreCatalog(cmdContext(cmd), ropts)
				if res == nil && err != nil {
					return err
				}
				if restoreJSON {
					// The notes as the user reads them, with the commands.
					out := struct {
						*engine.CatalogRestoreResult
						Notes []string `json:"notes,omitempty"`
					}{res, catalogNotes(res.Notes)}
					if perr := printJSON(cmd.OutOrStdout(), out); perr != nil {
						return perr
					}
				} else {
					printCatalogRestore(cmd.OutOrStdout(), res)
				}
				if err != nil {
					return fmt.Errorf("the catalog was restored, but: %w", err)
				}
				return nil
			})
		},
	}
	rf := restore.Flags()
	rf.StringArrayVar(&ropts.LibraryDirs, "vtl-dir", nil, "a library folder to search and register (repeat; default: every library in the home's vtl folder)")
	rf.StringVar(&ropts.Barcode, "tape", "", "restore a catalog backup on this tape (the newest on it, or --file)")
	intVar(rf, &ropts.File, "file", 0, 1, math.MaxInt32, "the tape file number of the catalog backup (with --tape)")
	rf.BoolVar(&ropts.Force, "force", false, "replace a catalog that holds savesets or jobs (kept as catalog.db.replaced-TIME)")
	rf.BoolVar(&ropts.NoScan, "no-scan", false, "do not scan the tapes written after the backup; list them instead")
	rf.BoolVar(&restoreJSON, "json", false, "print as JSON")

	var (
		migrateTo   string
		migrateJSON bool
	)
	migrate := &cobra.Command{
		Use:   "migrate --to postgres://USER@HOST/DB",
		Short: "Copy the catalog into an empty PostgreSQL database (or SQLite file), checked table by table",
		Long: `Copy every record of the catalog (the home's catalog.db, or the one
KURA_CATALOG names) into the catalog --to names: a postgres:// URL, or the path
of a SQLite file. The target must be empty: a database just created (its
tables are made here), or a catalog that holds no records; one that holds any
is refused and left as it was. The copy is one transaction: all or nothing.
Its ID counters are raised to the original's, so that IDs of deleted
savesets and jobs are never given out again.

Then every table is counted and summed (SHA-256 over its rows, in key order,
computed the same way on both databases) on both sides, and the figures are
printed; a difference fails the command.

Stop the server first (what it writes during the copy would not be copied),
then start it with --catalog URL (or KURA_CATALOG). It runs on the server's
machine, never through the server. The password is best kept out of the URL:
PGPASSWORD or ~/.pgpass (PGPASSFILE) are read as by psql.`,
		Example: `  kura catalog migrate --to postgres://kura@db.example.com/kura
  KURA_CATALOG=postgres://kura@db.example.com/kura kura catalog migrate --to /var/lib/kura/catalog-copy.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if migrateTo == "" {
				return usageErrorf("--to is required: the postgres:// URL of an empty database")
			}
			return withEnv(g, func(env *engine.Env) error {
				dst, err := catalog.Open(migrateTo)
				if err != nil {
					return err
				}
				defer dst.Close()
				sums, err := env.Catalog.CopyTo(dst)
				if err != nil {
					return err
				}
				if migrateJSON {
					return printJSON(cmd.OutOrStdout(), sums)
				}
				w := cmd.OutOrStdout()
				tw := table(w)
				fmt.Fprintln(tw, "TABLE\tROWS\tSHA-256 (both sides)")
				var rows int64
				for _, s := range sums {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", s.Table, s.Rows, s.Sum)
					rows += s.Rows
				}
				tw.Flush()
				fmt.Fprintf(w, "Catalog %s copied to %s: %s in %d tables, the same count and checksum on both sides.\n",
					env.Catalog, dst, units.Count(rows, "row"), len(sums))
				if catalog.IsURL(migrateTo) {
					fmt.Fprintf(w, "Now run the server on it: kura server --catalog %s (or set KURA_CATALOG).\n", dst)
				}
				return nil
			})
		},
	}
	migrate.Flags().StringVar(&migrateTo, "to", "", "the empty catalog to copy into: a postgres:// URL (or a SQLite file)")
	migrate.Flags().BoolVar(&migrateJSON, "json", false, "print the tables' row counts and checksums as JSON")

	cmd.AddCommand(backup, list, restore, migrate)
	return cmd
}

func printCatalogRestore(w io.Writer, res *engine.CatalogRestoreResult) {
	from := res.From
	l := from.Label
	when := l.Created.Local().Format("2006-01-02 15:04:05")
	fmt.Fprintf(w, "Catalog restored from tape %s, tape file %d (library %s): the catalog of %s, %s (last ID %d).\n",
		from.Barcode, from.File, from.Library, when, units.Count(int64(l.Savesets), "saveset"), l.LastSavesetID)
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "Skipped the catalog backup on tape %s, tape file %d: %s\n", s.Barcode, s.File, s.Error)
	}
	if len(res.Scanned) > 0 {
		fmt.Fprintf(w, "Scanned %s %s, written after the backup: ", countWord(len(res.Scanned), "tape"), strings.Join(res.Scanned, ", "))
		if len(res.Rebuilt) == 0 {
			fmt.Fprintln(w, "no saveset records to rebuild.")
		} else {
			ids := make([]string, len(res.Rebuilt))
			for i, id := range res.Rebuilt {
				ids[i] = fmt.Sprint(id)
			}
			fmt.Fprintf(w, "rebuilt %s %s.\n", countWord(len(ids), "saveset"), strings.Join(ids, ", "))
		}
	}
	if len(res.Rescan) > 0 {
		fmt.Fprintf(w, "Savesets written after %s are not in the catalog yet: they come back with `kura tape scan`. Before any new backup, run:\n", when)
		for _, bc := range res.Rescan {
			fmt.Fprintf(w, "  kura tape scan %s\n", bc)
		}
	} else {
		fmt.Fprintf(w, "Savesets written after %s on tapes not in these libraries come back with `kura tape scan BARCODE`.\n", when)
	}
	printNotes(w, catalogNotes(res.Notes))
}

func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, "Note:", n)
	}
}

// printCatalogBackup prints where a catalog backup went.
func printCatalogBackup(cmd *cobra.Command, rec *engine.CatalogBackupResult, asJSON bool) error {
	if asJSON {
		return printJSON(cmd.OutOrStdout(), rec)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Catalog backed up to tape %s, tape file %d (library %s, job %d): %s (last ID %d), %s on tape.\n",
		rec.Barcode, rec.File, rec.Library, rec.JobID, units.Count(int64(rec.Savesets), "saveset"), rec.LastSavesetID, units.FormatSize(rec.TapeBytes))
	return nil
}

// catalogBackupError is the error a catalog backup ends the command with.
func catalogBackupError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{Code: exitFailure, Err: errors.New("interrupted: the catalog backup was canceled and not recorded; earlier catalog backups are untouched")}
	}
	return err
}
