// Package seal is Kura's encryption at rest: the age format
// (age-encryption.org/v1, filippo.io/age) with X25519 recipients, and an
// agent's key ring. It invents no format: a sealed tape file is an age file
// that the stock `age -d -i KEYFILE` decrypts, and a key ring is an age
// identity file.
//
// An age file is a header (the file key wrapped for each recipient, and a
// MAC over the header) followed by a 16-byte nonce and the payload in
// independent 64 KiB chunks, each sealed with ChaCha20-Poly1305 under the
// payload key and a nonce that counts the chunk (the last one flagged).
// So any chunk can be decrypted and authenticated where it sits: Open gives
// random access through age's own DecryptReaderAt, which reads only the
// chunks asked for (and the last chunk once, to authenticate the size).
//
// Every failure to open is one of three kinds a caller can tell apart:
// ErrNoKey (no key ring), ErrWrongKey (none of the ring's keys is a
// recipient of the file), ErrTampered (the header, a chunk or the length
// does not authenticate: damaged or altered media). Errors of the source
// itself (a tape read failing) are passed on as they are.
package seal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
)

// Scheme is the name of the encryption recorded with a saveset.
const Scheme = "age"

// ChunkSize is the plaintext of one age payload chunk: the unit a random
// read decrypts and authenticates.
const ChunkSize = 64 << 10

// Magic is how every age file starts.
const Magic = "age-encryption.org/v1\n"

var (
	// ErrNoKey: there is no key ring to decrypt with.
	ErrNoKey = errors.New("no decryption key")
	// ErrWrongKey: none of the keys given is a recipient of the data.
	ErrWrongKey = errors.New("none of the keys here opens it (wrong key)")
	// ErrTampered: the data does not authenticate under its key: the header,
	// a chunk or the length was damaged or altered. Nothing of it is trusted.
	ErrTampered = errors.New("encrypted data does not authenticate (damaged or tampered with)")
	// ErrOtherSaveset: the data decrypts and authenticates, but the saveset
	// label inside it names another saveset (or client) than the record it
	// was read for: an older saveset of the same client put in its place.
	ErrOtherSaveset = errors.New("the encrypted data is another saveset (swapped or replayed)")
	// ErrBadRecipient: a recipient is not an age X25519 public key.
	ErrBadRecipient = errors.New("not an age X25519 public key (age1…)")
)

// IsSealed reports whether data starting with head is an age file.
func IsSealed(head []byte) bool {
	return bytes.HasPrefix(head, []byte(Magic))
}

// ParseRecipient checks and parses one X25519 public key ("age1…").
func ParseRecipient(s string) (*age.X25519Recipient, error) {
	r, err := age.ParseX25519Recipient(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q: %w (%v)", s, ErrBadRecipient, err)
	}
	return r, nil
}

// classify turns an age error into ErrWrongKey or ErrTampered, keeping
// age's words (which name the chunk). An error of the source is srcErr's.
func classify(err error, srcErr error) error {
	if err == nil {
		return nil
	}
	if srcErr != nil && errors.Is(err, srcErr) {
		return err
	}
	var nm *age.NoIdentityMatchError
	if errors.As(err, &nm) {
		return fmt.Errorf("%w: %v", ErrWrongKey, err)
	}
	return fmt.Errorf("%w: %v", ErrTampered, err)
}

// srcWatch remembers the first error of the source, so that it is told
// apart from age's own.
type srcWatch struct {
	r   io.Reader
	err error
}

func (s *srcWatch) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Decrypt reads the age file from src with the first of ids that is a
// recipient. Every byte it returns has been authenticated; a damaged or
// altered chunk fails the read with ErrTampered, and a file cut short
// too (age flags the last chunk).
func Decrypt(src io.Reader, ids []age.Identity) (io.Reader, error) {
	if len(ids) == 0 {
		return nil, ErrNoKey
	}
	w := &srcWatch{r: src}
	r, err := age.Decrypt(w, ids...)
	if err != nil {
		return nil, classify(err, w.err)
	}
	return &plainReader{r: r, w: w}, nil
}

type plainReader struct {
	r io.Reader
	w *srcWatch
}

func (p *plainReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		err = classify(err, p.w.err)
	}
	return n, err
}

// atWatch is srcWatch for a ReaderAt.
type atWatch struct {
	r   io.ReaderAt
	err error
}

func (s *atWatch) ReadAt(p []byte, off int64) (int, error) {
	n, err := s.r.ReadAt(p, off)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Open gives random access to the plaintext of the age file of size bytes
// in src: the returned ReaderAt decrypts and authenticates only the 64 KiB
// chunks a read touches (age's DecryptReaderAt). It reads the header and
// the last chunk first, so a wrong key or a cut file fails here.
func Open(src io.ReaderAt, size int64, ids []age.Identity) (io.ReaderAt, int64, error) {
	if len(ids) == 0 {
		return nil, 0, ErrNoKey
	}
	w := &atWatch{r: src}
	r, n, err := age.DecryptReaderAt(w, size, ids...)
	if err != nil {
		return nil, 0, classify(err, w.err)
	}
	return &plainAt{r: r, w: w}, n, nil
}

type plainAt struct {
	r io.ReaderAt
	w *atWatch
}

func (p *plainAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.r.ReadAt(b, off)
	if err != nil && err != io.EOF {
		err = classify(err, p.w.err)
	}
	return n, err
}
