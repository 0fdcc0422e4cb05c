package agent

import (
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/kura-backup/kura/internal/seal"
)

// Encrypted backups that start together on an agent without a key (the
// streams of a split backup) encrypt to one key, the one the ring keeps.
func TestFirstKeyMadeOnce(t *testing.T) {
	a := &Agent{opts: Options{Home: t.TempDir()}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			if r, err := a.ring(); err == nil {
				keys[i] = r.Recipient()
			}
		})
	}
	wg.Wait()
	r, err := seal.LoadRing(RingPath(a.opts.Home))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if k != r.Recipient() {
			t.Errorf("job %d encrypted to %q; the ring keeps %q", i, k, r.Recipient())
		}
	}
}
