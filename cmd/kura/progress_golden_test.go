package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/monitor"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// The progress line of every kind of phase, drawn at two widths: the
// percentage, the time left and the tape when the total is known, the
// running figures otherwise. The time left is the event's own arithmetic
// (bytes left ÷ rate), so no clock is involved.
func TestProgressLineGolden(t *testing.T) {
	events := []struct {
		name string
		ev   monitor.Event
	}{
		{"backup, total from the last full", monitor.Event{Phase: "backup", Files: 1234, Bytes: 50 << 20, Total: 100 << 20,
			Rate: 10 << 20, Tape: "KUR001", Path: "/home/me/some/long/path/file.txt"}},
		{"backup, no earlier backup, pre-count not in yet", monitor.Event{Phase: "backup", Files: 1, Bytes: 4096, Rate: 2048, Tape: "KUR001", Path: "/srv/a"}},
		{"backup, no earlier backup, total from the pre-count", monitor.Event{Phase: "backup", Files: 310, Bytes: 30 << 20, Total: 120 << 20,
			Rate: 15 << 20, Tape: "KUR001", Path: "/srv/b"}},
		{"backup, past its estimate", monitor.Event{Phase: "backup", Files: 20, Bytes: 120 << 20, Total: 100 << 20, Rate: 1 << 20, Tape: "KUR002"}},
		{"restore, an hour left", monitor.Event{Phase: "restore", Files: 10, Bytes: 1 << 30, Total: 5 << 30, Rate: 1 << 20, Tape: "KUR003", Path: "srv/db/data"}},
		{"verify, just started", monitor.Event{Phase: "verify", Files: 0, Bytes: 0, Total: 3 << 20, Rate: 0, Tape: "SML001"}},
		{"copy, no tape yet", monitor.Event{Phase: "copy", Files: 2, Bytes: 10 << 20, Total: 40 << 20, Rate: 5 << 20}},
	}
	var b strings.Builder
	for _, e := range events {
		for _, w := range []int{120, 60} {
			fmt.Fprintf(&b, "# %s, %d columns\n%s\n", e.name, w, progressLine(e.ev, w))
		}
	}
	golden := filepath.Join("testdata", "progress.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestProgressLineGolden -update)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("progress lines differ from %s (run with -update after checking):\n%s", golden, got)
	}
}
