package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/service"
)

// An error the user can act on ends with what to run next: the engine
// says what is wrong, the CLI adds the command. The messages are the
// whole stderr line, as a user reads them.
func TestHintsSayWhatToRunNext(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	f := k.backup(src)
	if len(f.Tapes) != 1 {
		t.Fatalf("the backup wrote tapes %v, want one", f.Tapes)
	}
	bc := f.Tapes[0]
	to := filepath.Join(k.dir, "to")
	libDir := filepath.Join(k.home, "vtl", "default")

	type step struct {
		args []string
		code int
		want string // the last line of stderr, after "kura: "
	}
	check := func(tc step) {
		t.Helper()
		r := k.run(tc.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if got := lines[len(lines)-1]; r.code != tc.code || got != "kura: "+tc.want {
			t.Errorf("want exit %d and %q:\n%s", tc.code, "kura: "+tc.want, r)
		}
	}
	for _, tc := range []step{
		{[]string{"restore", "1", "--include", "nosuch", "--to", to}, exitFailure,
			"nothing to restore: no path in saveset 1 matches --include nosuch (see `kura ls 1`; paths have no leading /)"},
		{[]string{"restore", "1", "--path", "/nosuch", "--to", to}, exitFailure,
			"nothing to restore: no path in saveset 1 matches --path /nosuch (see `kura ls 1`)"},
		{[]string{"policy", "create", "p1", "--full", "@daily"}, exitUsage,
			"a policy needs --selection NAME (make one with `kura selection create`)"},
		{[]string{"policy", "create", "p1", "--full", "@daily", "--selection", "nosel"}, exitUsage,
			`this machine has no selection set "nosel" (make one with ` + "`kura selection create nosel PATH…`)"},
		{[]string{"agent", "run"}, exitFailure,
			"this machine is not enrolled (no " + filepath.Join(k.home, "agent", "agent.json") + "): run `kura agent enroll --server URL --token TOKEN` first"},
	} {
		check(tc)
	}

	// A library whose one tape is exported takes no backup.
	k.ok("vtl", "create", "one", "--slots", "1", "--barcode-prefix", "ONE")
	k.ok("tape", "export", "ONE001")
	check(step{[]string{"backup", "--vtl", "one", src}, exitFailure,
		"no writable tape for this pool in library one: add tapes with `kura tape add` or let retention recycle some"})

	// A saveset whose tape is exported is not restored.
	k.ok("tape", "export", bc)
	check(step{[]string{"restore", "1", "--to", to}, exitFailure,
		"this restore needs tapes that are exported (offline): " + bc + "; bring them back with `kura tape import BARCODE`"})
	k.ok("tape", "import", bc)

	// The catalog is lost; the home's library folder survives.
	for _, p := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm", "index"} {
		if err := os.RemoveAll(filepath.Join(k.home, p)); err != nil {
			t.Fatal(err)
		}
	}
	check(step{[]string{"backup", src}, exitFailure,
		"the catalog does not know this home's library (was catalog.db lost?): " + libDir + " holds library default: run `kura vtl register " +
			libDir + "`, then `kura tape scan BARCODE` for each tape with files (docs/operations.md, \"Disaster recovery\")"})
}

// An error a server answers gets the same words as the error it was made
// from: service.Err gives it a code and a field, the CLI reads them back
// from the wire.
func TestHintsFromAServer(t *testing.T) {
	t.Parallel()
	wire := func(err error) error {
		b, merr := json.Marshal(service.Err(err))
		if merr != nil {
			t.Fatal(merr)
		}
		var ae api.Error
		if err := json.Unmarshal(b, &ae); err != nil {
			t.Fatal(err)
		}
		return &ae
	}
	for _, err := range []error{
		engine.Missing("saveset", "no saveset %d", 999),
		engine.Missing("library", "no library named %q", "nolib"),
		engine.Missing("copy", "saveset %d has no copy %d", 1, 5),
		&library.NoTapeError{Library: "default"},
		&library.NoTapeError{Library: "default", Pool: true},
		fmt.Errorf("copying saveset 3: %w", fmt.Errorf("this restore needs tapes that are exported (offline): KUR001: %w", engine.ErrTapesOffline)),
		fmt.Errorf("saveset 3 is failed, not complete: choose another: %w", engine.ErrNotComplete),
	} {
		local, remote := withHint(err), withHint(wire(err))
		if local == err.Error() {
			t.Errorf("%v: no hint added", err)
		}
		if remote != local {
			t.Errorf("from a server %q, locally %q", remote, local)
		}
	}

	ul := &engine.UnregisteredLibraryError{Name: "default", Dir: "/h/vtl/default"}
	if got, want := withHint(wire(ul)), ul.Error()+registerHint("DIR"); got != want {
		t.Errorf("unregistered library from a server: %q, want %q", got, want)
	}
	for _, code := range []string{api.CodeTokenUsed, api.CodeTokenExpired} {
		got := withHint(wire(&api.Error{Code: code, Message: "the token was used already"}))
		if want := "the token was used already; make a new one with `kura token create`"; got != want {
			t.Errorf("%s: %q, want %q", code, got, want)
		}
	}
	// An old server's message that names the command already is left alone.
	old := &api.Error{Code: api.CodeNotFound, Field: "saveset", Message: "no saveset 9 (see `kura savesets`)"}
	if got := withHint(old); got != old.Message {
		t.Errorf("hint added twice: %q", got)
	}
	// The sentinels survive the wrapping into an api.Error in process.
	if err := service.Err(fmt.Errorf("job 3: %w", ul)); !errors.Is(err, engine.ErrUnregisteredLibrary) {
		t.Errorf("service.Err lost the sentinel: %v", err)
	}
}

