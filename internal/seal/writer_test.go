package seal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/seal"
)

const batch = 16 * seal.ChunkSize // the Writer's unit of work

// The parallel Writer makes standard age files: age's own reader and
// random-access reader, and the stock age tool, decrypt them, at every
// size around the chunk and batch edges, however the bytes are written and
// however many sealers run.
func TestWriterRoundTrip(t *testing.T) {
	k := newKey(t)
	ageBin, err := exec.LookPath("age")
	if err != nil {
		t.Fatal("the age command is needed (Debian package age; scripts/test.sh installs it)")
	}
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	if err := os.WriteFile(keyFile, []byte(k.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sizes := []int{0, 1, seal.ChunkSize - 1, seal.ChunkSize, seal.ChunkSize + 1,
		batch - 1, batch, batch + 1, 2*batch + seal.ChunkSize, 3*batch + 5}
	all := randomBytes(3*batch+5, 1)
	for _, size := range sizes {
		plain := all[:size]
		for _, step := range []int{1 << 20, 12289} {
			for _, workers := range []int{1, 3} {
				name := fmt.Sprintf("size=%d/step=%d/workers=%d", size, step, workers)
				var out bytes.Buffer
				w, err := seal.NewWriterOptions(&out, []string{k.Recipient().String()}, seal.WriterOptions{Workers: workers})
				if err != nil {
					t.Fatal(err)
				}
				for p := plain; len(p) > 0; {
					n := min(step, len(p))
					if m, err := w.Write(p[:n]); err != nil || m != n {
						t.Fatalf("%s: Write: %d, %v", name, m, err)
					}
					p = p[n:]
				}
				if err := w.Close(); err != nil {
					t.Fatalf("%s: Close: %v", name, err)
				}
				chunks := max(1, (size+seal.ChunkSize-1)/seal.ChunkSize)
				header := out.Len() - size - 16*chunks
				if header < len(seal.Magic)+16 {
					t.Fatalf("%s: %d bytes for %d of plaintext: not one tag per chunk", name, out.Len(), size)
				}
				r, err := seal.Decrypt(bytes.NewReader(out.Bytes()), []age.Identity{k})
				if err != nil {
					t.Fatalf("%s: Decrypt: %v", name, err)
				}
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("%s: decrypted %d bytes (%v), want the %d written", name, len(got), err, size)
				}
				at, n, err := seal.Open(bytes.NewReader(out.Bytes()), int64(out.Len()), []age.Identity{k})
				if err != nil || n != int64(size) {
					t.Fatalf("%s: Open: %d bytes, %v", name, n, err)
				}
				if size > 0 {
					last := make([]byte, 1)
					if n, err := at.ReadAt(last, int64(size-1)); n != 1 || (err != nil && err != io.EOF) || last[0] != plain[size-1] {
						t.Fatalf("%s: ReadAt the last byte: %d, %v", name, n, err)
					}
				}
				if step == 12289 && workers == 3 {
					cmd := exec.Command(ageBin, "-d", "-i", keyFile)
					cmd.Stdin = bytes.NewReader(out.Bytes())
					got, err := cmd.Output()
					if err != nil || !bytes.Equal(got, plain) {
						t.Fatalf("%s: age -d: %v (%d bytes)", name, err, len(got))
					}
				}
			}
		}
	}
}

// Every recipient can decrypt (one header stanza each; duplicates once).
func TestWriterRecipients(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	plain := randomBytes(batch+7, 9)
	ct := sealBytes(t, plain, k1.Recipient().String(), k2.Recipient().String(), k1.Recipient().String())
	if n := bytes.Count(ct[:bytes.Index(ct, []byte("\n---"))], []byte("\n-> X25519 ")); n != 2 {
		t.Errorf("%d X25519 stanzas in the header, want 2", n)
	}
	for i, k := range []*age.X25519Identity{k1, k2} {
		r, err := seal.Decrypt(bytes.NewReader(ct), []age.Identity{k})
		if err != nil {
			t.Fatalf("recipient %d: %v", i, err)
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, plain) {
			t.Errorf("recipient %d: %d bytes, %v", i, len(got), err)
		}
	}
	if _, err := seal.NewWriter(io.Discard, nil); !errors.Is(err, seal.ErrBadRecipient) {
		t.Errorf("no recipient: %v", err)
	}
	if _, err := seal.NewWriter(io.Discard, []string{"age1notakey"}); !errors.Is(err, seal.ErrBadRecipient) {
		t.Errorf("a bad recipient: %v", err)
	}
}

// failAfter is a destination that takes n writes, then fails, and records
// every write it is given.
type failAfter struct {
	mu     sync.Mutex
	n      int
	writes int
	err    error
	buf    bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.writes > f.n {
		return 0, f.err
	}
	return f.buf.Write(p)
}

// The destination's error sticks: a later Write or Close returns it, and
// nothing more is written to the destination after it.
func TestWriterDestinationError(t *testing.T) {
	k := newKey(t)
	broken := errors.New("connection reset")
	dst := &failAfter{n: 2, err: broken} // the header, one batch
	w, err := seal.NewWriterOptions(dst, []string{k.Recipient().String()}, seal.WriterOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	plain := randomBytes(batch, 4)
	var werr error
	for range 40 {
		if _, werr = w.Write(plain); werr != nil {
			break
		}
	}
	cerr := w.Close()
	if !errors.Is(cerr, broken) {
		t.Errorf("Close after the destination failed: %v, want %v", cerr, broken)
	}
	if werr != nil && !errors.Is(werr, broken) {
		t.Errorf("Write after the destination failed: %v", werr)
	}
	if dst.writes != 3 {
		t.Errorf("%d writes to the destination, want 3 (header, one batch, the failing one)", dst.writes)
	}
	if _, err := w.Write(plain); !errors.Is(err, seal.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

// Abort writes nothing more: what reached the destination is an age file
// cut short, which does not decrypt to the end.
func TestWriterAbort(t *testing.T) {
	k := newKey(t)
	dst := &failAfter{n: 1 << 30}
	w, err := seal.NewWriter(dst, []string{k.Recipient().String()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randomBytes(3*batch, 6)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	dst.mu.Lock()
	writes, ct := dst.writes, bytes.Clone(dst.buf.Bytes())
	dst.mu.Unlock()
	if writes > 3 { // the header and at most the two whole batches before the last
		t.Errorf("%d writes after Abort", writes)
	}
	if err := w.Close(); !errors.Is(err, seal.ErrClosed) {
		t.Errorf("Close after Abort: %v", err)
	}
	r, err := seal.Decrypt(bytes.NewReader(ct), []age.Identity{k})
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if !errors.Is(err, seal.ErrTampered) {
		t.Errorf("an aborted file decrypts: %v", err)
	}
}

// writeLog keeps the length of every Write.
type writeLog struct {
	mu   sync.Mutex
	lens []int
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lens = append(l.lens, len(p))
	l.mu.Unlock()
	return len(p), nil
}

// PlainLen of every Write after the header adds up to the plaintext, and
// each Write's share never exceeds what was written to the Writer by then
// (an agent counts what went out with it).
func TestPlainLenOfWrites(t *testing.T) {
	k := newKey(t)
	for _, size := range []int{0, 1, seal.ChunkSize, batch + 1, 3*batch + 5} {
		var log writeLog
		w, err := seal.NewWriterOptions(&log, []string{k.Recipient().String()}, seal.WriterOptions{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(randomBytes(size, 2)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		plain := 0
		for _, n := range log.lens[1:] {
			plain += seal.PlainLen(n)
		}
		if plain != size {
			t.Errorf("size %d: writes %v hold %d bytes of plaintext by PlainLen", size, log.lens, plain)
		}
	}
	if seal.PlainLen(0) != 0 || seal.PlainLen(-3) != 0 {
		t.Error("PlainLen of nothing is not 0")
	}
}
