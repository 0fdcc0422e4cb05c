package engine_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/stream"
)

// Four weekly generations (a full and two incrementals each) of a policy
// that keeps two: a prune expires the two oldest, each with its reason,
// recycles their tapes to scratch, and the kept ones still restore.
func TestPruneExpiresGenerationsAndRecyclesTapes(t *testing.T) {
	env := newEnv(t)
	clock := monitor.NewFakeClock(time.Date(2026, 1, 5, 1, 0, 0, 0, time.UTC))
	env.Clock = clock
	if err := env.Catalog.CreatePolicy(&catalog.Policy{Name: "weekly", Client: "", Selection: "home",
		KeepGenerations: 2, Pool: "weekly"}); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	lib, err := env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	var gens [][]int64
	var tapes []string
	for week := range 4 {
		var gen []int64
		for day, level := range []string{engine.LevelFull, engine.LevelIncr, engine.LevelIncr} {
			if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte{byte(week), byte(day)}, 0o644); err != nil {
				t.Fatal(err)
			}
			res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: level, Policy: "weekly", Pool: "weekly"})
			gen = append(gen, res.Figures.SavesetID)
			clock.Advance(24 * time.Hour)
		}
		gens = append(gens, gen)
		ss, err := env.Catalog.Saveset(gen[0])
		if err != nil {
			t.Fatal(err)
		}
		bc := ss.Parts[0].Barcode
		tapes = append(tapes, bc)
		if pool, _ := env.Catalog.TapePool(bc); pool != "weekly" {
			t.Fatalf("tape %s of the policy is in pool %q", bc, pool)
		}
		// The next generation goes to the next tape.
		if err := lib.MarkFull(bc); err != nil {
			t.Fatal(err)
		}
		clock.Advance(4 * 24 * time.Hour)
	}
	// An ad-hoc backup is never expired, and its tape is not the pool's.
	adhoc := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID

	dry, err := env.Prune(context.Background(), engine.PruneOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(gens[0]), gens[1]...)
	if !slices.Equal(dry.Expired, want) {
		t.Fatalf("dry run expires %v, want %v", dry.Expired, want)
	}
	if ss, _ := env.Catalog.Saveset(gens[0][0]); ss.Expired {
		t.Fatal("a dry run expired a saveset")
	}
	res, err := env.Prune(context.Background(), engine.PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Expired, want) || !slices.Equal(res.Recycled, []string{tapes[0], tapes[1]}) {
		t.Fatalf("prune expired %v (want %v), recycled %v (want %v); notes %v", res.Expired, want, res.Recycled, tapes[:2], res.Notes)
	}
	for _, d := range res.Decisions {
		if d.Reason == "" || d.Rule == "" {
			t.Errorf("saveset %d: decision without a reason: %+v", d.ID, d)
		}
		if d.ID == adhoc && (!d.Keep || d.Rule != engine.RuleAdHoc) {
			t.Errorf("ad-hoc saveset: %+v", d)
		}
	}
	ss, _ := env.Catalog.Saveset(gens[0][1])
	if !ss.Expired || ss.ExpireReason == "" {
		t.Fatalf("expired saveset record: %+v", ss)
	}
	for _, bc := range tapes[:2] {
		st, err := lib.Tapes()
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range st {
			if ts.Barcode == bc && (ts.State != library.StateBlank || ts.Files != 0) {
				t.Errorf("recycled tape %s: %+v", bc, ts)
			}
		}
		if pool, _ := env.Catalog.TapePool(bc); pool != catalog.ScratchPool {
			t.Errorf("recycled tape %s is in pool %q, want scratch", bc, pool)
		}
	}
	// The newest generation restores.
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: gens[3][2], To: to})
	if b, err := os.ReadFile(filepath.Join(restored(to, src), "f.txt")); err != nil || b[0] != 3 || b[1] != 2 {
		t.Fatalf("restored %v, %v", b, err)
	}
	// A second prune finds nothing more to do.
	again, err := env.Prune(context.Background(), engine.PruneOptions{})
	if err != nil || len(again.Expired) != 0 || len(again.Recycled) != 0 {
		t.Fatalf("second prune: %+v, %v", again, err)
	}
}

