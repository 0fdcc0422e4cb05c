package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/stream"
)

// Encryption at rest (docs/design.md "Encryption"): a client that encrypts
// has its agent seal the compressed stream, its label first, as ONE age
// file, and the index as another, to the agent's current key and the
// server's recovery recipients. The server stores the pieces as they come:
// it never sees a key or a byte of plaintext. The index's frame table
// holds offsets into the decrypted stream (all in part 0), which is exactly
// the stream of a clear single-part saveset; a restore decrypts only the
// 64 KiB chunks that hold the frames it reads.

// RingPath is the agent's key ring inside a Kura home.
func RingPath(home string) string { return filepath.Join(Dir(home), seal.RingFile) }

// ringMu makes the first key once when jobs start together (the streams
// of a split backup): two would each make a key and keep one.
var ringMu sync.Mutex

// ring is this agent's key ring, made with a first key when there is none
// (an agent enrolled before encryption existed).
func (a *Agent) ring() (*seal.Ring, error) {
	ringMu.Lock()
	defer ringMu.Unlock()
	r, created, err := seal.EnsureRing(RingPath(a.opts.Home))
	if err != nil {
		return nil, err
	}
	if created {
		a.log.Warn("made this agent's encryption key: keep a copy of its key ring; a lost key means lost backups",
			"ring", RingPath(a.opts.Home), "public_key", r.Recipient())
	}
	return r, nil
}

// identities are the keys that open savesets here; ErrNoKey without a ring.
func (a *Agent) identities() ([]age.Identity, error) {
	r, err := seal.LoadRing(RingPath(a.opts.Home))
	if err != nil {
		return nil, err
	}
	return r.Identities(), nil
}

// sealSink encrypts the frames of a stream into one age file and sends
// the ciphertext on as it is made. seal.Writer seals it in 1 MiB batches
// of whole 64 KiB chunks on goroutines of its own and sends each batch as
// one frame message, in order, so the stream writer's sink goroutine only
// copies a frame and goes on (the header goes first, as a message of its
// own). The locations it returns are offsets into the plaintext (label
// included), all in part 0.
type sealSink struct {
	w    *seal.Writer
	off  int64 // plaintext written so far
	sent *sentFigures
}

func newSealSink(next *netSink, recipients []string, label []byte) (*sealSink, error) {
	if _, err := stream.ReadLabelFrame(bytes.NewReader(label)); err != nil {
		return nil, fmt.Errorf("the saveset label the server sent: %w", err)
	}
	w, err := seal.NewWriter(frameMessages{next}, recipients)
	if err != nil {
		return nil, err
	}
	s := &sealSink{w: w, sent: next.sent}
	if _, err := s.w.Write(label); err != nil {
		w.Abort()
		return nil, err
	}
	s.off = int64(len(label))
	return s, nil
}

// frameMessages sends each Write as one frame message: the age header
// first, then batches of sealed chunks (netSink counts the plaintext that
// went out from them).
type frameMessages struct{ n *netSink }

func (f frameMessages) Write(p []byte) (int, error) {
	if _, err := f.n.WriteFrame(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *sealSink) WriteFrame(frame []byte) (stream.Location, error) {
	at := s.off
	// Marked before the seal writer can send it: its end is known now.
	s.sent.enter(at + int64(len(frame)))
	if _, err := s.w.Write(frame); err != nil {
		return stream.Location{}, err
	}
	s.off += int64(len(frame))
	return stream.Location{Part: 0, Offset: at}, nil
}

// Close seals the last chunk and returns once everything is sent.
func (s *sealSink) Close() error { return s.w.Close() }

// Abort stops sending: nothing more goes to the server after it returns.
func (s *sealSink) Abort() { s.w.Abort() }

// sealFile encrypts the file src into a new temporary file, to recipients.
func (a *Agent) sealFile(src *os.File, recipients []string, pattern string) (*os.File, error) {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	dst, err := os.CreateTemp(a.tmp, pattern)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		dst.Close()
		os.Remove(dst.Name())
		return nil, err
	}
	bw := bufio.NewWriterSize(dst, 256<<10)
	w, err := seal.NewWriter(bw, recipients)
	if err != nil {
		return fail(err)
	}
	if _, err := io.Copy(w, src); err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if _, err := dst.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return dst, nil
}

