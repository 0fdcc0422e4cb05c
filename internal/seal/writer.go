package seal

import (
	"bytes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"filippo.io/age"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// The payload of an age file (age-encryption.org/v1, "Payload"):
//
//	nonce    16 random bytes; payload key = HKDF-SHA-256(file key, salt nonce, info "payload")
//	chunk 0  ChaCha20-Poly1305(payload key, nonce 0x00…00 ‖ last, 64 KiB of plaintext) ‖ 16-byte tag
//	chunk 1  the same with counter 1, …
//	chunk n  the last: flag byte 0x01 in its nonce, 1…64 KiB of plaintext (0 only if the file is empty)
//
// The 12-byte chunk nonce is an 11-byte big-endian counter and the last-chunk
// flag. A chunk's sealing depends on nothing but the key, its counter and
// whether it is the last, so chunks are sealed in parallel here and written
// in order. The header (the file key wrapped for each recipient, and its MAC)
// and the nonce are age's own: Writer takes them from age.Encrypt.

// batchChunks is how many chunks a Writer seals as one piece of work and
// writes to its destination in one Write: 1 MiB of plaintext, the size of
// a stream frame, so that a frame costs one message to the server.
const batchChunks = 16

// tagSize is the Poly1305 tag after each chunk.
const tagSize = chacha20poly1305.Overhead

// stride is a chunk on the media: its plaintext and its tag.
const stride = ChunkSize + tagSize

// PlainLen is the plaintext held in n bytes of payload made of whole
// sealed chunks (the last one may be short), as each Write of a Writer
// after its header is: n less one tag per chunk begun.
func PlainLen(n int) int {
	if n <= 0 {
		return 0
	}
	return n - tagSize*((n+stride-1)/stride)
}

// WriterOptions tune a Writer. The zero value is valid.
type WriterOptions struct {
	// Workers seal batches of chunks in parallel; default GOMAXPROCS.
	// At most 2×Workers batches (1 MiB each) are in flight.
	Workers int
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// String describes the options (benchmarks record it).
func (o WriterOptions) String() string {
	return fmt.Sprintf("workers=%d batch=%d KiB", o.withDefaults().Workers, batchChunks*ChunkSize>>10)
}

// ErrClosed is returned by a Writer's calls after Close or Abort.
var ErrClosed = errors.New("seal: writer closed")

// Writer encrypts what is written to it as one age file. The header and
// nonce go to the destination before NewWriter returns; the payload goes in
// batches of 16 chunks, sealed by Workers goroutines and written in order by
// one more, so the caller's Write returns once its bytes are copied and the
// sealing and the destination's writes overlap with the caller's work.
// Write therefore does not report the destination's error of the bytes it
// takes: that error sticks and comes back from a later Write or from Close.
// Close seals the last chunk and returns when everything is written; Abort
// stops without writing what is queued. Either must be called: the
// goroutines end there. A Writer is not safe for concurrent use.
type Writer struct {
	dst  io.Writer
	aead cipher.AEAD

	cur     *batch // being filled
	counter uint64 // chunk counter of cur's first chunk

	work   chan *batch // to the sealers
	order  chan *batch // to the sender, in stream order
	sealer sync.WaitGroup
	sent   chan struct{} // closed when the sender is done
	stop   chan struct{} // closed by Abort: the sender writes no more
	pool   sync.Pool     // batch buffers

	mu     sync.Mutex
	err    error // sticky: the destination's, or ErrClosed
	closed bool
}

// batch is up to batchChunks chunks, laid out as on the media (stride
// apart), so each chunk is sealed in place and the batch is written as it
// lies.
type batch struct {
	buf   []byte // batchChunks × stride
	n     int    // plaintext bytes in it
	first uint64 // counter of its first chunk
	last  bool   // it holds the file's last chunk
	out   []byte // the sealed batch, once done is closed
	done  chan struct{}
}

// NewWriter encrypts what is written to it to dst, as one age file for
// every recipient (each an "age1…" key; duplicates are dropped), with the
// default options.
func NewWriter(dst io.Writer, recipients []string) (*Writer, error) {
	return NewWriterOptions(dst, recipients, WriterOptions{})
}

// NewWriterOptions is NewWriter with options.
func NewWriterOptions(dst io.Writer, recipients []string, o WriterOptions) (*Writer, error) {
	o = o.withDefaults()
	rs, err := parseRecipients(recipients)
	if err != nil {
		return nil, err
	}
	// age makes the file key, wraps it for the recipients, writes the
	// header and the payload nonce; the tap on the first recipient sees
	// the file key as age hands it over to be wrapped. age's own payload
	// writer is not used (nothing of it is written before its first Write).
	var fileKey []byte
	rs[0] = keyTap{Recipient: rs[0], key: &fileKey}
	var head bytes.Buffer
	if _, err := age.Encrypt(&head, rs...); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	if len(fileKey) == 0 || head.Len() < len(Magic)+16 || !IsSealed(head.Bytes()) {
		return nil, errors.New("seal: age did not write a header and nonce as expected")
	}
	nonce := head.Bytes()[head.Len()-16:]
	key := make([]byte, chacha20poly1305.KeySize)
	if _, err := io.ReadFull(hkdf.New(sha256.New, fileKey, nonce, []byte("payload")), key); err != nil {
		return nil, fmt.Errorf("seal: payload key: %w", err)
	}
	clear(fileKey)
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	if _, err := dst.Write(head.Bytes()); err != nil {
		return nil, err
	}
	w := &Writer{
		dst:   dst,
		aead:  aead,
		work:  make(chan *batch, 2*o.Workers),
		order: make(chan *batch, 2*o.Workers),
		sent:  make(chan struct{}),
		stop:  make(chan struct{}),
	}
	w.pool.New = func() any { return make([]byte, batchChunks*stride) }
	for range o.Workers {
		w.sealer.Go(w.sealLoop)
	}
	go w.sendLoop()
	w.cur = w.newBatch()
	return w, nil
}

// parseRecipients parses and deduplicates recipients.
func parseRecipients(recipients []string) ([]age.Recipient, error) {
	if len(recipients) == 0 {
		return nil, fmt.Errorf("seal: no recipient: %w", ErrBadRecipient)
	}
	seen := map[string]bool{}
	var rs []age.Recipient
	for _, s := range recipients {
		r, err := ParseRecipient(s)
		if err != nil {
			return nil, err
		}
		if !seen[r.String()] {
			seen[r.String()] = true
			rs = append(rs, r)
		}
	}
	return rs, nil
}

// keyTap is a recipient that keeps a copy of the file key it wraps.
type keyTap struct {
	age.Recipient
	key *[]byte
}

func (t keyTap) Wrap(fileKey []byte) ([]*age.Stanza, error) {
	*t.key = bytes.Clone(fileKey)
	return t.Recipient.Wrap(fileKey)
}

func (w *Writer) newBatch() *batch {
	return &batch{buf: w.pool.Get().([]byte), first: w.counter, done: make(chan struct{})}
}

func (w *Writer) sticky() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// Write copies p into the chunks being filled; a full batch goes to be
// sealed once more bytes follow it (the last chunk is flagged, so a full
// batch is only known not to hold it when the next byte comes).
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, ErrClosed
	}
	if err := w.sticky(); err != nil {
		return 0, err
	}
	total := len(p)
	for len(p) > 0 {
		if w.cur.n == batchChunks*ChunkSize {
			w.submit(false)
		}
		c, in := w.cur.n/ChunkSize, w.cur.n%ChunkSize
		k := copy(w.cur.buf[c*stride+in:c*stride+ChunkSize], p)
		w.cur.n += k
		p = p[k:]
	}
	return total, nil
}

