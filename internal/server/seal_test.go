package server_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/agent"
	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/seal"
)

// sealedRig is a server with a recovery recipient and an agent c1 whose
// backups are encrypted, and one encrypted backup of a small tree.
type sealedRig struct {
	*rig
	recovery  *age.X25519Identity
	agentHome string
	src       string
	ss        *api.SavesetInfo
}

func newSealedRig(t *testing.T) *sealedRig {
	t.Helper()
	rec, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	opts := fastOpts
	opts.RecoveryRecipients = []string{rec.Recipient().String()}
	r := startServerWith(t, t.TempDir(), "", opts)
	home, _ := r.runAgent("c1")
	on := true
	cl, err := r.admin.UpdateClient(t.Context(), "c1", api.ClientUpdate{Encrypt: &on})
	if err != nil || !cl.Encrypt {
		t.Fatalf("client set --encrypt: %+v, %v", cl, err)
	}
	src := t.TempDir()
	makeTree(t, src, 40, 7)
	// A file whose name and content are easy to look for on the media.
	if err := os.WriteFile(filepath.Join(src, "secret-name.txt"), []byte(strings.Repeat("the plaintext secret\n", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Compress: "low"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("encrypted backup: %s (%s)", j.State, j.Error)
	}
	return &sealedRig{rig: r, recovery: rec, agentHome: home, src: src, ss: r.savesetRecord(j.SavesetID)}
}

// savesetRecord is the record of saveset id.
func (r *rig) savesetRecord(id int64) *api.SavesetInfo {
	r.t.Helper()
	ss, err := r.admin.Saveset(r.t.Context(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return ss
}

// tapeFile is the path of a tape file of the server's library.
func (r *rig) tapeFile(p api.Part) string {
	r.t.Helper()
	var found string
	want := string(filepath.Separator) + filepath.Join(p.Barcode, fmt.Sprintf("%06d.data", p.File))
	_ = filepath.WalkDir(r.home, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, want) {
			found = path
		}
		return nil
	})
	if found == "" {
		r.t.Fatalf("no tape file %s under %s", want, r.home)
	}
	return found
}

// rewriteTapeFile changes a finished tape file's data with edit and makes
// its block checksums, checksum table CRC and filemark agree again: damage
// that the media layer cannot see, as a forger would leave it.
func rewriteTapeFile(t *testing.T, dataPath string, edit func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	data = edit(data)
	base := strings.TrimSuffix(dataPath, ".data")
	sum, err := os.ReadFile(base + ".crc")
	if err != nil {
		t.Fatal(err)
	}
	mark, err := os.ReadFile(base + ".mark")
	if err != nil {
		t.Fatal(err)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	bs := int(binary.LittleEndian.Uint32(sum[8:]))
	sum = sum[:16]
	for off := 0; off < len(data); off += bs {
		sum = binary.LittleEndian.AppendUint32(sum, crc32.Checksum(data[off:min(off+bs, len(data))], tab))
	}
	if int64(len(data)) != int64(binary.LittleEndian.Uint64(mark[16:])) {
		t.Fatalf("the edit changed the length of %s", dataPath)
	}
	binary.LittleEndian.PutUint32(mark[32:], crc32.Checksum(sum[16:], tab))
	n := len(mark) - 4
	binary.LittleEndian.PutUint32(mark[n:], crc32.Checksum(mark[:n], tab))
	for p, b := range map[string][]byte{dataPath: data, base + ".crc": sum, base + ".mark": mark} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// An encrypting client's saveset holds only ciphertext on the server (its
// data and its index, on tape and in the index cache), restores whole and
// file by file on its agent, and passes a media verify without a key.
func TestEncryptedBackupHoldsOnlyCiphertextAndRestores(t *testing.T) {
	t.Parallel()
	r := newSealedRig(t)
	if r.ss.Encryption != seal.Scheme {
		t.Fatalf("saveset encryption %q, want %q", r.ss.Encryption, seal.Scheme)
	}
	files := []string{r.tapeFile(*r.ss.IndexPart)}
	for _, p := range r.ss.Parts {
		files = append(files, r.tapeFile(p))
	}
	idxCache := filepath.Join(r.home, "index", fmt.Sprintf("%d.idx", r.ss.ID))
	files = append(files, idxCache)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !seal.IsSealed(b) {
			t.Errorf("%s is not an age file: %q", f, b[:min(len(b), 32)])
		}
		for _, clear := range []string{"secret-name", "the plaintext secret", "f0001.dat", "KURA SAVESET LABEL", "KURAIDX"} {
			if bytes.Contains(b, []byte(clear)) {
				t.Errorf("%s holds %q in the clear", f, clear)
			}
		}
	}
	// The agent's key ring is its own: private, and not on the server.
	st, err := os.Stat(agent.RingPath(r.agentHome))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("agent key ring: %v, %v", st, err)
	}

	to := t.TempDir()
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("restore: %s (%s)", j.State, j.Error)
	}
	sameTree(t, r.src, filepath.Join(to, r.src))

	one := t.TempDir()
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: one,
		Includes: []string{filepath.Join(r.src, "secret-name.txt")}})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("single-file restore: %s (%s)", j.State, j.Error)
	}
	got, err := os.ReadFile(filepath.Join(one, r.src, "secret-name.txt"))
	if err != nil || string(got) != strings.Repeat("the plaintext secret\n", 5000) {
		t.Fatalf("single-file restore: %d bytes, %v", len(got), err)
	}

	// A tape scan (the catalog lost) names the age files for what they are.
	found, err := r.srv.Env().Scan(r.ss.Parts[0].Barcode)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.Kind != "encrypted" || !strings.Contains(f.Note, "encrypted saveset") {
			t.Errorf("tape scan of an encrypted saveset's tape file %d: %+v", f.File, f)
		}
	}

	vj := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: r.ss.ID, Level: "media"})[0])
	if vj.State != catalog.StateSucceeded {
		t.Fatalf("media verify without a key: %s (%s)", vj.State, vj.Error)
	}
	dj := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: r.ss.ID, Level: "data"})[0])
	if dj.State != catalog.StateFailed || !strings.Contains(dj.Error, "encrypted") {
		t.Fatalf("data verify on the server: %s (%s); want a failure saying the saveset is encrypted", dj.State, dj.Error)
	}
}

