package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
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
			return withService(cmd, g, func(svc api.Service) error {
				drives, err := svc.Drives(cmdContext(cmd), vtl)
				if err != nil {
					return err
				}
				if listJSON {
					return printJSON(cmd.OutOrStdout(), drives)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "DRIVE\tBLOCK SIZE\tBUFFER\tTAPE\tIN USE")
				for _, d := range drives {
					fmt.Fprintf(tw, "%s/%d\t%s\t%s\t%s\t%v\n", d.Library, d.Number, units.FormatKiB(int64(d.BlockSizeBytes)),
						units.FormatKiB(int64(d.BufferSizeBytes)), dash(d.Barcode), d.Busy)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&vtl, "vtl", "", "only this library")
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")

	var blockSize, bufSize *sizeFlag
	var setJSON bool
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
			if libName == "" {
				libName = engine.DefaultLibrary
			}
			req := api.DriveUpdate{BlockSizeBytes: int(blockSize.v), BufferSizeBytes: int(bufSize.v)}
			return withService(cmd, g, func(svc api.Service) error {
				d, err := svc.SetDrive(cmdContext(cmd), libName, n, req)
				if err != nil {
					return err
				}
				if setJSON {
					return printJSON(cmd.OutOrStdout(), d)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Drive %s/%d: block %s, buffer %s\n", libName, n,
					units.FormatKiB(int64(d.BlockSizeBytes)), units.FormatKiB(int64(d.BufferSizeBytes)))
				return nil
			})
		},
	}
	blockSize = blockSizeVar(set.Flags(), "media block size, e.g. 256KiB")
	bufSize = sizeVar(set.Flags(), "buffer", 2*library.MinBlockSize, library.MaxBufferSize, "transfer-buffer memory, e.g. 8193KiB")
	set.Flags().BoolVar(&setJSON, "json", false, "print the drive as JSON")
	cmd.AddCommand(list, set)
	return cmd
}
