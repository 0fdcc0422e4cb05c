package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/kura-backup/kura/internal/api"
)

// The network test (issue 12): is a backup through an agent as fast as a
// local one, and at what CPU cost? Each case — a set at a compression
// level — runs in interleaved pairs: one local `kura backup` into a fresh
// home and library, and one `kura backup --client` through a server and
// an agent on loopback, started once for the whole test. The order
// alternates (local first in odd pairs, the agent first in even ones) so
// that drift on a shared machine favours neither side. The agent's
// saveset is expired and its tape erased after each run, so the server's
// library holds one saveset at a time.
//
// With --peers tar, each pair's local saveset is restored too (into an
// empty folder, then deleted), and tar -cf and tar -xf run on every set of
// the cases — with tar -cf - | zstd -T0 on the small-files set.

// NetCase is one case of the network test: a set backed up at a
// compression level.
type NetCase struct{ Set, Level string }

// Name is the case as Run.Case and the report write it.
func (c NetCase) Name() string { return c.Set + ", --compress " + c.Level }

// NetCases are issue 12's cases, in the order they run.
var NetCases = []NetCase{{"test3", "none"}, {"test3", "auto"}, {"test2", "auto"}}

// netSmallFiles is the set whose backups are compared with tar -cf - |
// zstd -T0 as well as tar -cf (issue 12's small files).
const netSmallFiles = "test2"

// netLibrary is the server's library of the network test.
const netLibrary = "network"

// Sides of a pair.
const (
	sideLocal = "local"
	sideAgent = "agent"
)

// Targets of issue 12.
const (
	NetTargetRatio = 0.9 // through an agent ÷ local, at least
	NetTargetCPU   = 1.3 // (agent + server) CPU ÷ local CPU, at most
)

// pairSides is the order of the runs of pair n (from 1): local first in
// odd pairs, through the agent first in even ones.
func pairSides(n int) [2]string {
	if n%2 == 1 {
		return [2]string{sideLocal, sideAgent}
	}
	return [2]string{sideAgent, sideLocal}
}

// netCases are the cases whose set this run measures; the others are
// logged and noted as skipped.
func (rn *runner) netCases() []NetCase {
	var out []NetCase
	for _, nc := range NetCases {
		if _, ok := rn.sets[nc.Set]; ok {
			out = append(out, nc)
			continue
		}
		msg := fmt.Sprintf("network test: case %s skipped: set %s is not among the sets measured from %s", nc.Name(), nc.Set, rn.o.Data)
		rn.logf("%s", msg)
		rn.res.Notes = append(rn.res.Notes, msg)
	}
	return out
}

// netSets are the sets of cases, each once, in order.
func netSets(cases []NetCase) []string {
	var out []string
	for _, nc := range cases {
		if !slices.Contains(out, nc.Set) {
			out = append(out, nc.Set)
		}
	}
	return out
}

// netRuns is how many runs the network test records for cases.
func (rn *runner) netRuns(cases []NetCase) int {
	tar := rn.havePeer("tar")
	perPair := 3 // local backup, backup through the agent, its expiry
	if tar {
		perPair += 2 // the local saveset's restore and its delete
	}
	n := len(cases) * perPair * rn.o.Repeats
	if tar {
		for _, s := range netSets(cases) {
			k := 3 // tar -cf, tar -xf, delete
			if s == netSmallFiles && rn.havePeer("zstd") {
				k++
			}
			n += k * rn.o.Repeats
		}
	}
	return n
}

// measureNetwork runs the network test's pairs, then tar on its sets.
func (rn *runner) measureNetwork(ctx context.Context, cases []NetCase) {
	if len(cases) == 0 {
		return
	}
	rn.netPairs(ctx, cases)
	if !rn.havePeer("tar") {
		return
	}
	for _, s := range netSets(cases) {
		for rep := 1; rep <= rn.o.Repeats; rep++ {
			if ctx.Err() != nil {
				return
			}
			rn.tarCycle(ctx, TestNetwork, rn.sets[s], rep, s == netSmallFiles)
		}
	}
}

// netPairs starts the server and agent and runs every case's pairs.
func (rn *runner) netPairs(ctx context.Context, cases []NetCase) {
	rn.logf("network test: starting a server and an agent on loopback for %d case(s), %d pair(s) each …", len(cases), rn.o.Repeats)
	c, err := rn.startCluster(ctx, filepath.Join(rn.o.Scratch, "cluster-network"), []libSpec{{netLibrary, DefaultCombo}}, []string{clientA})
	if err != nil {
		err = fmt.Errorf("starting the server and agent: %w", err)
		for _, nc := range cases {
			for pair := 1; pair <= rn.o.Repeats; pair++ {
				rn.add(failed(rn.netAgentRun(nc, pair), err))
			}
		}
		return
	}
	defer c.stop()
	for _, nc := range cases {
		for pair := 1; pair <= rn.o.Repeats; pair++ {
			for _, side := range pairSides(pair) {
				if ctx.Err() != nil {
					return
				}
				if side == sideLocal {
					rn.netLocal(ctx, nc, pair)
				} else {
					rn.netAgent(ctx, c, nc, pair)
				}
			}
		}
	}
}