// Two prunes at once: one waits for the other; nothing is expired twice
// and nothing kept is lost.
func TestConcurrentPrunes(t *testing.T) {
	env := newEnv(t)
	clock := monitor.NewFakeClock(time.Date(2026, 1, 5, 1, 0, 0, 0, time.UTC))
	env.Clock = clock
	if err := env.Catalog.CreatePolicy(&catalog.Policy{Name: "p", Selection: "s", Client: "x", KeepGenerations: 1, Pool: "p"}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	var ids []int64
	for range 3 {
		ids = append(ids, backup(t, env, engine.BackupOptions{Paths: []string{src}, Policy: "p", Pool: "p"}).Figures.SavesetID)
		clock.Advance(24 * time.Hour)
	}
	other, err := engine.Open(env.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Clock = clock
	var wg sync.WaitGroup
	results := make([]*engine.PruneResult, 2)
	errs := make([]error, 2)
	for i, e := range []*engine.Env{env, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.Prune(context.Background(), engine.PruneOptions{})
		}()
	}
	wg.Wait()
	total := 0
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += len(results[i].Expired)
	}
	if total != 2 {
		t.Fatalf("the two prunes expired %d savesets in all, want 2 (%v, %v)", total, results[0].Expired, results[1].Expired)
	}
	if ss, _ := env.Catalog.Saveset(ids[2]); ss.Expired {
		t.Fatal("the newest generation was expired")
	}
}

// pruningProducer runs a prune at the start of a backup.
type pruningProducer struct {
	env *engine.Env
	res *engine.PruneResult
	err error
}

func (p *pruningProducer) Produce(ctx context.Context, spec engine.ProduceSpec, sink stream.FrameSink, idx io.Writer, hooks engine.ProduceHooks) (*engine.Produced, error) {
	p.res, p.err = p.env.Prune(ctx, engine.PruneOptions{})
	return engine.LocalProducer{}.Produce(ctx, spec, sink, idx, hooks)
}

// A prune while a backup runs records expiries but recycles no tape: the
// running backup and every kept saveset stay whole.
func TestPruneDuringBackupRecyclesNothing(t *testing.T) {
	env := newEnv(t)
	clock := monitor.NewFakeClock(time.Date(2026, 1, 5, 1, 0, 0, 0, time.UTC))
	env.Clock = clock
	if err := env.Catalog.CreatePolicy(&catalog.Policy{Name: "p", Selection: "s", KeepGenerations: 1, Pool: "p"}); err != nil {
		t.Fatal(err)
	}
	lib, err := env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "a"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for range 2 {
		res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Policy: "p", Pool: "p"})
		ids = append(ids, res.Figures.SavesetID)
		if err := lib.MarkFull(res.Figures.Tapes[0]); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
	}
	p := &pruningProducer{env: env}
	third := backup(t, env, engine.BackupOptions{Paths: []string{src}, Policy: "p", Pool: "p", Producer: p})
	if p.err != nil {
		t.Fatal(p.err)
	}
	if !slices.Equal(p.res.Expired, ids[:1]) || len(p.res.Recycled) != 0 || len(p.res.Notes) == 0 {
		t.Fatalf("prune during a backup: expired %v, recycled %v, notes %v", p.res.Expired, p.res.Recycled, p.res.Notes)
	}
	for _, id := range []int64{ids[1], third.Figures.SavesetID} {
		to := t.TempDir()
		restore(t, env, engine.RestoreOptions{SavesetID: id, To: to})
	}
	// The next prune, with nothing running, expires the second generation
	// too and recycles both older tapes.
	res, err := env.Prune(context.Background(), engine.PruneOptions{})
	if err != nil || len(res.Recycled) != 2 || !slices.Equal(res.Expired, ids[1:]) {
		t.Fatalf("prune after the backup: %+v, %v", res, err)
	}
}
