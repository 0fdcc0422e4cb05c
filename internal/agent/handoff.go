package agent

import (
	"errors"
	"io"
	"sync"
)

// handoff is io.Pipe for a request body that is written to a connection:
// its reader end implements io.WriterTo, so each Write of the producer (a
// whole message: header, then a frame of up to several MiB) is handed to
// the connection as it is, without the copy into a 32 KiB buffer io.Copy
// makes from an io.Pipe, and without cutting it into 32 KiB chunks (each a
// chunk of HTTP/1.1's chunked encoding and a flush of the connection).
// Write returns when the connection has taken the bytes, so the caller may
// reuse them, as with io.Pipe.
type handoff struct {
	wr   chan []byte     // a Write's bytes, to the reader
	ack  chan handResult // what the reader did with them
	once sync.Once
	done chan struct{} // closed by either end's Close(WithError)
	mu   sync.Mutex
	werr error // the writer's close reason (io.EOF for Close)
	rerr error // the reader's close reason (io.ErrClosedPipe for Close)
	left []byte
}

type handResult struct {
	n   int
	err error
}

func newHandoff() *handoff {
	return &handoff{wr: make(chan []byte), ack: make(chan handResult, 1), done: make(chan struct{})}
}

// Write hands p to the reader and waits until it is written: once the
// reader has taken p, Write returns only when the reader is done with it,
// so the caller may reuse p (a stalled connection is ended by the
// request's context, which fails the reader's write).
func (h *handoff) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	select {
	case h.wr <- p:
		r := <-h.ack
		return r.n, r.err
	case <-h.done:
		return 0, h.closedErr(true)
	}
}

// WriteTo writes every Write's bytes to w until the writer closes.
func (h *handoff) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		select {
		case p := <-h.wr:
			n, err := w.Write(p)
			total += int64(n)
			if err == nil && n < len(p) {
				err = io.ErrShortWrite
			}
			if err != nil {
				h.closeWith(false, err)
			}
			h.ack <- handResult{n, err}
			if err != nil {
				return total, err
			}
		case <-h.done:
			err := h.closedErr(false)
			if err == io.EOF {
				err = nil
			}
			return total, err
		}
	}
}

// Read is io.Reader for a transport that does not use WriteTo: it takes
// a copy of the pending Write's bytes (the Write returns at once) and reads
// from it.
func (h *handoff) Read(p []byte) (int, error) {
	if len(h.left) == 0 {
		select {
		case q := <-h.wr:
			h.left = append(h.left[:0], q...)
			h.ack <- handResult{n: len(q)}
		case <-h.done:
			return 0, h.closedErr(false)
		}
	}
	n := copy(p, h.left)
	h.left = h.left[n:]
	return n, nil
}

// Close ends the stream: the reader sees io.EOF after the last Write.
func (h *handoff) Close() error { return h.CloseWithError(nil) }

// CloseWithError ends the stream with err for the reader (io.EOF if nil).
func (h *handoff) CloseWithError(err error) error {
	if err == nil {
		err = io.EOF
	}
	h.closeWith(true, err)
	return nil
}

// CloseRead stops the reader end: pending and later Writes fail with err
// (io.ErrClosedPipe if nil).
func (h *handoff) CloseRead(err error) {
	if err == nil {
		err = io.ErrClosedPipe
	}
	h.closeWith(false, err)
}

func (h *handoff) closeWith(writer bool, err error) {
	h.mu.Lock()
	if writer && h.werr == nil {
		h.werr = err
	}
	if !writer && h.rerr == nil {
		h.rerr = err
	}
	h.mu.Unlock()
	h.once.Do(func() { close(h.done) })
}

// closedErr is what an end sees once the stream is closed: the writer
// sees the reader's reason, the reader the writer's.
func (h *handoff) closedErr(writer bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if writer {
		if h.rerr != nil {
			return h.rerr
		}
		return io.ErrClosedPipe
	}
	if h.werr != nil {
		return h.werr
	}
	if h.rerr != nil {
		return h.rerr
	}
	return errors.New("handoff closed")
}
