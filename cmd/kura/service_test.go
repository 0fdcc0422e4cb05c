package main

import (
	"math/rand/v2"
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
	url := srv.listenURL(t)
	admin = loginAdmin(t, local.home, url)
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

// A job that ended with an error a user can act on keeps the kind of that
// error, so `jobs show` says what to run next, through a server as
// locally: here a backup that filled the one tape of its library.
func TestJobErrorsSayWhatToRunNext(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)
	src := filepath.Join(local.dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	b := make([]byte, 20<<20) // incompressible, more than the one 16 MiB tape holds
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(src, "big"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	local.ok("vtl", "create", "tiny", "--slots", "1", "--drives", "1", "--tape-size", "16MiB")
	r := local.expect(exitFailure, "backup", "--vtl", "tiny", "--compress", "none", src)
	const hint = "add tapes with `kura tape add`"
	if !strings.Contains(r.stderr, hint) {
		t.Fatalf("the backup that filled its library should say how to add tapes:\n%s", r)
	}
	var jobs []struct {
		ID int64 `json:"id"`
	}
	local.json(0, &jobs, "jobs", "list", "--kind", "backup", "--state", "failed", "--json")
	if len(jobs) != 1 {
		t.Fatalf("failed backup jobs: %+v", jobs)
	}
	if r := sameBothWays(t, local, admin, "jobs", "show", itoa64(jobs[0].ID)); !strings.Contains(r.stdout, hint) {
		t.Errorf("jobs show of the failed backup should say how to add tapes:\n%s", r)
	}
	var j struct {
		ErrorCode  string `json:"error_code"`
		ErrorField string `json:"error_field"`
	}
	admin.json(0, &j, "jobs", "show", itoa64(jobs[0].ID), "--json")
	if j.ErrorCode != "conflict" || j.ErrorField != "no_pool_tape" {
		t.Errorf("jobs show --json: error_code %q, error_field %q; want conflict, no_pool_tape", j.ErrorCode, j.ErrorField)
	}
}

// A verify that finds problems exits 4 through a server as locally, and
// its job says why by its error code, not only by its words.
func TestVerifyProblemsExit4ByCode(t *testing.T) {
	t.Parallel()
	local, admin := serverAndAdmin(t)
	src := filepath.Join(local.dir, "src")
	writeTree(t, src, map[string]string{"a.txt": "a\n"})
	fig := local.backup(src)
	local.ok("tape", "export", fig.Tapes[0]) // its data is offline: the verify cannot read it
	for _, k := range []*kura{admin, local} {
		if r := k.run("verify", itoa64(fig.SavesetID)); r.code != exitVerify || !strings.Contains(r.stderr, "verify found problems") {
			t.Fatalf("verify of a saveset whose tape is exported: want exit 4:\n%s", r)
		}
	}
	var jobs []struct {
		ID        int64  `json:"id"`
		ErrorCode string `json:"error_code"`
	}
	admin.json(0, &jobs, "jobs", "list", "--kind", "verify", "--json")
	if len(jobs) != 2 || jobs[0].ErrorCode != "verify_failed" || jobs[1].ErrorCode != "verify_failed" {
		t.Errorf("the two verify jobs: %+v; want both with error_code verify_failed", jobs)
	}
}
