package server_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/agent"
)

// The server home (catalog, CA, certificates, keys, admin token, library)
// and the agent home (key, certificate, configuration) are created
// owner-only whatever the umask.
func TestServerAndAgentHomesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	home := filepath.Join(t.TempDir(), "server")
	r := startServer(t, home, "")
	agentHome, _ := r.runAgent("web1")
	r.stop()
	for _, root := range []string{home, agent.Dir(agentHome)} {
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			n++
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %04o: others may read it", p, fi.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 4 {
			t.Fatalf("only %d entries under %s", n, root)
		}
	}
}