// recipients are the keys a saveset of this order is encrypted to: the
// agent's current key and the server's recovery recipients.
func (a *Agent) recipients(b *api.BackupOrder) ([]string, error) {
	r, err := a.ring()
	if err != nil {
		return nil, err
	}
	return append([]string{r.Recipient()}, b.Recipients...), nil
}

// sealedData reads an encrypted saveset's data: the age file over its
// parts, opened once (header and last chunk read, the key found), then
// read where the frames are. The locations asked for are offsets into the
// plaintext (the index's frame table of an encrypted saveset).
type sealedData struct {
	s   *remoteStore
	id  int64
	rec sealedRecord

	once  sync.Once
	parts *seal.Parts
	plain io.ReaderAt
	size  int64
	err   error
}

func (d *sealedData) open() error {
	d.once.Do(func() {
		ids, err := d.s.a.identities()
		if err != nil {
			d.err = fmt.Errorf("saveset %d is encrypted: %w", d.id, err)
			return
		}
		raw := &remoteData{s: d.s, id: d.id}
		d.parts = seal.NewParts(d.rec.sizes, func(part int, off int64) (io.ReadCloser, error) {
			return raw.OpenAt(stream.Location{Part: part, Offset: off})
		})
		d.plain, d.size, err = seal.Open(d.parts, d.parts.Size(), ids)
		if err != nil {
			d.err = fmt.Errorf("saveset %d: %w", d.id, err)
			return
		}
		d.err = d.checkLabel()
	})
	return d.err
}

// checkLabel reads the saveset label at the start of the decrypted stream
// and checks it names this saveset of this client: the server cannot see
// inside, so it could hand over an older saveset of the same client (same
// key, authentic) under this one's record; the label inside is the
// client's own word. Errors wrap seal.ErrOtherSaveset.
func (d *sealedData) checkLabel() error {
	defer d.parts.Close()
	l, err := stream.ReadLabelFrame(io.NewSectionReader(d.plain, 0, d.size))
	if err != nil {
		return fmt.Errorf("saveset %d: its encrypted data does not start with a saveset label: %w", d.id, err)
	}
	if l.SavesetID != uint64(d.id) || l.Client != d.rec.client {
		return fmt.Errorf("saveset %d of client %s: %w: its label names saveset %d of client %s, made %s; not restored",
			d.id, d.rec.client, seal.ErrOtherSaveset, l.SavesetID, l.Client, l.Created.Local().Format("2006-01-02 15:04:05"))
	}
	return nil
}

func (d *sealedData) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	if loc.Part != 0 || loc.Offset < 0 || loc.Offset > d.size {
		return nil, fmt.Errorf("saveset %d: location %d/%d is outside its %d bytes of decrypted data", d.id, loc.Part, loc.Offset, d.size)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(d.plain, loc.Offset, d.size-loc.Offset), seal.ChunkSize)
	return &sealedReader{Reader: r, parts: d.parts}, nil
}

// sealedReader is a stream of decrypted data; Close lets go of the
// server's stream under it (the next OpenAt opens one where it reads).
type sealedReader struct {
	*bufio.Reader
	parts *seal.Parts
}

func (r *sealedReader) Close() error { return r.parts.Close() }

// browseIdle bounds the waits of a browse (kura agent ls, find) on the server.
const browseIdle = time.Minute

// Savesets lists this client's complete savesets (kura agent ls, find).
func (a *Agent) Savesets(ctx context.Context) ([]api.Saveset, error) {
	rc, err := a.call(ctx, "GET", "/agent/savesets", "", nil, browseIdle, false)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out []api.Saveset
	if err := json.NewDecoder(rc).Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// OpenIndex opens the index of one of this client's savesets, decrypted
// with this agent's keys when it is encrypted: what the server cannot list,
// the agent holding the key can. The reader's file is removed on Close.
func (a *Agent) OpenIndex(ctx context.Context, id int64) (*index.Reader, error) {
	return a.downloadIndex(ctx, fmt.Sprintf("/agent/savesets/%d/index", id), id, browseIdle)
}
