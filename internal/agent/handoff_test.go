package agent

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// recordingWriter keeps each Write as it came.
type recordingWriter struct {
	writes [][]byte
	fail   error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	if r.fail != nil {
		return 0, r.fail
	}
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

// Each Write reaches the connection whole and in order (not cut into
// 32 KiB pieces as io.Copy from an io.Pipe does), the writer's buffer is
// free again when Write returns, and Close ends the stream cleanly.
func TestHandoffWritesWhole(t *testing.T) {
	h := newHandoff()
	dst := &recordingWriter{}
	done := make(chan error, 1)
	var total int64
	go func() {
		n, err := io.Copy(dst, h) // io.Copy uses WriteTo, as the HTTP transport does
		total = n
		done <- err
	}()
	buf := make([]byte, 3<<20)
	sizes := []int{5, 3 << 20, 1, 1 << 20}
	for i, n := range sizes {
		for j := range buf[:n] {
			buf[j] = byte(i)
		}
		if k, err := h.Write(buf[:n]); err != nil || k != n {
			t.Fatalf("Write %d = %d, %v", i, k, err)
		}
		for j := range buf[:n] { // reuse the buffer at once, as the producer does
			buf[j] = 0xff
		}
	}
	h.Close()
	if err := <-done; err != nil {
		t.Fatalf("the stream ended with %v; want a clean end", err)
	}
	if len(dst.writes) != len(sizes) {
		t.Fatalf("the connection got %d writes; want %d, one per Write", len(dst.writes), len(sizes))
	}
	for i, w := range dst.writes {
		if len(w) != sizes[i] || !bytes.Equal(w, bytes.Repeat([]byte{byte(i)}, sizes[i])) {
			t.Fatalf("write %d: %d bytes, not the %d bytes written", i, len(w), sizes[i])
		}
	}
	if total != int64(3<<20+1<<20+6) {
		t.Fatalf("WriteTo counted %d bytes", total)
	}
}

// The ends see each other's errors: a writer's abort reaches the reader, a
// connection that fails fails the Write that was on it and every later
// one, and a reader that stops (the server refused) fails the writer.
func TestHandoffErrors(t *testing.T) {
	abort := errors.New("abort")
	t.Run("writer aborts", func(t *testing.T) {
		h := newHandoff()
		done := make(chan error, 1)
		go func() { _, err := h.WriteTo(io.Discard); done <- err }()
		if _, err := h.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		h.CloseWithError(abort)
		if err := <-done; !errors.Is(err, abort) {
			t.Fatalf("reader saw %v; want the writer's error", err)
		}
	})
	t.Run("connection fails", func(t *testing.T) {
		h := newHandoff()
		cut := errors.New("connection cut")
		done := make(chan error, 1)
		go func() { _, err := h.WriteTo(&recordingWriter{fail: cut}); done <- err }()
		if _, err := h.Write([]byte("x")); !errors.Is(err, cut) {
			t.Fatalf("Write on a failing connection = %v; want its error", err)
		}
		if err := <-done; !errors.Is(err, cut) {
			t.Fatalf("WriteTo = %v; want the connection's error", err)
		}
		if _, err := h.Write([]byte("y")); !errors.Is(err, cut) {
			t.Fatalf("a later Write = %v; want the connection's error", err)
		}
	})
	t.Run("reader stops", func(t *testing.T) {
		h := newHandoff()
		refused := errors.New("refused")
		h.CloseRead(refused)
		if _, err := h.Write([]byte("x")); !errors.Is(err, refused) {
			t.Fatalf("Write after the reader stopped = %v; want its reason", err)
		}
	})
}

// A transport that reads instead (io.Reader only) gets every byte too.
func TestHandoffRead(t *testing.T) {
	h := newHandoff()
	want := bytes.Repeat([]byte("kura"), 50000)
	go func() {
		h.Write(want[:7])
		h.Write(want[7:])
		h.Close()
	}()
	got, err := io.ReadAll(struct{ io.Reader }{h})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v; want the %d written", len(got), err, len(want))
	}
}
