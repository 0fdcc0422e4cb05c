package server_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
)

// BenchmarkNodesScaleOut is seed 004's scale-out question on loopback: two
// agents back up at once (each 64 MiB of incompressible files,
// --compress none) into
//
//   - server:    a library of the server's own, two drives;
//   - one-node:  a library of one storage node, two drives;
//   - two-nodes: a library on each of two storage nodes, one drive each
//     (separate folders, separate node sessions);
//   - node-via-server: a library of a node without a data port, two
//     drives: the frames go agent → server → node.
//
// The first three nodes have data ports: the agents send straight to them.
//
// The figure is the aggregate rate of the two backups (MB/s over the
// slower one's end). Everything runs in this one process on one machine,
// so the three cases share the same CPUs and disk: the ratios say what the
// node path costs against the server's own library and whether a second
// node adds anything here, not what two machines would do.
//
// Each round runs the three cases one after the other (the first one
// rotating), so they meet the same load; the metrics are the medians.
//
//	go test -run '^$' -bench NodesScaleOut -benchtime 5x ./internal/server/
func BenchmarkNodesScaleOut(b *testing.B) {
	const perAgent = 64 << 20
	r := startServer(b, b.TempDir(), "")
	ctx := b.Context()
	for _, n := range []string{"sn1", "sn2", "sn3"} {
		r.startNode(n, r.enrollNode(n, ""))
	}
	r.startNodeOn("sn4", r.enrollNode("sn4", ""), "")
	for _, l := range []api.LibraryCreate{{Name: "here", Drives: 2}, {Name: "one", Node: "sn1", Drives: 2},
		{Name: "a", Node: "sn2", Drives: 1}, {Name: "b", Node: "sn3", Drives: 1}, {Name: "via", Node: "sn4", Drives: 2}} {
		l.Slots, l.TapeSizeBytes = 8, 4<<30
		if _, err := r.admin.CreateLibrary(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
	var src [2]string
	for i, name := range []string{"c1", "c2"} {
		r.runAgent(name)
		src[i] = b.TempDir()
		rng := rand.NewChaCha8([32]byte{byte(i)})
		for f := range 8 {
			buf := make([]byte, perAgent/8)
			rng.Read(buf)
			if err := os.WriteFile(filepath.Join(src[i], "f"+strconv.Itoa(f)), buf, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		libs [2]string
	}{{"server", [2]string{"here", "here"}}, {"one-node", [2]string{"one", "one"}}, {"two-nodes", [2]string{"a", "b"}},
		{"node-via-server", [2]string{"via", "via"}}}
	// pair runs the two backups at once and returns the aggregate MB/s.
	pair := func(libs [2]string) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for i, name := range []string{"c1", "c2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids, err := r.admin.Submit(ctx, api.JobRequest{Kind: api.KindBackup, Client: name, Paths: []string{src[i]},
					Library: libs[i], Compress: "none"})
				if err != nil {
					b.Error(err)
					return
				}
				if j := r.wait(ids[0]); j.State != catalog.StateSucceeded {
					b.Errorf("backup to %s: %s (%s)", libs[i], j.State, j.Error)
				}
			}()
		}
		wg.Wait()
		return 2 * perAgent / 1e6 / time.Since(start).Seconds()
	}
	// The cases run side by side: each round runs all three, starting
	// with the next one each time, and the medians are reported.
	rates := make([][]float64, len(cases))
	round := 0
	b.SetBytes(int64(len(cases)) * 2 * perAgent)
	for b.Loop() {
		for k := range cases {
			c := (round + k) % len(cases)
			rates[c] = append(rates[c], pair(cases[c].libs))
		}
		round++
	}
	med := make([]float64, len(cases))
	for i, c := range cases {
		slices.Sort(rates[i])
		med[i] = rates[i][len(rates[i])/2]
		b.ReportMetric(med[i], c.name+"-MB/s")
	}
	b.ReportMetric(med[1]/med[0], "one-node/server")
	b.ReportMetric(med[2]/med[1], "two-nodes/one-node")
	b.ReportMetric(med[3]/med[1], "via-server/one-node")
}

// BenchmarkNodesRestore is the restore side of the data path: one agent
// restores a 64 MiB saveset of incompressible files (--compress none) from
//
//   - server:          a library of the server's own;
//   - node-direct:     a library of a storage node with a data port: the
//     agent reads the node's tapes with read tickets;
//   - node-via-server: a library of a node without one: node → server →
//     agent.
//
// As in BenchmarkNodesScaleOut everything shares one machine, so the
// ratios say what each path costs here, not what a network would do. Each
// round restores from all three (the first one rotating); the metrics are
// the medians.
//
//	go test -run '^$' -bench NodesRestore -benchtime 5x ./internal/server/
func BenchmarkNodesRestore(b *testing.B) {
	const size = 64 << 20
	r := startServer(b, b.TempDir(), "")
	ctx := b.Context()
	r.startNode("sn1", r.enrollNode("sn1", ""))
	r.startNodeOn("sn2", r.enrollNode("sn2", ""), "")
	for _, l := range []api.LibraryCreate{{Name: "here"}, {Name: "direct", Node: "sn1"}, {Name: "via", Node: "sn2"}} {
		l.Slots, l.Drives, l.TapeSizeBytes = 2, 1, 1<<30
		if _, err := r.admin.CreateLibrary(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
	r.runAgent("c1")
	src := b.TempDir()
	rng := rand.NewChaCha8([32]byte{7})
	for f := range 8 {
		buf := make([]byte, size/8)
		rng.Read(buf)
		if err := os.WriteFile(filepath.Join(src, "f"+strconv.Itoa(f)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cases := []string{"server", "node-direct", "node-via-server"}
	var ss [3]int64
	for i, lib := range []string{"here", "direct", "via"} {
		j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: lib, Compress: "none"})[0])
		if j.State != catalog.StateSucceeded {
			b.Fatalf("backup to %s: %s (%s)", lib, j.State, j.Error)
		}
		ss[i] = j.SavesetID
	}
	restore := func(i int) float64 {
		to := b.TempDir()
		start := time.Now()
		if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: ss[i], To: to})[0]); j.State != catalog.StateSucceeded {
			b.Fatalf("restore from %s: %s (%s)", cases[i], j.State, j.Error)
		}
		rate := size / 1e6 / time.Since(start).Seconds()
		os.RemoveAll(to)
		return rate
	}
	rates := make([][]float64, len(cases))
	round := 0
	b.SetBytes(int64(len(cases)) * size)
	for b.Loop() {
		for k := range cases {
			c := (round + k) % len(cases)
			rates[c] = append(rates[c], restore(c))
		}
		round++
	}
	med := make([]float64, len(cases))
	for i, c := range cases {
		slices.Sort(rates[i])
		med[i] = rates[i][len(rates[i])/2]
		b.ReportMetric(med[i], c+"-MB/s")
	}
	b.ReportMetric(med[1]/med[2], "direct/via-server")
	b.ReportMetric(med[1]/med[0], "direct/server")
}
