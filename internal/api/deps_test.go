package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAPIDependencies: the wire types are the API's own. They depend on
// nothing of Kura but the leaf packages of shared values (rules) and
// compression levels, so a change to a catalog, engine, index or monitor
// type cannot change the protocol.
func TestAPIDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/kura-backup/kura/internal/api").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/kura-backup/kura/internal/api":      true,
		"github.com/kura-backup/kura/internal/rules":    true,
		"github.com/kura-backup/kura/internal/compress": true,
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/kura-backup/kura/") && !allowed[dep] {
			t.Errorf("the wire types depend on %s", dep)
		}
	}
}