// A machine without the key gets a clear error and writes nothing; the
// holder of the recovery key restores a lost client's saveset on another
// machine; a rotated key encrypts the new savesets and the old ones stay
// readable.
func TestEncryptedWrongKeyRecoveryAndRotation(t *testing.T) {
	t.Parallel()
	r := newSealedRig(t)
	c2home, _ := r.runAgent("c2")

	// c2 holds no key (a ring lost, or an agent enrolled before encryption):
	// a cross-client restore fails, nothing written.
	if err := os.Remove(agent.RingPath(c2home)); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to, ToClient: "c2"})[0])
	if j.State != catalog.StateFailed {
		t.Fatalf("restore onto a machine without the key: %s (%s), want failed", j.State, j.Error)
	}
	if !strings.Contains(j.Error, "encrypted") || !strings.Contains(j.Error, "no decryption key") {
		t.Errorf("restore without the key: error %q does not say why", j.Error)
	}
	if ents, _ := os.ReadDir(to); len(ents) != 0 {
		t.Errorf("restore without the key wrote %d entries", len(ents))
	}
	// With a key of its own, the wrong key.
	if _, _, err := seal.EnsureRing(agent.RingPath(c2home)); err != nil {
		t.Fatal(err)
	}
	j = r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to, ToClient: "c2"})[0])
	if j.State != catalog.StateFailed || !strings.Contains(j.Error, "wrong key") {
		t.Fatalf("restore with the wrong key: %s (%s), want failed naming the wrong key", j.State, j.Error)
	}
	if ents, _ := os.ReadDir(to); len(ents) != 0 {
		t.Errorf("restore with the wrong key wrote %d entries", len(ents))
	}

	// c2 browses only its own savesets: c1's index is refused to it.
	c2api := agentAPI(t, c2home, r.url)
	wantCode(t, "agent c2 reading c1's index", get(t, c2api, fmt.Sprintf("/agent/savesets/%d/index", r.ss.ID)), api.CodeForbidden)
	if err := get(t, agentAPI(t, r.agentHome, r.url), fmt.Sprintf("/agent/savesets/%d/index", r.ss.ID)); err != nil {
		t.Errorf("agent c1 reading its own index: %v", err)
	}
	// A read that starts outside the saveset is refused, saying so.
	for _, q := range []string{"part=99", "part=-1", "offset=-5", "part=x"} {
		err := get(t, agentAPI(t, r.agentHome, r.url), fmt.Sprintf("/agent/savesets/%d/data?%s", r.ss.ID, q))
		wantCode(t, "data at "+q, err, api.CodeBadRequest)
		if err == nil || !strings.Contains(err.Error(), "must be a location inside saveset") {
			t.Errorf("data at %s: %v, want the location named as the problem", q, err)
		}
	}

	// Recovery: c1 is lost; the administrator adds the recovery key to c2's
	// ring and restores c1's saveset there.
	if _, err := seal.Import(agent.RingPath(c2home), []byte(r.recovery.String()+"\n")); err != nil {
		t.Fatal(err)
	}
	j = r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to, ToClient: "c2"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("restore with the recovery key: %s (%s)", j.State, j.Error)
	}
	sameTree(t, r.src, filepath.Join(to, r.src))

	// Rotation: c1's new key encrypts the next saveset; its old key does not
	// open that one, and c1 restores both.
	old, err := seal.LoadRing(agent.RingPath(r.agentHome))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seal.Rotate(agent.RingPath(r.agentHome)); err != nil {
		t.Fatal(err)
	}
	nj := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{r.src}})[0])
	if nj.State != catalog.StateSucceeded {
		t.Fatalf("backup after rotation: %s (%s)", nj.State, nj.Error)
	}
	nss := r.savesetRecord(nj.SavesetID)
	f, err := os.Open(r.tapeFile(*nss.IndexPart))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := seal.Decrypt(f, old.Identities()); !errors.Is(err, seal.ErrWrongKey) {
		t.Errorf("the old key opens the saveset made after rotation: %v", err)
	}
	for _, id := range []int64{r.ss.ID, nss.ID} {
		to := t.TempDir()
		if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: id, To: to})[0]); j.State != catalog.StateSucceeded {
			t.Fatalf("restore of saveset %d after rotation: %s (%s)", id, j.State, j.Error)
		}
		sameTree(t, r.src, filepath.Join(to, r.src))
	}
}

