package seal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/seal"
)

const encChunk = seal.ChunkSize + 16 // a chunk on the media: plaintext + Poly1305 tag

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func sealBytes(t *testing.T, plain []byte, recipients ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := seal.NewWriter(&out, recipients)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// countingParts cuts data into parts of the given sizes and counts the
// bytes read from them.
func countingParts(data []byte, sizes []int64) (*seal.Parts, *int64) {
	var read int64
	starts := make([]int64, len(sizes))
	var off int64
	for i, s := range sizes {
		starts[i] = off
		off += s
	}
	p := seal.NewParts(sizes, func(part int, off int64) (io.ReadCloser, error) {
		return io.NopCloser(&counter{r: bytes.NewReader(data[starts[part]+off:]), n: &read}), nil
	})
	return p, &read
}

type counter struct {
	r io.Reader
	n *int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

func newKey(t *testing.T) *age.X25519Identity {
	t.Helper()
	k, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A read in the middle of a large sealed saveset spread over three parts
// decrypts the right bytes and reads only the header, the last chunk (which
// authenticates the size) and the chunks under the read: not the saveset.
func TestOpenReadsOnlyTheChunksItNeeds(t *testing.T) {
	k := newKey(t)
	plain := randomBytes(8<<20, 1)
	ct := sealBytes(t, plain, k.Recipient().String())
	third := int64(len(ct) / 3)
	parts, read := countingParts(ct, []int64{third, third + 12345, int64(len(ct)) - 2*third - 12345})
	pt, size, err := seal.Open(parts, parts.Size(), []age.Identity{k})
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(plain)) {
		t.Fatalf("plaintext size %d, want %d", size, len(plain))
	}
	// Across the first part boundary, and across a chunk boundary.
	for _, off := range []int64{third - 5000, 5*seal.ChunkSize - 10, int64(len(plain)) - 100} {
		*read = 0
		got := make([]byte, 3000)
		n, err := pt.ReadAt(got, off)
		if err != nil && !(err == io.EOF && off+int64(n) == size) {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
		if !bytes.Equal(got[:n], plain[off:off+int64(n)]) {
			t.Fatalf("ReadAt %d: wrong bytes", off)
		}
		if *read > 3*encChunk+skipAheadBound {
			t.Errorf("ReadAt %d of %d bytes read %d bytes of %d", off, n, *read, len(ct))
		}
	}
}

// skipAheadBound: a read just ahead of the open stream's position may read
// on to it (at most 1 MiB) rather than open a new stream.
const skipAheadBound = 1 << 20

func TestWrongKeyTamperedAndCut(t *testing.T) {
	k, other := newKey(t), newKey(t)
	plain := randomBytes(5*seal.ChunkSize+77, 2)
	ct := sealBytes(t, plain, k.Recipient().String())
	open := func(b []byte, ids ...age.Identity) ([]byte, error) {
		r, n, err := seal.Open(bytes.NewReader(b), int64(len(b)), ids)
		if err != nil {
			return nil, err
		}
		out := make([]byte, n)
		_, err = r.ReadAt(out, 0)
		if err == io.EOF {
			err = nil
		}
		return out, err
	}
	stream := func(b []byte, ids ...age.Identity) ([]byte, error) {
		r, err := seal.Decrypt(bytes.NewReader(b), ids)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	}
	for name, read := range map[string]func([]byte, ...age.Identity) ([]byte, error){"Open": open, "Decrypt": stream} {
		if got, err := read(ct, other, k); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%s with the ring holding the key: %v", name, err)
		}
		if _, err := read(ct, other); !errors.Is(err, seal.ErrWrongKey) {
			t.Errorf("%s with the wrong key: %v, want ErrWrongKey", name, err)
		}
		if _, err := read(ct); !errors.Is(err, seal.ErrNoKey) {
			t.Errorf("%s without a key: %v, want ErrNoKey", name, err)
		}
		payload := len(ct) - (len(plain) + 6*16) // header and nonce before it
		flipped := bytes.Clone(ct)
		flipped[payload+2*encChunk+9] ^= 1
		swapped := bytes.Clone(ct)
		copy(swapped[payload+encChunk:], ct[payload+2*encChunk:payload+3*encChunk])
		copy(swapped[payload+2*encChunk:], ct[payload+encChunk:payload+2*encChunk])
		header := bytes.Clone(ct) // the header's MAC altered (an altered stanza reads as a wrong key)
		header[bytes.Index(ct, []byte("\n--- "))+8] ^= 1
		for what, b := range map[string][]byte{"flipped byte": flipped, "swapped chunks": swapped,
			"altered header": header, "last chunk cut": ct[:len(ct)-(77+16)]} {
			if _, err := read(b, k); !errors.Is(err, seal.ErrTampered) {
				t.Errorf("%s, %s: %v, want ErrTampered", name, what, err)
			}
		}
	}
}

// The ring is an age identity file the stock tool reads; rotation keeps the
// old keys; an imported key opens savesets but does not become current.
func TestRingWithTheAgeTool(t *testing.T) {
	ageBin, err := exec.LookPath("age")
	if err != nil {
		t.Fatal("the age command is needed (Debian package age; scripts/test.sh installs it)")
	}
	path := filepath.Join(t.TempDir(), "agent", seal.RingFile)
	r1, created, err := seal.EnsureRing(path)
	if err != nil || !created {
		t.Fatalf("EnsureRing: %v, created %v", err, created)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key ring mode: %v %v", st, err)
	}
	again, created, err := seal.EnsureRing(path)
	if err != nil || created || again.Recipient() != r1.Recipient() {
		t.Fatalf("EnsureRing again: %v, created %v", err, created)
	}
	plain := randomBytes(3*seal.ChunkSize+5, 3)
	ct := sealBytes(t, plain, r1.Recipient())

	r2, err := seal.Rotate(path)
	if err != nil || r2.Len() != 2 || r2.Recipient() == r1.Recipient() {
		t.Fatalf("Rotate: %v, %d keys", err, r2.Len())
	}
	rec := newKey(t)
	r3, err := seal.Import(path, []byte("# recovery\n"+rec.String()+"\n"))
	if err != nil || r3.Len() != 3 || r3.Recipient() != r2.Recipient() {
		t.Fatalf("Import: %v, %d keys, current %s (want %s)", err, r3.Len(), r3.Recipient(), r2.Recipient())
	}
	byRecovery := sealBytes(t, plain, rec.Recipient().String())
	for what, b := range map[string][]byte{"old key": ct, "imported key": byRecovery} {
		cmd := exec.Command(ageBin, "-d", "-i", path)
		cmd.Stdin = bytes.NewReader(b)
		out, err := cmd.Output()
		if err != nil || !bytes.Equal(out, plain) {
			t.Errorf("age -d -i RING, %s: %v (%d bytes)", what, err, len(out))
		}
	}
	if _, err := seal.ParseRecipient("age1notakey"); !errors.Is(err, seal.ErrBadRecipient) {
		t.Errorf("a bad recipient: %v", err)
	}
}

// BenchmarkSeal is the cost of encryption alone: 1 MiB frames into one age
// file, by age's own writer (serial, what the agent used before) and by
// seal.Writer with one and two sealers. The destination discards.
func BenchmarkSeal(b *testing.B) {
	k, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	frame := randomBytes(1<<20, 5)
	run := func(b *testing.B, w io.WriteCloser) {
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if _, err := w.Write(frame); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("age", func(b *testing.B) {
		w, err := age.Encrypt(io.Discard, k.Recipient())
		if err != nil {
			b.Fatal(err)
		}
		run(b, w)
	})
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("writer/workers=%d", workers), func(b *testing.B) {
			w, err := seal.NewWriterOptions(io.Discard, []string{k.Recipient().String()}, seal.WriterOptions{Workers: workers})
			if err != nil {
				b.Fatal(err)
			}
			run(b, w)
		})
	}
}