// netRun is a backup of a case's set in pair n, with the default drive
// tuning.
func (rn *runner) netRun(nc NetCase, pair int) Run {
	si := rn.sets[nc.Set]
	return Run{Test: TestNetwork, Case: nc.Name(), Set: nc.Set, Tool: ToolKura, Phase: PhaseBackup, Rep: pair, Level: nc.Level,
		Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Files: int64(si.Files), Bytes: si.Bytes, Durable: true}
}

// netAgentRun is netRun through agent bench1 into the server's library.
func (rn *runner) netAgentRun(nc NetCase, pair int) Run {
	r := rn.netRun(nc, pair)
	r.Client, r.Library, r.Streams = clientA, netLibrary, 1
	return r
}

// netLocal is the local side of a pair: a backup into a fresh home and,
// with tar, the restore of its saveset and the delete of what it wrote;
// the home is removed afterwards.
func (rn *runner) netLocal(ctx context.Context, nc NetCase, pair int) {
	name := fmt.Sprintf("network-%s-%s-r%d", nc.Set, nc.Level, pair)
	home := filepath.Join(rn.o.Scratch, "home-"+name)
	defer func() {
		if err := os.RemoveAll(home); err != nil {
			rn.logf("removing %s: %v", home, err)
		}
	}()
	b := rn.localBackup(ctx, rn.netRun(nc, pair), home, filepath.Join(rn.o.Data, nc.Set))
	rn.add(b)
	if !rn.havePeer("tar") {
		return
	}
	x := rn.netRun(nc, pair)
	x.Phase = PhaseRestore
	if !b.OK() {
		rn.add(failed(x, fmt.Errorf("no backup to restore")))
		return
	}
	target := filepath.Join(rn.o.Scratch, "restore-"+name)
	rn.add(rn.restoreRun(ctx, x, home, b.SavesetID, target))
	rn.deleteRun(rn.netRun(nc, pair), target)
}

// netAgent is the agent side of a pair: a backup through the agent, then
// its saveset expired and its tapes erased.
func (rn *runner) netAgent(ctx context.Context, c *cluster, nc NetCase, pair int) {
	r := rn.agentBackup(ctx, c, rn.netAgentRun(nc, pair), filepath.Join(rn.o.Data, nc.Set))
	rn.add(r)
	if r.SavesetID == 0 {
		return
	}
	e := rn.netAgentRun(nc, pair)
	e.Phase, e.Durable, e.Env = PhaseExpire, false, c.displayEnv()
	rn.add(rn.expireRemote(ctx, c, e, r.SavesetID))
}

// expireRemote is e as `kura tape erase --force` through the server of
// every tape holding saveset id (what a prune does when retention lets go
// of a tape's last saveset): the saveset expires and its tapes are empty
// again.
func (rn *runner) expireRemote(ctx context.Context, c *cluster, e Run, id int64) Run {
	start := time.Now()
	tapes, err := c.savesetTapes(ctx, id)
	if err != nil {
		return failed(e, err)
	}
	for _, bc := range tapes {
		argv := []string{rn.o.Kura, "tape", "erase", "--force", bc}
		e.Commands = append(e.Commands, argv)
		if p := rn.execute(ctx, argv, c.adminEnv(), nil, nil); p.err != nil {
			p.apply(&e)
			break
		}
	}
	e.Seconds = time.Since(start).Seconds()
	e.Command = e.Commands[0]
	if len(e.Commands) == 1 {
		e.Commands = nil
	}
	return e
}

// savesetTapes lists the tapes of a saveset on the server (its parts' and
// its index's), each once.
func (c *cluster) savesetTapes(ctx context.Context, id int64) ([]string, error) {
	out, err := c.admin(ctx, "saveset", "show", strconv.FormatInt(id, 10), "--json")
	if err != nil {
		return nil, err
	}
	var ss api.Saveset
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		return nil, fmt.Errorf("reading kura saveset show --json: %w", err)
	}
	return savesetBarcodes(ss)
}

// savesetBarcodes are the tapes of a saveset: its parts' and its index's,
// each once.
func savesetBarcodes(ss api.Saveset) ([]string, error) {
	var out []string
	for _, p := range append(ss.Parts, ss.IndexPart) {
		if p.Barcode != "" && !slices.Contains(out, p.Barcode) {
			out = append(out, p.Barcode)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("saveset %d has no tape", ss.ID)
	}
	return out, nil
}
