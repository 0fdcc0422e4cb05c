package server

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// deadlineWriter records the deadlines a handler's response controller
// sets, as an HTTP/2 response writer would take them.
type deadlineWriter struct {
	http.ResponseWriter
	done  bool // the handler has returned: the writer is no longer its
	after int  // deadlines set after that
}

func (w *deadlineWriter) SetReadDeadline(time.Time) error  { return w.note() }
func (w *deadlineWriter) SetWriteDeadline(time.Time) error { return w.note() }
func (w *deadlineWriter) note() error {
	if w.done {
		w.after++
	}
	return nil
}

// A job that ends just as its handler returns cuts the stream from a
// context.AfterFunc that stop can no longer recall. That cut must not touch
// the response writer once the handler is done with it (in net/http's
// HTTP/2 server that was a data race and a nil-pointer panic).
func TestIdleCutAfterFinishLeavesTheWriterAlone(t *testing.T) {
	w := &deadlineWriter{}
	rc := http.NewResponseController(w)
	r := &idleReader{r: strings.NewReader("x"), rc: rc, idle: time.Second}
	iw := &idleWriter{w: w, rc: rc, idle: time.Second}
	r.finish()
	iw.finish()
	w.done = true
	r.cut()
	iw.cut()
	if w.after != 0 {
		t.Fatalf("%d deadlines set on the response writer after the handler finished", w.after)
	}
	// Before finish, a cut ends the stream at once.
	w2 := &deadlineWriter{}
	r2 := &idleReader{r: strings.NewReader("x"), rc: http.NewResponseController(w2), idle: time.Second}
	r2.cut()
	if n, err := r2.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("read after cut: %d, %v; want the deadline error", n, err)
	}
}