// Ciphertext altered behind the block checksums (which are made to agree)
// is detected by the encryption's authentication, named, and none of it
// is restored: a flipped byte, and two chunks swapped.
func TestTamperedCiphertextIsNamedNeverRestored(t *testing.T) {
	t.Parallel()
	r := newSealedRig(t)
	if len(r.ss.Parts) != 1 {
		t.Fatalf("%d parts", len(r.ss.Parts))
	}
	data := r.tapeFile(r.ss.Parts[0])
	orig, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	const enc = seal.ChunkSize + 16 // a chunk on the media
	if len(orig) < 4*enc {
		t.Fatalf("the saveset is too small for the test: %d bytes", len(orig))
	}
	hdr := bytes.Index(orig, []byte("\n--- ")) // the age header's MAC line
	nl := bytes.IndexByte(orig[hdr+1:], '\n')
	payload := hdr + 1 + nl + 1 + 16 // after the header and the nonce
	edits := map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[payload+2*enc+100] ^= 0x40; return b },
		"swapped chunks": func(b []byte) []byte {
			c1 := bytes.Clone(b[payload+enc : payload+2*enc])
			copy(b[payload+enc:], b[payload+2*enc:payload+3*enc])
			copy(b[payload+2*enc:], c1)
			return b
		},
	}
	a, err := agent.Open(agent.Options{Home: r.agentHome, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.VerifyData(t.Context(), r.ss.ID); err != nil || len(res.Problems) != 0 || res.Checked == 0 {
		t.Fatalf("data verify on the agent before the tampering: %+v, %v", res, err)
	}
	for name, edit := range edits {
		rewriteTapeFile(t, data, func(b []byte) []byte { return edit(bytes.Clone(orig)) })
		// The data verify on the agent names what does not authenticate.
		res, err := a.VerifyData(t.Context(), r.ss.ID)
		if err != nil || len(res.Problems) == 0 || !strings.Contains(strings.Join(res.Problems, "\n"), "does not authenticate") {
			t.Errorf("%s: data verify on the agent: %+v, %v", name, res, err)
		}
		// The media layer sees nothing wrong: the checksums agree.
		if vj := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: r.ss.ID, Level: "media"})[0]); vj.State != catalog.StateSucceeded {
			t.Fatalf("%s: media verify: %s (%s)", name, vj.State, vj.Error)
		}
		to := t.TempDir()
		j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to})[0])
		if j.State == catalog.StateSucceeded {
			t.Fatalf("%s: restore succeeded", name)
		}
		text := j.Error + strings.Join(j.Warnings, "\n")
		if !strings.Contains(text, "does not authenticate") {
			t.Errorf("%s: the restore does not name the tampering: %s", name, text)
		}
		// Whatever was restored is what was backed up: nothing of the
		// altered data reached a file.
		want, got := treeSum(t, r.src), treeSum(t, filepath.Join(to, r.src))
		if len(got) == len(want) {
			t.Errorf("%s: every file restored from altered data", name)
		}
		for p, h := range got {
			if want[p] != h {
				t.Errorf("%s: %s restored with content that was not backed up", name, p)
			}
		}
	}
}

