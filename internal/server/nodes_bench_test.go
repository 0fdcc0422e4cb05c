package server_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

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
//     (separate folders, separate node sessions).
//
// The figure is the aggregate rate of the two backups (MB/s over the
// slower one's end). Everything runs in this one process on one machine,
// so the three cases share the same CPUs and disk: the ratios say what the
// node path costs against the server's own library and whether a second
// node adds anything here, not what two machines would do.
//
//	go test -run '^$' -bench NodesScaleOut -benchtime 3x -count 5 ./internal/server/
func BenchmarkNodesScaleOut(b *testing.B) {
	const perAgent = 64 << 20
	r := startServer(b, b.TempDir(), "")
	ctx := b.Context()
	for _, n := range []string{"sn1", "sn2", "sn3"} {
		r.startNode(n, r.enrollNode(n, ""))
	}
	for _, l := range []api.LibraryCreate{{Name: "here", Drives: 2}, {Name: "one", Node: "sn1", Drives: 2},
		{Name: "a", Node: "sn2", Drives: 1}, {Name: "b", Node: "sn3", Drives: 1}} {
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
	for _, c := range []struct {
		name string
		libs [2]string
	}{{"server", [2]string{"here", "here"}}, {"one-node", [2]string{"one", "one"}}, {"two-nodes", [2]string{"a", "b"}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(2 * perAgent)
			for b.Loop() {
				var wg sync.WaitGroup
				for i, name := range []string{"c1", "c2"} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ids, err := r.admin.Submit(ctx, api.JobRequest{Kind: api.KindBackup, Client: name, Paths: []string{src[i]},
							Library: c.libs[i], Compress: "none"})
						if err != nil {
							b.Error(err)
							return
						}
						if j := r.wait(ids[0]); j.State != catalog.StateSucceeded {
							b.Errorf("backup to %s: %s (%s)", c.libs[i], j.State, j.Error)
						}
					}()
				}
				wg.Wait()
			}
		})
	}
}
