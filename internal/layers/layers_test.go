package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/kura-backup/kura/"

// layer of every package of the module (doc.go draws them).
var layer = map[string]int{
	"internal/units": 0, "internal/rules": 0, "internal/private": 0, "internal/compress": 0, "internal/index": 0,
	"internal/retention": 0, "internal/schedule": 0, "internal/home": 0, "internal/pki": 0, "internal/planner": 0, "internal/seal": 0,
	"internal/monitor": 0, "internal/pgtest": 0, "internal/mariadbtest": 0,

	"internal/tape": 1, "internal/tape/tapetest": 1, "internal/tape/faultfs": 1, "internal/tape/faultdev": 1,
	"internal/tape/memtape": 1, "internal/tape/sttape": 1, "internal/tape/mtx": 1, "internal/tape/mtx/mtxtest": 1, "internal/tape/s3tape": 1, "internal/tape/s3tape/versitygw": 1, "internal/span": 1,
	"internal/stream": 1, "internal/walk": 1, "internal/catalogbackup": 1, "internal/api": 1, "internal/plugin": 1,

	"internal/catalog": 2, "internal/library": 2, "internal/producer": 2, "internal/restorer": 2,
	"internal/apiclient": 2,

	"internal/job": 3, "internal/agent": 3, "internal/node": 3,

	"internal/engine": 4,

	"internal/service": 5,

	"internal/server": 6, "internal/bench": 6, "internal/metrics": 6, "internal/console": 6, "internal/console/browsertest": 6,

	"cmd/kura": 7,

	"internal/layers": 7, "internal/api/openapigen": 7, "scripts/faults": 7,
}

// TestLayers: no package imports one of a layer above its own, and every
// package is placed.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		from, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s has no layer: place it in internal/layers (layers_test.go, doc.go, docs/design.md)", pkg)
			continue
		}
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if to, ok := layer[dep]; ok && to > from {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only its own layer and those below", pkg, from, dep, to)
			}
		}
	}
}
