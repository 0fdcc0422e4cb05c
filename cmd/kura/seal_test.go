package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
)

// Encryption as an administrator meets it: a server with a recovery
// recipient, an agent whose key is made at enrollment, `client set
// --encrypt`, a backup, and the stock-tool recipe (cat, age, zstd, GNU tar)
// run with the agent's exported keys and with the recovery key.
func TestEncryptedClientExportAndStockRecipe(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("age"); err != nil {
		t.Fatal("the recipe test needs the age command (Debian package age; scripts/test.sh installs it)")
	}
	rec, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	srvK := newKura(t)
	srv := srvK.start("server", "--listen", "127.0.0.1:0", "--recovery-recipient", rec.Recipient().String())
	url := srv.listenURL(t)
	admin := loginAdmin(t, srvK.home, url)

	tok := strings.TrimSpace(admin.ok("token", "create", "--expires", "10m").stdout)
	c1 := newKura(t)
	if r := c1.ok("agent", "enroll", "--server", url, "--token", tok, "--name", "c1"); !strings.Contains(r.stdout, "kura agent key export") {
		t.Fatalf("enroll does not say to keep a copy of the key:\n%s", r)
	}
	c1.start("agent", "run")
	admin.connected("c1")
	var cl clientJSON
	admin.json(0, &cl, "client", "set", "c1", "--encrypt", "--json")
	if !cl.Encrypt {
		t.Fatalf("client set --encrypt: %+v", cl)
	}

	src := filepath.Join(c1.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	var fig figures
	admin.json(0, &fig, "backup", "--client", "c1", "--json", "--compress", "low", src)
	if fig.Status != "completed" {
		t.Fatalf("encrypted backup: %+v", fig)
	}

	if r := admin.ok("saveset", "show", itoa64(fig.SavesetID)); !strings.Contains(r.stdout, "Encrypted") {
		t.Errorf("saveset show does not say the saveset is encrypted:\n%s", r)
	}
	ex := c1.ok("agent", "key", "export")
	if !strings.Contains(ex.stderr, "A lost key means lost backups") || !strings.Contains(ex.stdout, "AGE-SECRET-KEY-1") {
		t.Fatalf("agent key export:\n%s", ex)
	}
	keys := filepath.Join(t.TempDir(), "c1-keys.txt")
	recKey := filepath.Join(t.TempDir(), "recovery.txt")
	for p, b := range map[string]string{keys: ex.stdout, recKey: rec.String() + "\n"} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	recipe := strings.TrimSpace(admin.ok("saveset", "recipe", itoa64(fig.SavesetID)).stdout)
	if !strings.Contains(recipe, "| age -d -i ") {
		t.Fatalf("the recipe of an encrypted saveset has no age stage:\n%s", recipe)
	}
	run := func(keyFile string) (string, error) {
		out := t.TempDir()
		cmd := exec.Command("sh", "-c", recipe)
		cmd.Dir = out
		cmd.Env = os.Environ()
		if keyFile != "" {
			cmd.Env = append(cmd.Env, "KURA_KEYS="+keyFile)
		}
		b, err := cmd.CombinedOutput()
		if err != nil {
			return string(b), err
		}
		sameTree(t, readTree(t, src), readTree(t, restoredAt(out, src)))
		return string(b), nil
	}
	for _, k := range []string{keys, recKey} {
		if out, err := run(k); err != nil {
			t.Fatalf("recipe with KURA_KEYS=%s: %v\n%s", k, err, out)
		}
	}
	if out, err := run(""); err == nil || !strings.Contains(out, "KURA_KEYS") {
		t.Errorf("recipe without KURA_KEYS: %v\n%s", err, out)
	}

	// The server holds no key: what needs the index or the data says so
	// and exits 1; the media verify needs no key.
	for _, args := range [][]string{{"ls", itoa64(fig.SavesetID)}, {"verify", "--level", "data", itoa64(fig.SavesetID)}} {
		if r := admin.run(args...); r.code != 1 || !strings.Contains(r.stderr, "encrypted by client c1") {
			t.Errorf("kura %v on an encrypted saveset, on the server:\n%s", args, r)
		}
	}
	// A search goes on over the savesets it can read, and names the others.
	if r := admin.run("find", "*"); r.code == 1 || !strings.Contains(r.stdout+r.stderr, "saveset 1 not searched: encrypted by client c1") {
		t.Errorf("kura find over an encrypted saveset:\n%s", r)
	} else {
		t.Logf("%s", r)
	}
	admin.ok("verify", "--level", "media", itoa64(fig.SavesetID))

	// On the agent holding the key, ls and find read the encrypted index.
	if r := c1.ok("agent", "ls", itoa64(fig.SavesetID), src); !strings.Contains(r.stdout, "notes.txt") || !strings.Contains(r.stdout, "sub/") {
		t.Errorf("agent ls:\n%s", r)
	}
	if r := c1.ok("agent", "find", "a.txt"); !strings.Contains(r.stdout, "sub/deeper/a.txt") || !strings.HasPrefix(strings.Split(r.stdout, "\n")[1], itoa64(fig.SavesetID)) {
		t.Errorf("agent find:\n%s", r)
	}

	// The data verify runs where the key is.
	if r := c1.ok("agent", "verify", itoa64(fig.SavesetID)); !strings.Contains(r.stdout, "0 problem(s)") {
		t.Errorf("agent verify:\n%s", r)
	}

	// And Kura's own restore, on the agent holding the key.
	dst := filepath.Join(c1.dir, "restored")
	admin.ok("restore", "--client", "c1", itoa64(fig.SavesetID), "--to", dst)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(dst, src)))

	// The source verify too: the files on the client compared with the
	// encrypted saveset, what changed since named.
	if r := c1.ok("agent", "verify", "--level", "source", itoa64(fig.SavesetID)); !strings.Contains(r.stdout, "Verify (source)") || !strings.Contains(r.stdout, "0 problem(s)") {
		t.Errorf("agent verify --level source of an unchanged tree:\n%s", r)
	}
	if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("changed since the backup\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(src, "sub", "deeper", "a.txt")); err != nil {
		t.Fatal(err)
	}
	r := c1.expect(exitVerify, "agent", "verify", "--level", "source", itoa64(fig.SavesetID))
	for _, want := range []string{"notes.txt: size differs on disk", "sub/deeper/a.txt: missing on disk", "2 problem(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agent verify --level source after changes: no %q in\n%s", want, r)
		}
	}
}

