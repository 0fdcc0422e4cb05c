package agent

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/stream"
)

// Encrypted backups that start together on an agent without a key (the
// streams of a split backup) encrypt to one key, the one the ring keeps.
func TestFirstKeyMadeOnce(t *testing.T) {
	a := &Agent{opts: Options{Home: t.TempDir()}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			if r, err := a.ring(); err == nil {
				keys[i] = r.Recipient()
			}
		})
	}
	wg.Wait()
	r, err := seal.LoadRing(RingPath(a.opts.Home))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if k != r.Recipient() {
			t.Errorf("job %d encrypted to %q; the ring keeps %q", i, k, r.Recipient())
		}
	}
}

// An encrypted stream leaves as frame messages that, put together, are one
// age file holding the label and the frames, at the plaintext offsets the
// sink gave back; a failing connection stops it with the connection's
// error, and nothing is sent after Abort.
func TestSealSinkSendsOneAgeFile(t *testing.T) {
	k, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	label := stream.LabelFrame(stream.Label{SavesetID: 7, Client: "c1"})
	var wire bytes.Buffer
	sink := &netSink{w: &wire, sent: &sentFigures{}}
	s, err := newSealSink(sink, []string{k.Recipient().String()}, label)
	if err != nil {
		t.Fatal(err)
	}
	plain := bytes.Clone(label)
	for i, size := range []int{1 << 20, 3 << 20, 5, 1<<20 + 1} {
		frame := bytes.Repeat([]byte{byte('a' + i)}, size)
		loc, err := s.WriteFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		if loc.Part != 0 || loc.Offset != int64(len(plain)) {
			t.Errorf("frame %d at %+v, want offset %d of the plaintext", i, loc, len(plain))
		}
		plain = append(plain, frame...)
		clear(frame) // the frame is the caller's again
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var file []byte
	for buf := []byte(nil); ; {
		typ, p, err := api.ReadMsg(&wire, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if typ == api.MsgFrame {
			file = append(file, p...)
		}
	}
	r, err := seal.Decrypt(bytes.NewReader(file), []age.Identity{k})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("the frames sent decrypt to %d bytes (%v), want the %d of label and frames", len(got), err, len(plain))
	}

	// The connection breaks after the header: the error comes back, and
	// after Abort nothing more is written.
	broken := errors.New("connection reset")
	cw := &cutWriter{left: 4, err: broken} // the header's frame and progress messages
	sink = &netSink{w: cw, sent: &sentFigures{}}
	if s, err = newSealSink(sink, []string{k.Recipient().String()}, label); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 1<<20)
	for range 64 {
		if _, err = s.WriteFrame(big); err != nil {
			break
		}
	}
	if err == nil {
		err = s.Close()
	}
	if !errors.Is(err, broken) {
		t.Errorf("a broken connection: %v, want %v", err, broken)
	}
	s.Abort()
	if n := cw.writes.Load(); n != 5 {
		t.Errorf("%d writes to the connection, want 5 (the header's messages, the failing one)", n)
	}
}

// cutWriter takes left writes, then fails every one.
type cutWriter struct {
	left   int64
	writes atomic.Int64
	err    error
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.writes.Add(1) > c.left {
		return 0, c.err
	}
	return len(p), nil
}
