package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/bench"
	"github.com/kura-backup/kura/internal/units"
)

func init() { commands = append(commands, newBenchCmd) }

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Generate the seed reports' data sets and measure Kura and its peers on them",
		Long: `Reproduce the seed performance reports on this machine.

  kura bench gen  writes the data sets (seed 000's test1, test2, test3 and
                  seed 003's database dump), scaled, deterministic for a seed.
  kura bench run  measures Kura on them — locally (Table 5-1: block size ×
                  transfer buffer; backup, verify and restore phases),
                  through a server and agents on loopback (Table 5-5; one
                  drive vs two, Tables 5-6…5-9), the db dump over emulated
                  links at every compression level (seed 003), small,
                  medium and huge files against cp -a (seed 002) — and,
                  with --peers tar,restic, GNU tar, tar | zstd and restic on
                  the same data and disk; with --parts network, backups
                  through an agent ÷ local in interleaved pairs with their
                  CPU per GiB; writes report.md, results.json and charts
                  (SVG and PNG).
  kura bench report  writes a run's report.md and charts again from its
                  results.json.
  kura bench agents  one server with many agents (1,000 by default), each
                  enrolled with its own certificate: RSS, CPU, open files,
                  goroutines idle, and job start latency with 100 backing
                  up at once (needs no data sets).`,
	}
	cmd.AddCommand(newBenchGenCmd(), newBenchRunCmd(), newBenchReportCmd(), newBenchAgentsCmd())
	return cmd
}