// An encrypted saveset spread over three tapes is one age file over its
// parts: it restores whole and file by file, and the stock tools read the
// parts concatenated. An incremental of an encrypting client reads its
// base's encrypted index on the agent and restores with its chain.
func TestEncryptedSpanningAndIncremental(t *testing.T) {
	t.Parallel()
	r := startServer(t, t.TempDir(), "")
	home, _ := r.runAgent("c1")
	on := true
	if _, err := r.admin.UpdateClient(t.Context(), "c1", api.ClientUpdate{Encrypt: &on}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.srv.Env().CreateLibrary(library.Config{Name: "small", Slots: 4, Drives: 1, TapeSize: 16 << 20}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("big%d", i)), randomBytes(4<<20, uint64(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "small", Compress: "none"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("spanning encrypted backup: %s (%s)", j.State, j.Error)
	}
	ss := r.savesetRecord(j.SavesetID)
	if len(ss.Parts) < 2 {
		t.Fatalf("the saveset did not span tapes: %d parts", len(ss.Parts))
	}
	to := t.TempDir()
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: ss.ID, To: to})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("restore: %s (%s)", j.State, j.Error)
	}
	sameTree(t, src, filepath.Join(to, src))
	one := t.TempDir()
	last := filepath.Join(src, "big4")
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: ss.ID, To: one, Includes: []string{last}})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("single-file restore from the last part: %s (%s)", j.State, j.Error)
	}
	if want, got := treeSum(t, src)["big4"], treeSum(t, filepath.Join(one, src))["big4"]; want != got {
		t.Fatalf("big4 restored from the last part differs")
	}

	// The stock tools: the parts, concatenated, are one age file.
	var parts []string
	for _, p := range ss.Parts {
		parts = append(parts, r.tapeFile(p))
	}
	stock := t.TempDir()
	cmd := exec.Command("sh", "-c", `cat "$@" | age -d -i "$KEYS" | zstd -dc | tar -xf -`, "sh")
	cmd.Args = append(cmd.Args, parts...)
	cmd.Dir, cmd.Env = stock, append(os.Environ(), "KEYS="+agent.RingPath(home))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stock tools over %d parts: %v\n%s", len(parts), err, out)
	}
	sameTree(t, src, filepath.Join(stock, src))

	// An incremental: one file changed; the rest comes from the base.
	if err := os.WriteFile(filepath.Join(src, "big1"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ij := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "small", Level: "incr"})[0])
	if ij.State != catalog.StateSucceeded || ij.Level != "incr" || ij.Figures.Files >= 5 {
		t.Fatalf("encrypted incremental: %s %s (%s), %d entries (the 4 unchanged files are not stored again)", ij.State, ij.Level, ij.Error, ij.Figures.Files)
	}
	ito := t.TempDir()
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: ij.SavesetID, To: ito})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("restore of the incremental: %s (%s)", j.State, j.Error)
	}
	sameTree(t, src, filepath.Join(ito, src))
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 9))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// A copy of an encrypted saveset is its ciphertext on other tapes, made
// without a key (its verify checks the copy's media); with the original's
// tape exported, the agent restores from the copy.
func TestEncryptedCopyIsCiphertextAndRestores(t *testing.T) {
	t.Parallel()
	r := newSealedRig(t)
	env := r.srv.Env()
	if _, err := env.CreateLibrary(library.Config{Name: "offsite", Slots: 2, Drives: 1, TapeSize: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	cj := r.wait(r.submit(api.JobRequest{Kind: api.KindCopy, Saveset: r.ss.ID, Library: "offsite", Verify: true})[0])
	if cj.State != catalog.StateSucceeded {
		t.Fatalf("copy of an encrypted saveset: %s (%s)", cj.State, cj.Error)
	}
	ss := r.savesetRecord(r.ss.ID)
	if len(ss.Copies) != 1 {
		t.Fatalf("copies: %+v", ss.Copies)
	}
	for _, p := range append(ss.Copies[0].Parts, *ss.Copies[0].IndexPart) {
		b, err := os.ReadFile(r.tapeFile(p))
		if err != nil {
			t.Fatal(err)
		}
		if !seal.IsSealed(b) || bytes.Contains(b, []byte("the plaintext secret")) {
			t.Errorf("copy tape file %s/%d is not ciphertext", p.Barcode, p.File)
		}
	}
	lib, err := env.OpenLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Export(r.ss.Parts[0].Barcode); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if j := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to})[0]); j.State != catalog.StateSucceeded {
		t.Fatalf("restore from the copy: %s (%s)", j.State, j.Error)
	}
	sameTree(t, r.src, filepath.Join(to, r.src))
}

