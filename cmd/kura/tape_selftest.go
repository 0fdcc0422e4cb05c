package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/tape/sttape"
	"github.com/kura-backup/kura/internal/units"
)

// openTapeDrive opens a real drive; tests put an emulated one here.
var openTapeDrive = sttape.OpenDrive

func newTapeSelftestCmd() *cobra.Command {
	var (
		write     bool
		asJSON    bool
		size      *sizeFlag
		blockSize *sizeFlag
	)
	cmd := &cobra.Command{
		Use:   "selftest DEVICE",
		Short: "Check a physical tape drive (read only unless --write)",
		Long: `Check a tape drive on the Linux st driver, e.g. /dev/nst0 (the non-rewinding
node): that it answers, whether a tape is loaded and write-protected, the
driver's block size setting, and the Kura label and tape files on the tape if
it has any. Nothing is written unless --write is given.

With --write, on a blank tape only (one that holds no data; a tape with a
label or other data is refused), it writes one tape file of --size bytes,
reads it back with every block's CRC checked, compares it, reports the write
and read rates, and leaves the tape blank again (a filemark at its
beginning). Hardware compression is left as the drive has it.

Exit status: 0 the drive is fine, 1 it could not be checked (no tape, not a
tape device, a tape --write refuses), 2 usage, 4 the tape file read back
differs from what was written.`,
		Example: `  kura tape selftest /dev/nst0
  kura tape selftest /dev/nst0 --write --size 1GiB`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := openTapeDrive(args[0], write)
			if err != nil {
				return fmt.Errorf("open %s: %w", args[0], err)
			}
			defer d.Close()
			rep, err := sttape.SelfTest(d, sttape.SelfTestOptions{Write: write, Bytes: size.v, BlockSize: int(blockSize.v)})
			if asJSON {
				if jerr := printJSON(cmd.OutOrStdout(), rep); jerr != nil {
					return jerr
				}
			} else {
				printSelftest(cmd.OutOrStdout(), args[0], rep)
			}
			if errors.Is(err, sttape.ErrMismatch) {
				return &exitError{Code: exitVerify, Err: err}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&write, "write", false, "write one tape file on a blank tape, read it back and compare")
	size = sizeVar(cmd.Flags(), "size", 1, 1<<40, "bytes the write check writes (default 64MiB)")
	blockSize = sizeVar(cmd.Flags(), "block-size", 512, 16<<20, "block size of the write check (default 256KiB)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printSelftest(w io.Writer, dev string, r sttape.SelfTestReport) {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	bs := "variable"
	if r.BlockSize > 0 {
		bs = units.FormatSize(int64(r.BlockSize))
	}
	fmt.Fprintf(w, "Drive %s\n", dev)
	fmt.Fprintf(w, "  Tape loaded      %s\n", yes(r.Online))
	if !r.Online {
		return
	}
	fmt.Fprintf(w, "  Write-protected  %s\n", yes(r.WriteProtected))
	fmt.Fprintf(w, "  Block size       %s (driver setting)\n", bs)
	fmt.Fprintf(w, "  Position         file %d, block %d\n", r.Status.FileNo, r.Status.BlockNo)
	switch {
	case r.Blank:
		fmt.Fprintf(w, "  Label            none (blank tape)\n")
	case r.Label != nil:
		fmt.Fprintf(w, "  Label            %s, library %s, generation %d, block %s\n", r.Label.Barcode, r.Label.Library,
			r.Label.Generation, units.FormatSize(int64(r.Label.BlockSize)))
		fmt.Fprintf(w, "  Tape files       %d\n", len(r.Files))
	default:
		fmt.Fprintf(w, "  Label            not a Kura tape\n")
	}
	if r.LabelProblem != "" {
		fmt.Fprintf(w, "  Label problem    %s\n", r.LabelProblem)
	}
	if r.FilesProblem != "" {
		fmt.Fprintf(w, "  Tape files       %s\n", r.FilesProblem)
	}
	if r.Wrote > 0 || r.WriteProblems != "" {
		fmt.Fprintf(w, "  Write check      %s in blocks of %s: written %.1f MB/s, read %.1f MB/s, read back %s\n",
			units.FormatSize(r.Wrote), units.FormatSize(int64(r.WriteBlock)), r.WriteRate/1e6, r.ReadRate/1e6, map[bool]string{true: "identical", false: "DIFFERENT"}[r.Match])
		fmt.Fprintf(w, "  Left blank       %s\n", yes(r.LeftBlank))
	}
}
