package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/console"
)

// userAdd runs kura user add with the password on stdin.
func (k *kura) userAdd(password string, args ...string) (stdout, stderr string, code int) {
	k.t.Helper()
	cmd := k.command(k.t.Context(), append([]string{"user", "add"}, args...)...)
	cmd.Stdin = strings.NewReader(password + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		k.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// kura user add/list/remove keep the console's users in the home, with
// argon2id hashes; a bad password or name is a usage error and adds
// nobody.
func TestUserCommands(t *testing.T) {
	k := newKura(t)
	if out, errs, code := k.userAdd("long enough password", "alice"); code != 0 || !strings.Contains(out, "alice added (admin)") {
		t.Fatalf("user add alice: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := k.userAdd("another long one", "olga", "--operator"); code != 0 || !strings.Contains(out, "olga added (operator)") {
		t.Fatalf("user add olga --operator: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := k.userAdd("short", "bob"); code != exitUsage || !strings.Contains(errs, "at least 10") {
		t.Errorf("a short password: exit %d %q; want %d saying how long", code, errs, exitUsage)
	}
	if _, _, code := k.userAdd("long enough password", "no spaces"); code != exitUsage {
		t.Errorf("a name with a space: exit %d; want %d", code, exitUsage)
	}
	if _, errs, code := k.userAdd("long enough password", "alice"); code != exitFailure || !strings.Contains(errs, "exists") {
		t.Errorf("alice again: exit %d %q; want %d, exists", code, errs, exitFailure)
	}
	list := k.ok("user", "list")
	if !strings.Contains(list.stdout, "alice") || !strings.Contains(list.stdout, "olga") || strings.Contains(list.stdout, "bob") {
		t.Errorf("user list:\n%s", list.stdout)
	}
	b, err := os.ReadFile(console.UsersFile(k.home))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "long enough") || !strings.Contains(string(b), "argon2id$") {
		t.Errorf("the user file holds the password or no argon2id hash:\n%s", b)
	}
	if fi, _ := os.Stat(console.UsersFile(k.home)); fi.Mode().Perm() != 0o600 {
		t.Errorf("the user file's mode %v; want 0600", fi.Mode().Perm())
	}
	role, err := console.OpenUsers(console.UsersFile(k.home)).Check("olga", "another long one")
	if err != nil || role != console.RoleOperator {
		t.Errorf("olga signs in as %q (%v); want operator", role, err)
	}
	k.ok("user", "remove", "olga")
	if list := k.ok("user", "list"); strings.Contains(list.stdout, "olga") {
		t.Errorf("olga listed after remove:\n%s", list.stdout)
	}
}
