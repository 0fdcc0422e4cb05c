package bench

import (
	"context"
	"fmt"
	"path/filepath"
)

// The encryption test (issue 17): what does encryption at rest cost a
// backup through an agent? Each case — a set at a compression level — runs
// in interleaved pairs through one server: agent bench1 (its backups clear)
// and agent bench2 (`kura client set bench2 --encrypt`: age after
// compression), both reading the same set into the same library. The order
// alternates per pair so that drift on a shared machine favours neither
// side; each saveset is expired and its tape erased after its run.

// EncCases are issue 17's cases, in the order they run.
var EncCases = []NetCase{{"test3", "auto"}, {"test3", "none"}}

// EncTargetRatio: encrypted ÷ clear, at least (at most 10 % slower).
const EncTargetRatio = 0.9

// encLibrary is the server's library of the encryption test.
const encLibrary = "encrypt"

// Sides of an encryption pair (Run.Variant).
const (
	sideClear     = "clear"
	sideEncrypted = "encrypted"
)

// encCases are the cases whose set this run measures.
func (rn *runner) encCases() []NetCase {
	var out []NetCase
	for _, nc := range EncCases {
		if _, ok := rn.sets[nc.Set]; ok {
			out = append(out, nc)
			continue
		}
		msg := fmt.Sprintf("encryption test: case %s skipped: set %s is not among the sets measured from %s", nc.Name(), nc.Set, rn.o.Data)
		rn.logf("%s", msg)
		rn.res.Notes = append(rn.res.Notes, msg)
	}
	return out
}

// encRuns is how many runs the encryption test records: per pair two
// backups and their two expiries.
func (rn *runner) encRuns(cases []NetCase) int { return len(cases) * 4 * rn.o.Repeats }

func (rn *runner) encRun(nc NetCase, pair int, side string) Run {
	si := rn.sets[nc.Set]
	client := clientA
	if side == sideEncrypted {
		client = clientB
	}
	return Run{Test: TestEncrypt, Case: nc.Name(), Set: nc.Set, Tool: ToolKura, Phase: PhaseBackup, Rep: pair, Level: nc.Level,
		Variant: side, Block: DefaultCombo.Block, Buffer: DefaultCombo.Buffer, Files: int64(si.Files), Bytes: si.Bytes,
		Durable: true, Client: client, Library: encLibrary, Streams: 1}
}

// measureEncrypt starts a server and the two agents and runs the pairs.
func (rn *runner) measureEncrypt(ctx context.Context, cases []NetCase) {
	if len(cases) == 0 {
		return
	}
	rn.logf("encryption test: starting a server and two agents on loopback for %d case(s), %d pair(s) each …", len(cases), rn.o.Repeats)
	c, err := rn.startCluster(ctx, filepath.Join(rn.o.Scratch, "cluster-encrypt"), []libSpec{{encLibrary, DefaultCombo}}, []string{clientA, clientB})
	if err == nil {
		_, err = c.admin(ctx, "client", "set", clientB, "--encrypt")
	}
	if err != nil {
		err = fmt.Errorf("starting the server and agents: %w", err)
		for _, nc := range cases {
			for pair := 1; pair <= rn.o.Repeats; pair++ {
				rn.add(failed(rn.encRun(nc, pair, sideClear), err))
				rn.add(failed(rn.encRun(nc, pair, sideEncrypted), err))
			}
		}
		if c != nil {
			c.stop()
		}
		return
	}
	defer c.stop()
	for _, nc := range cases {
		for pair := 1; pair <= rn.o.Repeats; pair++ {
			sides := [2]string{sideClear, sideEncrypted}
			if pair%2 == 0 {
				sides = [2]string{sideEncrypted, sideClear}
			}
			for _, side := range sides {
				if ctx.Err() != nil {
					return
				}
				r := rn.agentBackup(ctx, c, rn.encRun(nc, pair, side), filepath.Join(rn.o.Data, nc.Set))
				rn.add(r)
				if r.SavesetID == 0 {
					continue
				}
				e := rn.encRun(nc, pair, side)
				e.Phase, e.Durable, e.Env = PhaseExpire, false, c.displayEnv()
				rn.add(rn.expireRemote(ctx, c, e, r.SavesetID))
			}
		}
	}
}
