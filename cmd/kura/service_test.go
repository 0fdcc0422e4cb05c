package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serverAndAdmin starts a server on a fresh home and returns a kura on
// that home (local mode, the server's own catalog) and an admin kura
// logged in to the server (server mode, no home of its own).
func serverAndAdmin(t *testing.T) (local, admin *kura) {
	t.Helper()
	local = newKura(t)
	srv := local.start("server", "--listen", "127.0.0.1:0")
	url := strings.TrimSpace(strings.TrimPrefix(srv.line(t, "listening on"), "Kura server listening on"))
	tok, err := os.ReadFile(filepath.Join(local.home, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin = newKura(t)
	admin.home = ""
	admin.env = []string{"KURA_LOGIN=" + filepath.Join(admin.dir, "login.json")}
	admin.ok("login", "--server", url, "--token", strings.TrimSpace(string(tok)))
	return local, admin
}

// sameBothWays runs one command through the server and then locally on
// the server's home, and fails unless both print the same and exit the
// same: local mode and server mode run the one service layer.
func sameBothWays(t *testing.T, local, admin *kura, args ...string) result {
	t.Helper()
	remote := admin.run(args...)
	here := local.run(args...)
	if remote.code != here.code || remote.stdout != here.stdout || remote.stderr != here.stderr {
		t.Errorf("through the server and locally differ:\n%s\n%s", remote, here)
	}
	return remote
}

// Every typed verb prints the same and exits the same through a server
// as locally on the server's home: the listings, the --json forms, and
// the errors (a name that names nothing, bad input).
func TestVerbsSameThroughServerAndLocally(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)

	// A change through the server is seen locally, and the reverse.
	if r := admin.ok("vtl", "create", "lib2", "--slots", "3", "--drives", "1", "--tape-size", "64MiB"); !strings.Contains(r.stdout, "Library lib2 created") {
		t.Fatalf("vtl create through the server:\n%s", r)
	}
	local.ok("vtl", "create", "lib3", "--slots", "2", "--drives", "1", "--tape-size", "64MiB", "--barcode-prefix", "LCL")

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"vtl", "list"}, 0},
		{[]string{"vtl", "list", "--json"}, 0},
		{[]string{"vtl", "show", "lib2"}, 0},
		{[]string{"vtl", "show", "lib3", "--json"}, 0},
		{[]string{"vtl", "show", "nolib"}, exitUsage},
		{[]string{"vtl", "rm", "nolib"}, exitUsage},
		{[]string{"vtl", "create", "lib2"}, exitFailure},
		{[]string{"vtl", "register", filepath.Join(local.dir, "nothing")}, exitFailure},
	} {
		if r := sameBothWays(t, local, admin, c.args...); r.code != c.code {
			t.Errorf("want exit %d:\n%s", c.code, r)
		}
	}
	if r := admin.ok("vtl", "list"); !strings.Contains(r.stdout, "lib3") {
		t.Errorf("a library created locally is not listed through the server:\n%s", r)
	}
	admin.ok("vtl", "rm", "lib3")
	if r := local.ok("vtl", "list"); strings.Contains(r.stdout, "lib3") {
		t.Errorf("a library removed through the server is still listed locally:\n%s", r)
	}
}