func newBenchGenCmd() *cobra.Command {
	var (
		o    bench.GenOptions
		sets string
	)
	cmd := &cobra.Command{
		Use:   "gen --out DIR",
		Short: "Generate the benchmark data sets",
		Long: `Generate the seed data shapes into DIR/test1, DIR/test2, DIR/test3 and DIR/db,
and a manifest (` + bench.ManifestName + `) that kura bench run reads.

  test1  200 KiB average files, 490 per folder, WAV-like audio (zstd ≈1.1:1)
  test2  10 KiB average files, 10,000 per folder, text (zstd ≈5.5:1)
  test3  200 MiB files, 5 per folder, incompressible (video stand-in)
  db     one plain-SQL dump of TPC-E-like tables (zstd ≈7:1)

At --scale 1 the sets have the seeds' sizes (test1 98,000 files ≈ 20 GB,
test2 1,000,000 files ≈ 10 GB, test3 50 files = 10 GiB, db 8.55 GB). Scaling
shrinks the file count (rounded) and keeps the file sizes and files per
folder; when fewer than one file would remain (test3 below 0.02) one file is
made whose size is scaled instead, so a set's bytes always follow the scale.
The db dump's size is scaled. The same --seed gives the same bytes; a set
already made with the same seed and scale is kept.`,
		Example: `  kura bench gen --out /data/bench --scale 0.005
  kura bench gen --out /data/bench --scale 1 --sets test3,db --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Out == "" {
				return usageErrorf("--out DIR is required")
			}
			var err error
			if o.Sets, err = bench.ParseSets(sets); err != nil {
				return usageErrorf("--sets: %v", err)
			}
			if o.Scale <= 0 || o.Scale > 100 {
				return usageErrorf("--scale %g: want more than 0 and at most 100", o.Scale)
			}
			o.Log = cmd.ErrOrStderr()
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
			defer cancel()
			m, err := bench.Generate(ctx, o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tw := table(out)
			fmt.Fprintln(tw, "SET\tFOLDERS\tFILES\tBYTES\tAVG FILE\tZSTD RATIO (default/fastest)\tSECONDS")
			for _, s := range m.Sets {
				if !containsString(o.Sets, s.Name) {
					continue
				}
				avg := int64(0)
				if s.Files > 0 {
					avg = s.Bytes / int64(s.Files)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f:1 / %.2f:1\t%.1f\n", s.Name, s.Folders, s.Files, s.Bytes, avg, s.RatioDefault, s.RatioFastest, s.Seconds)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(out, "Data in %s (seed %d, scale %g); manifest %s\n", o.Out, m.Seed, m.Scale, filepath.Join(o.Out, bench.ManifestName))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "", "folder to write the data sets into (required)")
	f.Float64Var(&o.Scale, "scale", 1, "size relative to the seeds' data sets (1.0 = the seed sizes)")
	f.StringVar(&sets, "sets", "test1,test2,test3,db", "which sets to make, comma-separated")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the generator (same seed, same bytes)")
	f.IntVar(&o.Workers, "workers", 2, "files written in parallel")
	return cmd
}

func newBenchRunCmd() *cobra.Command {
	var (
		o                         bench.RunOptions
		sets, peers, parts, dbArg string
	)
	cmd := &cobra.Command{
		Use:   "run --data DIR --out REPORTDIR",
		Short: "Measure Kura (and peers) on the data sets; write report.md and results.json",
		Long: `Measure on a folder made by kura bench gen, writing REPORTDIR/report.md,
REPORTDIR/results.json (every run with its command line and configuration)
and REPORTDIR/chart-*.svg and .png.

Parts (--parts, default all but network, s3, encrypt and pglink):

  local   Table 5-1: kura backup of each set into a fresh library for each
          (block, buffer) of (32 KiB, 257 KiB), (256 KiB, 8193 KiB), (1024
          KiB, 32769 KiB): Average/Peak KB/s, time, compression ratio, max
          RSS; the backup, verify (data) and restore phases of each set;
          and the peers:
          --peers tar: tar -cf, tar -cf - | zstd -T0 and tar -xf on the
          same data and disk, with Kura ÷ peer columns; --peers restic:
          restic backup (--compression auto from restic 0.14) into a fresh
          repository on --scratch, and restic restore (a missing restic is
          installed with apt-get when running as root)
  remote  Table 5-5: the same backups through an agent: a server (kura
          server --listen 127.0.0.1:0) and agents (kura agent run) are
          started for the run as subprocesses of this binary, one library
          per combination; remote ÷ local columns
  drives  Tables 5-6…5-9: each set as one job on one drive, split over two
          drives (--streams 2), and two agents backing up one half each at
          the same time on two drives
  link    seed 003: the db dump backed up over links of unlimited, 100
          Mbit/s and 10 Mbit/s (emulated with the agent's --bwlimit) at
          compression none, low, medium, high and auto: bytes sent, time,
          rate, ratio, and whether auto is within 10 % of the best level.
          The dump is the data's db set when it is at most --db-size, else
          a dump of --db-size made by the db generator
  files   seed 002: 20 KiB × N, 100 MiB × N and 4 GiB × 1 files, scaled by
          --files-scale (default the data's scale), read (kura backup),
          written (kura restore) and deleted, against cp -a and rm -rf
  network issue 12: through an agent ÷ local in interleaved pairs (--runs
          pairs, local first in odd pairs, the agent first in even ones)
          for test3 --compress none, test3 --compress auto and test2
          --compress auto, with a server and an agent started once for
          the part: MB/s, the ratio of each pair, CPU seconds per GiB of
          the local kura, the agent and the server, and whether the
          issue's targets are met; with --peers tar, each pair's local
          saveset restored against tar -xf, and test2's backup against
          tar -cf + sync and tar -cf - | zstd -T0 + sync. Not in the
          default: each pair backs test3 up four times and test2 twice,
          about as long as the local and remote parts on those sets
  s3      issue 13: backup and restore of each set to a library whose
          tapes are in the S3 bucket --s3 URL (a prefix of its own per
          library; credentials from AWS_ACCESS_KEY_ID and
          AWS_SECRET_ACCESS_KEY or a credentials file) next to a folder
          library, in interleaved pairs (--runs pairs, folder first in odd
          pairs): MB/s of each side, medians, and the S3 ÷ folder ratio of
          each pair and its median. Not in the default: it needs a bucket
  pglink  seed 003 on a real database: PostgreSQL is started for the run
          (Debian's postgresql package, a fresh cluster in a temporary
          folder), a database made with pgbench -i -s --pgbench-scale is
          backed up through an agent with --plugin postgresql at every
          level over the link test's three links (at 10 Mbit/s a database
          of --pgbench-slow-scale): bytes sent, time, rate, and whether
          auto is within 10 % of the best level. Not in the default: it
          needs PostgreSQL and builds its database first (scale 100, a 1 GB
          dump, takes a few minutes)

Every run is a separate process of this binary or the peer; as root the page
cache is dropped before each one (restores then read the disk, not memory).
Restore targets are deleted between runs, timed separately. Libraries,
archives and restores go to --scratch (default REPORTDIR/scratch), which
needs room for about twice the largest set. Progress lines go to stderr.

Suites: quick (1 run per figure; use small data, e.g. gen --scale 0.005)
and seed (3 runs per figure, medians). The link test's dump is 32 MiB in
the quick suite and 64 MiB in the seed suite (at 10 Mbit/s an uncompressed
64 MiB takes 54 s per run).`,
		Example: `  kura bench gen --out /data/bench --scale 0.005
  kura bench run --data /data/bench --out /tmp/report --peers tar,restic
  kura bench run --data /data/bench --out /tmp/link --parts link --db-size 16MiB
  kura bench run --data /data/bench --out /tmp/net --parts network --peers tar --suite seed
  kura bench run --data /data/bench --out /tmp/s3 --parts s3 --s3 http://127.0.0.1:7070/bench --runs 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Data == "" || o.Out == "" {
				return usageErrorf("--data DIR and --out REPORTDIR are required")
			}
			if err := bench.ParseSuite(o.Suite); err != nil {
				return usageErrorf("--suite: %v", err)
			}
			if sets != "" {
				var err error
				if o.Sets, err = bench.ParseSets(sets); err != nil {
					return usageErrorf("--sets: %v", err)
				}
			}
			if parts != "" {
				var err error
				if o.Parts, err = bench.ParseParts(parts); err != nil {
					return usageErrorf("--parts: %v", err)
				}
			}
			if slices.Contains(o.Parts, bench.PartObject) && o.S3 == "" {
				return usageErrorf("the s3 part needs a bucket: --s3 http[s]://HOST[:PORT]/BUCKET[/PREFIX]")
			}
			if dbArg != "" {
				n, err := units.ParseSize(dbArg)
				if err != nil || n < 1<<10 {
					return usageErrorf("--db-size %q: want a size of at least 1KiB, e.g. 32MiB", dbArg)
				}
				o.DBBytes = n
			}
			if o.PGBenchScale < 0 || o.PGBenchSlowScale < 0 || o.PGBenchScale > 10000 || o.PGBenchSlowScale > 10000 {
				return usageErrorf("--pgbench-scale and --pgbench-slow-scale: want 1 to 10000")
			}
			if o.FilesScale < 0 || o.FilesScale > 100 {
				return usageErrorf("--files-scale %g: want more than 0 and at most 100", o.FilesScale)
			}
			for _, p := range strings.Split(peers, ",") {
				if p = strings.TrimSpace(p); p != "" {
					o.Peers = append(o.Peers, p)
				}
			}
			if o.Kura == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding the kura binary to run: %w", err)
				}
				o.Kura = exe
			} else if st, err := os.Stat(o.Kura); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				return usageErrorf("--kura %q: not an executable file", o.Kura)
			}
			if err := os.MkdirAll(o.Out, 0o755); err != nil {
				return err
			}
			o.Log = cmd.ErrOrStderr()
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
			defer cancel()
			res, runErr := bench.RunSuite(ctx, o)
			if res != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "Report: %s\nResults: %s (%d runs)\n",
					filepath.Join(o.Out, "report.md"), filepath.Join(o.Out, "results.json"), len(res.Runs))
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "data folder made by kura bench gen (required)")
	f.StringVar(&o.Out, "out", "", "report folder (required)")
	f.StringVar(&o.Kura, "kura", "", "the kura binary to measure (default this one); compare two builds on the same data with two runs")
	f.StringVar(&o.Scratch, "scratch", "", "folder for libraries, archives and restores (default REPORTDIR/scratch; same disk as the data for a fair comparison)")
	f.StringVar(&o.Suite, "suite", "quick", "quick (1 run per figure) or seed (3 runs, medians)")
	f.IntVar(&o.Repeats, "runs", 0, "runs per figure (default: the suite's)")
	f.StringVar(&sets, "sets", "", "only these sets, comma-separated (default: every set in --data)")
	f.StringVar(&peers, "peers", "", "peer tools to measure too, comma-separated: tar (tar -cf, tar | zstd -T0, tar -xf), restic (restic backup, restic restore)")
	f.StringVar(&o.Compress, "compress", "auto", "kura backup --compress level (Tables 5-1, 5-5, drives)")
	f.StringVar(&parts, "parts", "", "only these parts, comma-separated: local, remote, drives, link, files, network, s3, encrypt (default: all but network, s3 and encrypt)")
	f.StringVar(&o.S3, "s3", "", "the bucket of the s3 part: http[s]://HOST[:PORT]/BUCKET[/PREFIX] (credentials from the environment)")
	f.StringVar(&dbArg, "db-size", "", "size of the link test's db dump (default: quick 32MiB, seed 64MiB)")
	f.IntVar(&o.PGBenchScale, "pgbench-scale", 0, "pglink part: pgbench scale of the database for the unlimited and 100 Mbit/s links (default: quick 5, seed 100 ≈ a 1 GB dump)")
	f.IntVar(&o.PGBenchSlowScale, "pgbench-slow-scale", 0, "pglink part: pgbench scale of the database for the 10 Mbit/s link (default: quick 1, seed 10)")
	f.Float64Var(&o.FilesScale, "files-scale", 0, "scale of the files test's shapes (default: the data's scale)")
	f.BoolVar(&o.NoDropCaches, "no-drop-caches", false, "do not drop the page cache before each run")
	return cmd
}

func newBenchReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report REPORTDIR",
		Short: "Write report.md and the charts again from REPORTDIR/results.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := bench.Render(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Report: %s (%d runs)\n", filepath.Join(args[0], "report.md"), len(res.Runs))
			return nil
		},
	}
}

func newBenchAgentsCmd() *cobra.Command {
	var (
		o      bench.AgentsOptions
		out    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "agents [--agents 1000] [--busy 100]",
		Short: "Measure one server with many connected agents, idle and then backing up at once",
		Long: `Start a kura server (a process of this binary, on loopback) and --agents agents
in this process. Each agent enrolls the way kura agent enroll does (a one-time
token of its own, its own key and certificate signed by the server's CA) and
runs the agent's order loop over its own mutual-TLS connection. The run watches
the idle agents for --idle (the server's CPU over it is the heartbeat cost),
then --busy of them back up --files small files each, all submitted at once,
then --lone backups run one at a time, and reports the server's RSS, CPU, open files and goroutines, and the job start
latency (submitted → running) p50 and p99 against issue 14's goals: RSS at
most 300 MiB with 1,000 agents connected, start within 1 s at p99. The library
has a drive for every busy agent (--drives), so the latency is the queue's,
not a wait for a drive. Everything lives in a scratch folder removed after.`,
		Example: `  kura bench agents
  kura bench agents --agents 200 --busy 20 --idle 20s --out /tmp/agents`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Agents < 1 || o.Busy < 0 || o.Busy > o.Agents {
				return usageErrorf("--agents %d --busy %d: want at least one agent and at most that many busy", o.Agents, o.Busy)
			}
			if o.Files < 1 || o.FileSize < 0 || o.Idle <= 0 || o.Drives < 0 || o.Lone < 0 {
				return usageErrorf("--files, --file-size, --idle, --drives and --lone: want positive values")
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the kura binary to run: %w", err)
			}
			o.Kura = exe
			if o.Dir == "" {
				if o.Dir, err = os.MkdirTemp("", "kura-bench-agents-"); err != nil {
					return err
				}
				defer os.RemoveAll(o.Dir)
			}
			o.Log = cmd.ErrOrStderr()
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
			defer cancel()
			res, err := bench.RunAgents(ctx, o)
			if err != nil {
				return err
			}
			var md strings.Builder
			if err := bench.WriteAgentsReport(&md, res); err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				fmt.Fprint(cmd.OutOrStdout(), md.String())
			}
			if out != "" {
				b, _ := json.MarshalIndent(res, "", "  ")
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(out, "agents.json"), append(b, '\n'), 0o644); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(out, "agents.md"), []byte(md.String()), 0o644); err != nil {
					return err
				}
			}
			if len(res.Failed) > 0 {
				return fmt.Errorf("%d of %d backups failed", len(res.Failed), res.Busy+o.Lone)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Agents, "agents", 1000, "agents connected to the server")
	f.IntVar(&o.Busy, "busy", 100, "of them, backing up at once (0: idle only)")
	f.IntVar(&o.Lone, "lone", 10, "then, backups run one at a time (each after the one before ended)")
	f.IntVar(&o.Files, "files", 4, "files in each busy agent's selection")
	f.IntVar(&o.FileSize, "file-size", 16<<10, "bytes in each file")
	f.DurationVar(&o.Idle, "idle", time.Minute, "how long the idle agents are watched")
	f.IntVar(&o.Drives, "drives", 0, "drives of the benchmark's library (default: one per busy agent, at most 256)")
	f.StringVar(&o.Dir, "scratch", "", "scratch folder for the server home and the agents (default: a temporary folder)")
	f.StringVar(&out, "out", "", "also write agents.md and agents.json into this folder")
	f.BoolVar(&asJSON, "json", false, "print the figures as JSON (what agents.json holds) instead of the table")
	return cmd
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
