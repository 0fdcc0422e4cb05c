package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
)

const childEnv = "KURA_ENGINE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "backup" {
		childBackup()
		return
	}
	os.Exit(m.Run())
}

// childBackup runs a backup that stops in the middle: after its first
// files it says so on stdout and waits to be killed.
func childBackup() {
	env, err := engine.Open(os.Getenv("KURA_HOME"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	env.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind == monitor.Progress || ev.Kind == monitor.PhaseStarted {
			fmt.Println("in the middle")
			select {} // killed here, mid-job
		}
	})
	_, err = env.Backup(context.Background(), engine.BackupOptions{Paths: []string{os.Getenv("KURA_SRC")}})
	fmt.Println("error: the backup ended:", err)
	os.Exit(1)
}

// A backup whose process is killed: the next process finds the job
// interrupted and its saveset incomplete, the drive and tape usable, and
// the earlier saveset restorable.
func TestKilledBackupIsInterrupted(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env, err := engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte(strings.Repeat("a", 100_000)), 0o644))
	first := backup(t, env, engine.BackupOptions{Paths: []string{src}})
	env.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=backup", "KURA_HOME="+home, "KURA_SRC="+src)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "in the middle" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q", line)
	}
	must(t, cmd.Process.Kill())
	cmd.Wait()

	env, err = engine.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	jobs, err := env.Catalog.Jobs(0)
	if err != nil {
		t.Fatal(err)
	}
	killed := jobs[0]
	if killed.State != "interrupted" || killed.Error == "" {
		t.Fatalf("the killed job is %q (%q), want interrupted with a reason", killed.State, killed.Error)
	}
	ss, err := env.Catalog.Saveset(killed.SavesetID)
	if err != nil || ss.Status != "incomplete" {
		t.Fatalf("the killed job's saveset: %+v, %v; want incomplete", ss, err)
	}
	// The drive lock died with the process; the next backup and a restore
	// of the earlier saveset work.
	backup(t, env, engine.BackupOptions{Paths: []string{src}})
	to := t.TempDir()
	restore(t, env, engine.RestoreOptions{SavesetID: first.Figures.SavesetID, To: to})
	if b, err := os.ReadFile(filepath.Join(restored(to, src), "a")); err != nil || len(b) != 100_000 {
		t.Fatalf("earlier saveset after the kill: %d bytes, %v", len(b), err)
	}
}
