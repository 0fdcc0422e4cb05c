package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/pgtest"
)

// The pglink test (seed 003 on a real database): a pgbench database in
// a PostgreSQL server started for the run (Debian's binaries, a fresh
// cluster in a temporary folder, internal/pgtest) is backed up through an
// agent with the PostgreSQL plug-in (pg_dump --format=custom, its own
// compression off; the agent compresses) at every compression level over
// links of three speeds, emulated with --bwlimit as in the link test.
//
// The database for the unlimited and 100 Mbit/s links is made with
// pgbench -i -s PGBenchScale (scale 100 ≈ a 1 GB dump); at 10 Mbit/s,
// where an uncompressed 1 GB takes 14 minutes a run, a database of
// PGBenchSlowScale is backed up instead (the report says which).

// TestPGLink is the pglink test's Run.Test.
const TestPGLink = "pglink"

// PartPGLink runs the pglink test: not in the default parts, as it needs
// PostgreSQL (Debian's postgresql package) and builds its database first.
const PartPGLink = "pglink"

// pgbenchScale is the pgbench scale of the pglink test by suite, for the
// unlimited and 100 Mbit/s links and for 10 Mbit/s.
var pgbenchScale = map[string][2]int{"quick": {5, 1}, "seed": {100, 10}}

// PGBench is the pglink test's database setup, as results.json records it.
type PGBench struct {
	Server    string         `json:"server"` // PostgreSQL's version
	Scale     int            `json:"scale"`
	SlowScale int            `json:"slow_scale"`
	Databases map[string]int `json:"databases"` // name → scale
	Init      []string       `json:"init"`      // the pgbench command lines
	Seconds   float64        `json:"init_seconds"`
}

// pgLinkDB is the database a link's runs back up.
func (b *PGBench) db(link Link) (string, int) {
	scale := b.Scale
	if link.BPS > 0 && link.BPS <= 10e6/8 {
		scale = b.SlowScale
	}
	for name, s := range b.Databases {
		if s == scale {
			return name, s
		}
	}
	return "", scale
}

func (rn *runner) pgLinkRuns() int { return len(Links) * len(LinkLevels) * rn.o.Repeats }

func (rn *runner) measurePGLink(ctx context.Context) {
	run := func(rep int, l Link, lv string) Run {
		return Run{Test: TestPGLink, Set: "pgbench", Tool: ToolKura, Phase: PhaseBackup, Rep: rep, Level: lv, Link: l.Name, BWLimit: l.BPS,
			Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Files: 2, Durable: true, Client: clientA, Library: linkLibrary, Streams: 1}
	}
	fail := func(err error) {
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			for _, l := range Links {
				for _, lv := range LinkLevels {
					rn.add(failed(run(rep, l, lv), err))
				}
			}
		}
	}
	pg, err := pgtest.Start("fsync=off", "synchronous_commit=off", "max_wal_size=4GB", "checkpoint_timeout=30min")
	if err != nil {
		fail(fmt.Errorf("starting PostgreSQL: %w", err))
		return
	}
	defer pg.Stop()
	setup, err := rn.pgbenchInit(ctx, pg)
	if err != nil {
		fail(err)
		return
	}
	rn.res.PG = setup
	clusterDir := filepath.Join(rn.o.Scratch, "cluster-pglink")
	c, err := rn.startClusterWith(ctx, clusterDir, []libSpec{{linkLibrary, DefaultCombo}}, []string{clientA},
		agentSetup{Args: []string{"--allow-plugin", "postgresql"}, Env: pg.Env()})
	if err != nil {
		fail(fmt.Errorf("starting the server and agent: %w", err))
		return
	}
	defer c.stop()
	for rep := 1; rep <= rn.o.Repeats; rep++ {
		for _, l := range Links {
			db, _ := setup.db(l)
			for _, lv := range LinkLevels {
				if ctx.Err() != nil {
					return
				}
				r := run(rep, l, lv)
				r.Case, r.Env = db, c.displayEnv()
				r.Command = []string{rn.o.Kura, "backup", "--client", clientA, "--vtl", linkLibrary, "--compress", lv}
				if l.Flag != "" {
					r.Command = append(r.Command, "--bwlimit", l.Flag)
				}
				r.Command = append(r.Command, "--json", "--plugin", "postgresql", "--db", db)
				c.measure(&r, func() { r = rn.kura(ctx, r, c.adminEnv()) })
				rn.add(r)
				// The saveset is not needed again: expired and its tape
				// erased (not timed), so the library holds one dump at a time.
				if r.SavesetID > 0 {
					if e := rn.expireRemote(ctx, c, r, r.SavesetID); e.Error != "" {
						rn.logf("pglink test: erasing the tapes of saveset %d: %s", r.SavesetID, e.Error)
					}
				}
			}
		}
	}
}

// pgbenchInit makes the pglink test's databases: pgbench -i at the
// suite's scale, and at the slow links' scale when it differs.
func (rn *runner) pgbenchInit(ctx context.Context, pg *pgtest.Server) (*PGBench, error) {
	scales := pgbenchScale[rn.o.Suite]
	if rn.o.PGBenchScale > 0 {
		scales[0] = rn.o.PGBenchScale
	}
	if rn.o.PGBenchSlowScale > 0 {
		scales[1] = rn.o.PGBenchSlowScale
	}
	b := &PGBench{Scale: scales[0], SlowScale: scales[1], Databases: map[string]int{}}
	if out, err := exec.CommandContext(ctx, filepath.Join(pg.Bin, "postgres"), "--version").Output(); err == nil {
		b.Server = strings.TrimSpace(string(out))
	}
	start := time.Now()
	for _, scale := range []int{b.Scale, b.SlowScale} {
		if _, ok := b.Databases[fmt.Sprintf("pgbench_s%d", scale)]; ok {
			continue
		}
		name := fmt.Sprintf("pgbench_s%d", scale)
		if err := pgExec(ctx, pg, filepath.Join(pg.Bin, "createdb"), name); err != nil {
			return nil, err
		}
		// Tables, data generated on the client side, primary keys: what
		// pg_dump dumps. No vacuum: it changes nothing dumped.
		argv := []string{filepath.Join(pg.Bin, "pgbench"), "-i", "-q", "-I", "dtgp", "-s", strconv.Itoa(scale), name}
		rn.logf("pglink test: %s (scale %d, about %s of dump) …", strings.Join(argv, " "), scale, formatBytes(int64(scale)*10_000_000))
		if err := pgExec(ctx, pg, argv[0], argv[1:]...); err != nil {
			return nil, err
		}
		b.Databases[name] = scale
		b.Init = append(b.Init, strings.Join(argv, " "))
	}
	b.Seconds = time.Since(start).Seconds()
	return b, nil
}

// pgExec runs a PostgreSQL client tool against pg.
func pgExec(ctx context.Context, pg *pgtest.Server, name string, args ...string) error {
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cmd.Environ(), pg.Env()...)
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, tail(errb.String()))
	}
	return nil
}

// PGLinkVerdicts judges auto at every link speed of the pglink test.
func PGLinkVerdicts(res *Results) []LinkVerdict { return linkVerdictsOf(res, TestPGLink) }