// The words that tell a user which command to run next live only in the
// CLI: no string in the non-test Go files of internal/ names a command in
// backquotes ("see `kura savesets`"). Only the benchmark report, whose
// prose documents the commands it ran, may.
func TestNoCommandWordsBelowTheCLI(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "internal")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if filepath.Base(filepath.Dir(path)) == "bench" && strings.HasPrefix(d.Name(), "report") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if strings.Contains(s, "`kura ") {
				t.Errorf("%s: %q names a command: say what is wrong with a sentinel error, and add the command in cmd/kura/hints.go",
					fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: the walk missed the tree", files, root)
	}
}

// A catalog restore's notes that ask the user to act say which command to
// run, in its text and in its --json.
func TestCatalogRestoreNotesSayWhatToRun(t *testing.T) {
	t.Parallel()
	k := newKura(t)
	src := filepath.Join(k.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	k.backup(src)
	two, three := filepath.Join(k.dir, "two"), filepath.Join(k.dir, "three")
	k.ok("vtl", "create", "two", "--dir", two, "--barcode-prefix", "TWO")
	k.ok("vtl", "create", "three", "--dir", three, "--barcode-prefix", "THR")
	k.backup("--vtl", "two", src)
	k.ok("catalog", "backup")
	k.ok("tape", "export", "TWO001")
	if err := os.Rename(three, three+"-gone"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm", "index"} {
		if err := os.RemoveAll(filepath.Join(k.home, p)); err != nil {
			t.Fatal(err)
		}
	}
	lost := "library three is not in " + three + ": bring its folder back and run `kura catalog restore --force --vtl-dir DIR` with every library folder, or `kura vtl register DIR`"
	exported := "tape TWO001 is exported: import it, and scan it with `kura tape scan TWO001` if it was written after "
	r := k.ok("catalog", "restore")
	if !strings.Contains(r.stdout, "Note: "+lost+"\n") || !strings.Contains(r.stdout, "Note: "+exported) {
		t.Errorf("the notes should name the commands:\n%s", r)
	}
	var res struct {
		Notes []string `json:"notes"`
	}
	k.json(0, &res, "catalog", "restore", "--force", "--json")
	var sawLost, sawExported bool
	for _, n := range res.Notes {
		sawLost = sawLost || n == lost
		sawExported = sawExported || strings.HasPrefix(n, exported)
	}
	if !sawLost || !sawExported {
		t.Errorf("catalog restore --json notes %q, want %q and %q…", res.Notes, lost, exported)
	}
}

// Every command a hint tells the user to run exists, with the flags it
// names.
func TestHintsNameRealCommands(t *testing.T) {
	root := newRootCmd()
	cmds := []string{registerHint("/x"), noTapeHint(true), noTapeHint(false), savesetsHint, importHint, tokenHint}
	for _, see := range seeAlso {
		cmds = append(cmds, "`"+see+"`")
	}
	for _, text := range cmds {
		for _, quoted := range strings.Split(text, "`")[1:] {
			words := strings.Fields(quoted)
			if len(words) == 0 || words[0] != "kura" {
				continue
			}
			c, rest, err := root.Find(words[1:])
			if err != nil || c == root || (c.HasSubCommands() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-")) {
				t.Errorf("%q names no command (%v)", quoted, err)
				continue
			}
			for _, w := range rest {
				if name, ok := strings.CutPrefix(w, "--"); ok && c.Flags().Lookup(name) == nil {
					t.Errorf("%q: %s has no flag --%s", quoted, c.CommandPath(), name)
				}
			}
		}
	}
}