// The server cannot read inside an encrypted saveset, so it could hand an
// older saveset of the same client (same key, authentic) over under a newer
// record. The label inside names the saveset: the agent's restore and
// verify compare it with the record, name the saveset they were given, and
// restore nothing of it.
func TestSwappedEncryptedSavesetIsNamedNotRestored(t *testing.T) {
	t.Parallel()
	r := newSealedRig(t)
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{r.src}, Compress: "low"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("second encrypted backup: %s (%s)", j.State, j.Error)
	}
	newer := r.savesetRecord(j.SavesetID)
	if len(r.ss.Parts) != 1 || len(newer.Parts) != 1 {
		t.Fatalf("parts: %d and %d", len(r.ss.Parts), len(newer.Parts))
	}
	// Whoever holds the server points the newer record at the older
	// saveset's data (authentic, under the same key).
	cat := r.srv.Env().Catalog
	rec, err := cat.Saveset(newer.ID)
	if err != nil {
		t.Fatal(err)
	}
	old, err := cat.Saveset(r.ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec.Parts = old.Parts
	if err := cat.UpdateSaveset(rec); err != nil {
		t.Fatal(err)
	}
	if vj := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: newer.ID, Level: "media"})[0]); vj.State != catalog.StateSucceeded {
		t.Fatalf("media verify after the swap: %s (%s)", vj.State, vj.Error)
	}
	want := fmt.Sprintf("its label names saveset %d of client c1", r.ss.ID)
	a, err := agent.Open(agent.Options{Home: r.agentHome, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.VerifyData(t.Context(), newer.ID); !errors.Is(err, seal.ErrOtherSaveset) || !strings.Contains(err.Error(), want) {
		t.Errorf("data verify on the agent of the swapped saveset: %v", err)
	}
	to := t.TempDir()
	rj := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: newer.ID, To: to})[0])
	if rj.State == catalog.StateSucceeded || !strings.Contains(rj.Error, "another saveset") || !strings.Contains(rj.Error, want) {
		t.Fatalf("restore of the swapped saveset: %s (%s)", rj.State, rj.Error)
	}
	if ents, _ := os.ReadDir(to); len(ents) != 0 {
		t.Errorf("the restore of the swapped saveset wrote %d entries", len(ents))
	}
	// The older saveset itself still restores.
	to = t.TempDir()
	if oj := r.wait(r.submit(api.JobRequest{Kind: api.KindRestore, Client: "c1", Saveset: r.ss.ID, To: to})[0]); oj.State != catalog.StateSucceeded {
		t.Fatalf("restore of the older saveset: %s (%s)", oj.State, oj.Error)
	}
	if want, got := treeSum(t, r.src), treeSum(t, filepath.Join(to, r.src)); len(got) != len(want) {
		t.Errorf("the older saveset restored %d of %d files", len(got), len(want))
	}
}
