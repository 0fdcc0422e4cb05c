package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/engine"
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
(docs/benchmarks.md).`,
		Example: `  kura vtl create lib1 --dir /backup/lib1 --slots 20 --drives 4 --tape-size 100GiB
  kura vtl create small --tape-size 1GiB --block-size 32KiB --buffer 257KiB`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Name = args[0]
			// Flags not given are 0: the library's defaults.
			cfg.TapeSize, cfg.BlockSize, cfg.BufferSize = tapeSize.v, int(blockSize.v), int(bufSize.v)
			return withEnv(g, func(env *engine.Env) error {
				lib, err := env.CreateLibrary(cfg)
				if err != nil {
					return err
				}
				c := lib.Config()
				if createJSON {
					cj := toLibraryConfigJSON(c)
					return printJSON(cmd.OutOrStdout(), libraryJSON{Name: c.Name, Dir: c.Dir, Config: &cj})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Library %s created in %s: %s, %s, %s, %s tapes, block %s, buffer %s\n",
					c.Name, c.Dir, units.Count(int64(c.Slots), "slot"), units.Count(int64(c.Drives), "drive"), units.Count(int64(c.MailSlots), "mail slot"), units.FormatSize(c.TapeSize), units.FormatKiB(int64(c.BlockSize)), units.FormatKiB(int64(c.BufferSize)))
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

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List libraries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				libs, err := env.Catalog.Libraries()
				if err != nil {
					return err
				}
				type row struct {
					Name   string         `json:"name"`
					Dir    string         `json:"dir"`
					Config library.Config `json:"config"`
					Tapes  int            `json:"tapes"`
					Error  string         `json:"error,omitempty"`
				}
				rows := []row{}
				for _, rec := range libs {
					r := row{Name: rec.Name, Dir: rec.Dir}
					if lib, err := library.Open(rec.Dir); err != nil {
						r.Error = err.Error()
					} else {
						r.Config = lib.Config()
						t, _ := lib.Tapes()
						r.Tapes = len(t)
					}
					rows = append(rows, r)
				}
				if listJSON {
					out := []libraryJSON{}
					for _, r := range rows {
						l := libraryJSON{Name: r.Name, Dir: r.Dir, Error: r.Error}
						if r.Error == "" {
							c, n := toLibraryConfigJSON(r.Config), r.Tapes
							l.Config, l.Tapes = &c, &n
						}
						out = append(out, l)
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "NAME\tSLOTS\tDRIVES\tTAPES\tTAPE SIZE\tBLOCK\tBUFFER\tDIR")
				for _, r := range rows {
					if r.Error != "" {
						fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s (error: %s)\n", r.Name, r.Dir, r.Error)
						continue
					}
					c := r.Config
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Name, c.Slots, c.Drives, r.Tapes, units.FormatSize(c.TapeSize),
						units.FormatKiB(int64(c.BlockSize)), units.FormatKiB(int64(c.BufferSize)), r.Dir)
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
			return withEnv(g, func(env *engine.Env) error {
				lib, err := env.OpenLibrary(args[0])
				if err != nil {
					return err
				}
				st, err := lib.Status()
				if err != nil {
					return err
				}
				if showJSON {
					c := toLibraryConfigJSON(lib.Config())
					l := libraryJSON{Name: lib.Config().Name, Dir: lib.Config().Dir, Config: &c, Slots: st.Slots, Drives: []driveJSON{},
						MailSlots: &st.MailSlots}
					for _, d := range st.Drives {
						l.Drives = append(l.Drives, toDriveJSON(l.Name, d))
					}
					if l.Slots == nil {
						l.Slots = []library.SlotStatus{}
					}
					if st.MailSlots == nil {
						l.MailSlots = &[]library.SlotStatus{}
					}
					return printJSON(cmd.OutOrStdout(), l)
				}
				c := lib.Config()
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Library %s  (%s)\n", c.Name, c.Dir)
				fmt.Fprintf(out, "  tape size %s, early warning %s before the end\n", units.FormatSize(c.TapeSize), units.FormatSize(c.EarlyWarningMargin))
				fmt.Fprintln(out, "  Drives")
				for _, d := range st.Drives {
					busy := ""
					if d.Busy {
						busy = "  (in use)"
					}
					fmt.Fprintf(out, "    drive %d  block %s  buffer %s  %s%s\n", d.Number, units.FormatKiB(int64(d.BlockSize)),
						units.FormatKiB(int64(d.BufferSize)), orEmpty(d.Barcode, "empty"), busy)
				}
				fmt.Fprintln(out, "  Slots")
				for _, s := range st.Slots {
					what := orEmpty(s.Barcode, "empty")
					if s.Barcode == "" && s.Reserved != "" {
						what = "(" + s.Reserved + " is in a drive)"
					}
					fmt.Fprintf(out, "    slot %-3d %s\n", s.Number, what)
				}
				fmt.Fprintln(out, "  Mail slots")
				for _, s := range st.MailSlots {
					fmt.Fprintf(out, "    mail %-3d %s\n", s.Number, orEmpty(s.Barcode, "empty"))
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
			return withEnv(g, func(env *engine.Env) error {
				return env.RemoveLibrary(args[0])
			})
		},
	}
	add := &cobra.Command{
		Use:   "register DIR",
		Short: "Register an existing library folder in this catalog (e.g. after losing the catalog)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(g, func(env *engine.Env) error {
				lib, err := env.RegisterLibrary(args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Library %s registered; run `kura tape scan BARCODE` to rebuild its savesets.\n", lib.Config().Name)
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, show, rm, add)
	return cmd
}

func orEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
