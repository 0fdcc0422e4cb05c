package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/service"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newDriveCmd) }

func newDriveCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drive",
		Short: "Virtual drives and their tuning (media block size, transfer-buffer memory)",
	}
	var (
		vtl      string
		listJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List drives: block size, buffer memory, loaded tape, in use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				libs, err := env.Catalog.Libraries()
				if err != nil {
					return err
				}
				if _, err := env.Catalog.Library(vtl); vtl != "" && errors.Is(err, catalog.ErrNotFound) {
					return engine.Missing("library", "no library named %q", vtl)
				}
				type row struct {
					Library string
					library.DriveStatus
				}
				rows := []row{}
				for _, rec := range libs {
					if vtl != "" && rec.Name != vtl {
						continue
					}
					lib, err := library.Open(rec.Dir)
					if err != nil {
						return fmt.Errorf("library %s: %w", rec.Name, err)
					}
					ds, err := lib.Drives()
					if err != nil {
						return err
					}
					for _, d := range ds {
						rows = append(rows, row{Library: rec.Name, DriveStatus: d})
					}
				}
				if listJSON {
					out := []api.Drive{}
					for _, r := range rows {
						out = append(out, service.Drive(r.Library, r.DriveStatus))
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "DRIVE\tBLOCK SIZE\tBUFFER\tTAPE\tIN USE")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s/%d\t%s\t%s\t%s\t%v\n", r.Library, r.Number, units.FormatKiB(int64(r.BlockSize)),
						units.FormatKiB(int64(r.BufferSize)), dash(r.Barcode), r.Busy)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&vtl, "vtl", "", "only this library")
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")

	var blockSize, bufSize *sizeFlag
	set := &cobra.Command{
		Use:   "set LIB/DRIVE",
		Short: "Tune a drive: media block size and transfer-buffer memory",
		Long: `Set a drive's media block size (bytes per write and per checksum) and the
memory assigned to its transfer buffers (a ring of block-size buffers between
the stream and the writer), as NetVault does per drive. Tape files written
from now on use them; readers adapt to whatever was written.`,
		Example: `  kura drive set default/1 --block-size 256KiB --buffer 8193KiB`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			libName, num, ok := strings.Cut(args[0], "/")
			n, err := strconv.Atoi(num)
			if !ok || err != nil || n <= 0 {
				return usageErrorf("name the drive as LIBRARY/NUMBER, e.g. default/1")
			}
			if blockSize.v == 0 && bufSize.v == 0 {
				return usageErrorf("give --block-size and/or --buffer")
			}
			return withEnv(g, func(env *engine.Env) error {
				lib, err := env.OpenLibrary(libName)
				if err != nil {
					return err
				}
				ds, err := lib.Drives()
				if err != nil {
					return err
				}
				if n > len(ds) {
					return library.NoDrive(libName, n, len(ds))
				}
				bs, buf := ds[n-1].BlockSize, ds[n-1].BufferSize
				if blockSize.v != 0 {
					bs = int(blockSize.v)
				}
				if bufSize.v != 0 {
					buf = int(bufSize.v)
				}
				if err := lib.SetDrive(n, bs, buf); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Drive %s/%d: block %s, buffer %s\n", libName, n, units.FormatKiB(int64(bs)), units.FormatKiB(int64(buf)))
				return nil
			})
		},
	}
	blockSize = blockSizeVar(set.Flags(), "media block size, e.g. 256KiB")
	bufSize = sizeVar(set.Flags(), "buffer", 2*library.MinBlockSize, library.MaxBufferSize, "transfer-buffer memory, e.g. 8193KiB")
	cmd.AddCommand(list, set)
	return cmd
}