// The recovery recipient is kept in the server's home: set by the flag (or
// `kura server recovery-recipient set`), it survives a restart without the
// flag, and a lost client's encrypted backup restores elsewhere with the
// recovery key alone.
func TestRecoveryRecipientKeptInHome(t *testing.T) {
	t.Parallel()
	rec, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	srvK := newKura(t)
	if r := srvK.ok("server", "recovery-recipient", "show"); !strings.Contains(r.stdout, "No recovery recipient") {
		t.Errorf("recovery-recipient show on a new home:\n%s", r)
	}
	if r := srvK.expect(exitUsage, "server", "recovery-recipient", "set", "age1notakey"); !strings.Contains(r.stderr, "age1notakey") {
		t.Errorf("recovery-recipient set with a bad key:\n%s", r)
	}
	srvK.ok("server", "recovery-recipient", "set", other.Recipient().String())
	srvK.ok("server", "recovery-recipient", "clear")
	if r := srvK.ok("server", "recovery-recipient", "show"); strings.Contains(r.stdout, "age1") {
		t.Errorf("recovery-recipient show after clear:\n%s", r)
	}

	// Started once with the flag, then restarted without it.
	first := srvK.start("server", "--listen", "127.0.0.1:0", "--recovery-recipient", rec.Recipient().String())
	first.line(t, "recovery        "+rec.Recipient().String())
	first.stop()
	var kept struct {
		Recipients []string `json:"recipients"`
	}
	srvK.json(0, &kept, "server", "recovery-recipient", "show", "--json")
	if len(kept.Recipients) != 1 || kept.Recipients[0] != rec.Recipient().String() {
		t.Errorf("recovery-recipient show --json after the flag: %+v", kept)
	}
	srv := srvK.start("server", "--listen", "127.0.0.1:0")
	admin, enroll := sealAdmin(t, srvK, srv)
	srv.line(t, "recovery        "+rec.Recipient().String())
	c1 := enroll("c1")
	a1 := c1.start("agent", "run")
	admin.connected("c1")
	admin.ok("client", "set", "c1", "--encrypt")
	src := filepath.Join(c1.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	var fig figures
	admin.json(0, &fig, "backup", "--client", "c1", "--json", "--compress", "low", src)
	if fig.Status != "completed" {
		t.Fatalf("encrypted backup: %+v", fig)
	}
	a1.stop() // c1 is lost, and its keys with it

	c9 := enroll("c9")
	recKey := filepath.Join(t.TempDir(), "recovery.txt")
	if err := os.WriteFile(recKey, []byte(rec.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c9.ok("agent", "key", "import", recKey)
	c9.start("agent", "run")
	admin.connected("c9")
	dst := filepath.Join(c9.dir, "restored")
	admin.ok("restore", "--client", "c1", "--to-client", "c9", itoa64(fig.SavesetID), "--to", dst)
	sameTree(t, readTree(t, src), readTree(t, restoredAt(dst, src)))
}

// sealAdmin logs an admin in to the server srv of home srvK, and gives a
// function that enrolls a client of that name (its agent not started).
func sealAdmin(t *testing.T, srvK *kura, srv *proc) (*kura, func(string) *kura) {
	t.Helper()
	url := srv.listenURL(t)
	admin := loginAdmin(t, srvK.home, url)
	return admin, func(name string) *kura { return admin.enrollAgent(url, name, nil) }
}

// Encryption as a policy option: the policy's --encrypt or the client's
// own setting encrypts a backup; neither turns the other off. A policy of
// this machine (no agent) cannot encrypt.
func TestPolicyEncrypt(t *testing.T) {
	t.Parallel()
	local := newKura(t)
	local.ok("selection", "create", "docs", local.dir)
	if r := local.expect(exitUsage, "policy", "create", "p", "--selection", "docs", "--keep-generations", "1", "--encrypt"); !strings.Contains(r.stderr, "needs a client's agent") {
		t.Errorf("a local policy with --encrypt:\n%s", r)
	}

	srvK := newKura(t)
	srv := srvK.start("server", "--listen", "127.0.0.1:0")
	admin, enroll := sealAdmin(t, srvK, srv)
	c1 := enroll("c1")
	c1.start("agent", "run")
	admin.connected("c1")
	src := filepath.Join(c1.dir, "src")
	files, _ := sampleTree()
	writeTree(t, src, files)
	admin.ok("selection", "create", "--client", "c1", "docs", src)
	var pol struct {
		Encrypt bool `json:"encrypt"`
	}
	admin.json(0, &pol, "policy", "create", "--client", "c1", "sealed", "--selection", "docs", "--keep-generations", "1", "--encrypt", "--json")
	if !pol.Encrypt {
		t.Fatalf("policy create --encrypt: %+v", pol)
	}
	if r := admin.ok("policy", "show", "sealed"); !strings.Contains(r.stdout, "encrypt") {
		t.Errorf("policy show does not say the policy encrypts:\n%s", r)
	}
	admin.ok("policy", "create", "--client", "c1", "clear", "--selection", "docs", "--keep-generations", "1")

	encryption := func(policy string) string {
		t.Helper()
		var f figures
		admin.json(0, &f, "policy", "run", policy, "--level", "full", "--json")
		var ss struct {
			Encryption string `json:"encryption"`
		}
		admin.json(0, &ss, "saveset", "show", itoa64(f.SavesetID), "--json")
		return ss.Encryption
	}
	if e := encryption("sealed"); e != "age" {
		t.Errorf("a backup of a policy with --encrypt, client not set to encrypt: encryption %q, want age", e)
	}
	if e := encryption("clear"); e != "" {
		t.Errorf("a backup of a policy without --encrypt, client not set to encrypt: encryption %q, want none", e)
	}
	admin.ok("client", "set", "c1", "--encrypt")
	if e := encryption("clear"); e != "age" {
		t.Errorf("a backup of a policy without --encrypt, client set to encrypt: encryption %q, want age", e)
	}
	admin.ok("policy", "edit", "--client", "c1", "sealed", "--encrypt=false")
	admin.ok("client", "set", "c1", "--encrypt=false")
	if e := encryption("sealed"); e != "" {
		t.Errorf("after policy edit --encrypt=false and client set --encrypt=false: encryption %q, want none", e)
	}
}
