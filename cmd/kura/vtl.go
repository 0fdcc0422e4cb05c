package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newVtlCmd) }

func newVtlCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vtl",
		Short: "Virtual tape libraries: slots, drives and barcoded tapes on disk",
	}
	var (
		cfg                          library.Config
		tapeSize, blockSize, bufSize *sizeFlag
		chunkSize                    *sizeFlag
		s3URL, changer, onNode       string
		driveDevs                    []string
		createJSON                   bool
	)
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a library with labelled blank tapes in its slots, a mail slot and drives",
		Long: `Create a virtual tape library: a folder holding N labelled blank tapes in its
slots, a mail slot for export/import, and drives with their media block size
and transfer-buffer memory (the seed's per-drive tuning).

Defaults: 8 slots, 2 drives, 64 GiB tapes, block 256 KiB, buffer 8193 KiB —
the combination the seed found fastest and Kura's benchmarks confirm
(docs/benchmarks.md).

With --s3 the tapes live in an S3-compatible bucket instead of the library
folder (which keeps the configuration and the inventory): each tape is the
objects under PREFIX/BARCODE/, each tape file numbered chunk objects of
--chunk-size. Credentials come from AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE —
never from the command line. Created again over a bucket that holds the
library's tapes (a lost home), the library takes them back into its slots.

With --changer and --drive it is a real tape library: the SCSI media
changer (driven through the mtx command, which must be installed) and its
st drives, non-rewinding nodes, in the changer's drive order. Its slots,
mail slots and cartridges are the changer's (cleaning cartridges, CLN…,
are left alone); nothing is loaded or written until a backup needs a
tape, and then a blank cartridge is labelled for Kura. Each device is
checked first: a missing one is an error and nothing is registered.

With --node the library is created on that storage node (kura node enroll),
in the node's home: its tapes and drives are the node's, the catalog stays
with the server, and backups, restores, verifies and copies run on it like
on any library. With --node and --s3 the node reaches the bucket with the
credentials of its own environment (set them for kura node run); with
--node and --changer the changer and drives are the node's devices. Through
a server only.`,
		Example: `  kura vtl create lib1 --dir /backup/lib1 --slots 20 --drives 4 --tape-size 100GiB
  kura vtl create small --tape-size 1GiB --block-size 32KiB --buffer 257KiB
  kura vtl create cloud --s3 https://s3.example.com/backups/kura --chunk-size 64MiB
  kura vtl create lto --changer /dev/sg3 --drive /dev/nst0 --drive /dev/nst1
  kura vtl create far --node sn1 --slots 20 --drives 2
  kura vtl create farcloud --node sn1 --s3 https://s3.example.com/backups/far`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Flags not given are 0: the library's defaults.
			req := api.LibraryCreate{Name: args[0], Dir: cfg.Dir, Slots: cfg.Slots, Drives: cfg.Drives, TapeSizeBytes: tapeSize.v,
				BlockSizeBytes: int(blockSize.v), BufferSizeBytes: int(bufSize.v), BarcodePrefix: cfg.BarcodePrefix, S3: s3URL, ChunkSizeBytes: chunkSize.v,
				Changer: changer, DriveDevices: driveDevs, Node: onNode}
			return withService(cmd, g, func(svc api.Service) error {
				l, err := svc.CreateLibrary(cmdContext(cmd), req)
				if err != nil {
					return err
				}
				if createJSON {
					return printJSON(cmd.OutOrStdout(), l)
				}
				c := l.Config
				fmt.Fprintf(cmd.OutOrStdout(), "Library %s created in %s: %s, %s, %s, %s tapes, block %s, buffer %s\n",
					l.Name, libraryDir(*l), units.Count(int64(c.Slots), "slot"), units.Count(int64(c.Drives), "drive"), units.Count(int64(c.MailSlots), "mail slot"),
					units.FormatSize(c.TapeSizeBytes), units.FormatKiB(int64(c.BlockSizeBytes)), units.FormatKiB(int64(c.BufferSizeBytes)))
				if c.Media != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "Its tapes are kept on %s\n", c.Media)
				}
				return nil
			})
		},
	}
	f := create.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "folder of the library (default: in the Kura home)")
	intVar(f, &cfg.Slots, "slots", 0, 1, library.MaxSlots, "storage slots, each with a blank tape (default 8)")
	intVar(f, &cfg.Drives, "drives", 0, 1, library.MaxDrives, "virtual drives (default 2)")
	tapeSize = sizeVar(f, "tape-size", library.MinTapeSize, library.MaxTapeSize, "capacity of each tape, e.g. 64GiB (default 64GiB)")
	blockSize = blockSizeVar(f, "media block size of the drives (default 256KiB)")
	bufSize = sizeVar(f, "buffer", 2*library.MinBlockSize, library.MaxBufferSize, "transfer-buffer memory per drive (default 8193KiB)")
	f.BoolVar(&createJSON, "json", false, "print the library as JSON")
	f.StringVar(&cfg.BarcodePrefix, "barcode-prefix", "", "barcode prefix of the tapes (default KUR)")
	f.StringVar(&s3URL, "s3", "", "keep the tapes in an S3 bucket: http[s]://HOST[:PORT]/BUCKET[/PREFIX] (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a credentials file)")
	chunkSize = sizeVar(f, "chunk-size", library.MinBlockSize, 5<<30, "size of the chunk objects of a tape file on S3 (default 64MiB)")
	f.StringVar(&changer, "changer", "", "a real tape library: its SCSI media changer device, e.g. /dev/sg3 (needs mtx)")
	f.StringVar(&onNode, "node", "", "create the library on this storage node, in its home (kura node list)")
	f.StringArrayVar(&driveDevs, "drive", nil, "a drive of the tape library --changer: its st device, e.g. /dev/nst0 (repeat, in the changer's drive order)")

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List libraries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				libs, err := svc.Libraries(cmdContext(cmd))
				if err != nil {
					return err
				}
				if listJSON {
					return printJSON(cmd.OutOrStdout(), libs)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "NAME\tSLOTS\tDRIVES\tTAPES\tTAPE SIZE\tBLOCK\tBUFFER\tDIR")
				for _, l := range libs {
					if l.Error != "" || l.Config == nil {
						fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s (error: %s)\n", l.Name, libraryDir(l), l.Error)
						continue
					}
					c, tapes := l.Config, 0
					if l.Tapes != nil {
						tapes = *l.Tapes
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", l.Name, c.Slots, c.Drives, tapes, units.FormatSize(c.TapeSizeBytes),
						units.FormatKiB(int64(c.BlockSizeBytes)), units.FormatKiB(int64(c.BufferSizeBytes)), libraryDir(l))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print as JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a library: slots, drives, mail slots and what they hold",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				l, err := svc.Library(cmdContext(cmd), args[0])
				if err != nil {
					return err
				}
				if showJSON {
					return printJSON(cmd.OutOrStdout(), l)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Library %s  (%s)\n", l.Name, l.Dir)
				fmt.Fprintf(out, "  tape size %s, early warning %s before the end\n", units.FormatSize(l.Config.TapeSizeBytes), units.FormatSize(l.Config.EarlyWarningMarginBytes))
				fmt.Fprintln(out, "  Drives")
				for _, d := range l.Drives {
					busy := ""
					if d.Busy {
						busy = "  (in use)"
					}
					fmt.Fprintf(out, "    drive %d  block %s  buffer %s  %s%s\n", d.Number, units.FormatKiB(int64(d.BlockSizeBytes)),
						units.FormatKiB(int64(d.BufferSizeBytes)), orEmpty(d.Barcode, "empty"), busy)
				}
				fmt.Fprintln(out, "  Slots")
				for _, s := range l.Slots {
					what := orEmpty(s.Barcode, "empty")
					if s.Barcode == "" && s.Reserved != "" {
						what = "(" + s.Reserved + " is in a drive)"
					}
					fmt.Fprintf(out, "    slot %-3d %s\n", s.Number, what)
				}
				fmt.Fprintln(out, "  Mail slots")
				if l.MailSlots != nil {
					for _, s := range *l.MailSlots {
						fmt.Fprintf(out, "    mail %-3d %s\n", s.Number, orEmpty(s.Barcode, "empty"))
					}
				}
				return nil
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print as JSON")

	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a library and its tapes (refused while it holds unexpired savesets)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				return svc.RemoveLibrary(cmdContext(cmd), args[0])
			})
		},
	}
	var registerJSON bool
	add := &cobra.Command{
		Use:   "register DIR",
		Short: "Register an existing library folder in this catalog (e.g. after losing the catalog)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, g, func(svc api.Service) error {
				l, err := svc.RegisterLibrary(cmdContext(cmd), api.LibraryRegister{Dir: args[0]})
				if err != nil {
					return err
				}
				if registerJSON {
					return printJSON(cmd.OutOrStdout(), l)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Library %s registered; run `kura tape scan BARCODE` to rebuild its savesets.\n", l.Name)
				return nil
			})
		},
	}
	add.Flags().BoolVar(&registerJSON, "json", false, "print the library as JSON")
	cmd.AddCommand(create, list, show, rm, add)
	return cmd
}

func orEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// libraryDir is where a library is: its folder, on a storage node NODE:DIR.
func libraryDir(l api.Library) string {
	if l.Node != "" {
		return l.Node + ":" + l.Dir
	}
	return l.Dir
}
