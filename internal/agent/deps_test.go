package agent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAgentDependencies: the agent runs on every client; it reads files,
// restores them and talks to the server, and carries neither the catalog
// nor its SQLite driver nor the engine that uses them (docs/design.md,
// the dependency rule).
func TestAgentDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/kura-backup/kura/internal/agent").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"modernc.org/sqlite", "github.com/kura-backup/kura/internal/catalog",
			"github.com/kura-backup/kura/internal/engine", "github.com/kura-backup/kura/internal/server"} {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the agent depends on %s", dep)
			}
		}
	}
}
