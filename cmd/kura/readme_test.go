package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeRunsAsWritten runs every ```sh block of README.md, top to
// bottom, as one bash script, the way a new user pastes them: in a temp
// folder with its own KURA_HOME, KURA_LOGIN and HOME, with ./kura (and kura
// on PATH) being this test binary. Every command must exit 0, or with the
// code a trailing "# exits N" comment names. So that runs never collide
// (the machine is shared), paths under /tmp and the tmp/… index paths move
// into the temp folder, /usr/share/doc is a small generated tree, and the
// server's port 8420 is a free one. A block right after an HTML comment
// "<!-- readme-test: skip … -->" is not run (the whole test suite is one);
// "go build" lines are not run (./kura is there already). Background
// commands (server, agent) are killed at the end.
func TestReadmeRunsAsWritten(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "kura")); err != nil {
		t.Fatal(err)
	}
	makeDocTree(t, filepath.Join(dir, "doc"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	script, n := readmeScript(t, string(b), dir, port)
	if n < 20 {
		t.Fatalf("only %d commands found in README.md's sh blocks", n)
	}
	scriptPath := filepath.Join(dir, "readme.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "readme.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptPath)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that whatever it left running goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	gorace := "atexit_sleep_ms=0"
	if v := os.Getenv("GORACE"); v != "" {
		gorace = v + " " + gorace
	}
	env := []string{runMainEnv + "=1", "KURA_HOME=" + filepath.Join(dir, "home"), "KURA_LOGIN=" + filepath.Join(dir, "login.json"),
		"HOME=" + dir, "GORACE=" + gorace, "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case runMainEnv, "KURA_HOME", "KURA_LOGIN", "HOME", "GORACE", "PATH", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "KURA_SERVER", "KURA_TOKEN":
		default:
			env = append(env, kv)
		}
	}
	cmd.Env = env
	runErr := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything still running
	log, _ := os.ReadFile(out.Name())
	if runErr != nil {
		t.Fatalf("README.md does not run as written: %v\n%s", runErr, tailLines(string(log), 60))
	}
	if !strings.Contains(string(log), "README: all commands ran") {
		t.Fatalf("the script stopped early:\n%s", tailLines(string(log), 60))
	}
}

var (
	exitsMarker = regexp.MustCompile(`#\s*exits (\d+)\b`)
	tmpPath     = regexp.MustCompile(`(^|[\s"'=(])(/?)tmp/`)
)

// readmeScript turns the sh blocks of a README into a bash script that stops
// at the first command with an unexpected exit code, and counts the
// commands.
func readmeScript(t *testing.T, readme, dir, port string) (string, int) {
	var sb strings.Builder
	sb.WriteString("bgpids=()\ntrap 'kill \"${bgpids[@]}\" 2>/dev/null; wait' EXIT\n")
	rel := strings.TrimPrefix(dir, "/")
	n := 0
	sc := bufio.NewScanner(strings.NewReader(readme))
	in, skip, prevSkip := false, false, false
	lineNo := 0
	var pending string
	pendingLine := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, skip = true, prevSkip
			continue
		case in && strings.TrimSpace(line) == "```":
			in = false
			continue
		case !in:
			if s := strings.TrimSpace(line); s != "" {
				prevSkip = strings.HasPrefix(s, "<!-- readme-test: skip")
			}
			continue
		}
		if skip {
			continue
		}
		if pending == "" {
			pendingLine = lineNo
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		c := strings.TrimSpace(pending + line)
		pending = ""
		if c == "" || strings.HasPrefix(c, "#") || strings.HasPrefix(c, "go build ") {
			continue
		}
		want := "0"
		if m := exitsMarker.FindStringSubmatch(c); m != nil {
			want = m[1]
		}
		c = tmpPath.ReplaceAllString(c, "${1}${2}"+rel+"/")
		c = strings.ReplaceAll(c, "/usr/share/doc", dir+"/doc")
		c = strings.ReplaceAll(c, "127.0.0.1:8420", "127.0.0.1:"+port)
		n++
		fmt.Fprintf(&sb, "echo %s\n", shellQuote(fmt.Sprintf("+ README.md:%d: %s", pendingLine, c)))
		if strings.HasSuffix(c, "&") {
			fmt.Fprintf(&sb, "%s\nbgpids+=($!)\n", c)
			continue
		}
		fmt.Fprintf(&sb, "%s\nrc=$?\nif [ $rc -ne %s ]; then echo \"README.md:%d: exit $rc, want %s\" >&2; exit 1; fi\n",
			c, want, pendingLine, want)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sb.WriteString("echo 'README: all commands ran'\n")
	return sb.String(), n
}

// makeDocTree writes a small stand-in for /usr/share/doc with the folders
// the README names.
func makeDocTree(t *testing.T, root string) {
	files := map[string]string{}
	for _, pkg := range []string{"bash", "git", "tar", "zstd"} {
		files[pkg+"/NEWS.gz"] = strings.Repeat(pkg+" news\n", 200)
		files[pkg+"/copyright"] = "Copyright " + pkg + "\n"
		for i := range 20 {
			files[fmt.Sprintf("%s/examples/ex%02d.txt", pkg, i)] = strings.Repeat(fmt.Sprintf("%s example %d\n", pkg, i), 50)
		}
	}
	writeTree(t, root, files)
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
