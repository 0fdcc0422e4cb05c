package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/engine"
)

// TestSourceVerifyComparesWhatARestoreSets: --level source compares the
// metadata a restore sets, not only content and mtime: a file capability
// removed after the backup, a mode, an owner and a user.* attribute
// changed are each a problem naming the entry and what differs.
func TestSourceVerifyComparesWhatARestoreSets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting a file capability and owners needs root")
	}
	env := newEnv(t)
	src := t.TempDir()
	p := func(name string) string { return filepath.Join(src, name) }
	capability := make([]byte, 20) // cap_net_raw=ep, as setcap writes it
	binary.LittleEndian.PutUint32(capability[0:], 0x02000001)
	binary.LittleEndian.PutUint32(capability[4:], 1<<unix.CAP_NET_RAW)
	must(t, os.WriteFile(p("ping"), []byte("a tool"), 0o755))
	must(t, os.Chown(p("ping"), 1234, 5678))
	must(t, unix.Setxattr(p("ping"), "security.capability", capability, 0))
	must(t, os.WriteFile(p("plain"), []byte("plain"), 0o644))
	must(t, os.WriteFile(p("notes"), []byte("notes"), 0o644))
	must(t, unix.Setxattr(p("notes"), "user.kura", []byte("before"), 0))
	must(t, os.Symlink("plain", p("link")))
	must(t, os.Lchown(p("link"), 42, 43))
	id := backup(t, env, engine.BackupOptions{Paths: []string{src}}).Figures.SavesetID
	if vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifySource}); err != nil || len(vr.Problems) != 0 {
		t.Fatalf("source verify of an unchanged tree: %v %+v", err, vr.Problems)
	}

	must(t, unix.Removexattr(p("ping"), "security.capability"))
	must(t, os.Chmod(p("plain"), 0o600))
	must(t, os.Lchown(p("link"), 44, 43))
	must(t, unix.Setxattr(p("notes"), "user.kura", []byte("after!"), 0))
	vr, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifySource})
	if !errors.Is(err, engine.ErrVerify) {
		t.Fatalf("source verify after metadata changes: %v, want ErrVerify", err)
	}
	got := map[string]string{}
	for _, pr := range vr.Problems {
		got[pr.Path] = pr.Problem
	}
	want := map[string]string{
		p("ping"):  "extended attributes differ on disk: removed security.capability",
		p("plain"): "mode differs on disk: 0600, backed up 0644",
		p("link"):  "owner differs on disk: 44:43, backed up 42:43",
		p("notes"): "extended attributes differ on disk: changed user.kura",
	}
	for path, problem := range want {
		if got[path] != problem {
			t.Errorf("%s: problem %q, want %q", path, got[path], problem)
		}
	}
	if len(got) != len(want) {
		var paths []string
		for path := range got {
			paths = append(paths, path)
		}
		sort.Strings(paths)
		t.Errorf("problems for %s, want only the 4 changed entries", strings.Join(paths, ", "))
	}
}