// submit queues the current batch and starts the next. It blocks while
// 2×Workers batches are queued.
func (w *Writer) submit(last bool) {
	b := w.cur
	b.last = last
	w.counter += uint64(max(1, (b.n+ChunkSize-1)/ChunkSize))
	w.order <- b
	w.work <- b
	if !last {
		w.cur = w.newBatch()
	}
}

func (w *Writer) sealLoop() {
	for b := range w.work {
		w.seal(b)
		close(b.done)
	}
}

// seal seals b's chunks in place; b.out is the sealed batch.
func (w *Writer) seal(b *batch) {
	chunks := max(1, (b.n+ChunkSize-1)/ChunkSize)
	var nonce [chacha20poly1305.NonceSize]byte
	end := 0
	for i := range chunks {
		size := min(ChunkSize, b.n-i*ChunkSize)
		// The counter fills the first 11 bytes big-endian; it never
		// reaches 2^64 chunks, so the first 3 stay zero.
		binary.BigEndian.PutUint64(nonce[3:11], b.first+uint64(i))
		nonce[11] = 0
		if b.last && i == chunks-1 {
			nonce[11] = 1
		}
		at := i * stride
		w.aead.Seal(b.buf[at:at], nonce[:], b.buf[at:at+size], nil)
		end = at + size + tagSize
	}
	b.out = b.buf[:end]
}

// sendLoop writes the sealed batches in order; after an error of the
// destination or an Abort it writes nothing more and only frees them.
func (w *Writer) sendLoop() {
	defer close(w.sent)
	for b := range w.order {
		<-b.done
		select {
		case <-w.stop:
		default:
			if w.sticky() == nil {
				if _, err := w.dst.Write(b.out); err != nil {
					w.fail(err)
				}
			}
		}
		w.pool.Put(b.buf)
	}
}

// finish ends the goroutines and waits for them.
func (w *Writer) finish() {
	close(w.work)
	close(w.order)
	w.sealer.Wait()
	<-w.sent
}

// Close seals the last chunk, waits until everything is written to the
// destination and returns the first error of the destination. It does not
// close the destination.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if w.sticky() == nil {
		w.submit(true)
	}
	w.finish()
	err := w.sticky()
	w.fail(ErrClosed)
	return err
}

// Abort stops the Writer without sealing the last chunk: what is queued is
// not written, so the destination holds an age file cut short (which fails
// to decrypt). It returns once the goroutines are done; the destination is
// not written to after it. Abort after Close does nothing.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	close(w.stop)
	w.finish()
	w.fail(ErrClosed)
}
