package server

import (
	"fmt"
	"sync"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/units"
)

// frameQueue is how many frames an agent's stream may have read ahead of
// the tape (each a buffer of one frame: 1 MiB by default).
const frameQueue = 2

// frameWriter checks an agent's frames and writes them to tape, in order,
// on a goroutine of its own: reading and decrypting the stream (the
// receive loop) and checking and writing frames (here) overlap, where one
// goroutine doing both made the server the slow end of a backup. The
// first failure is kept; later frames are dropped, never written.
type frameWriter struct {
	agent string
	chk   *stream.FrameChecker
	prod  *production

	queue chan queuedFrame
	free  chan []byte // buffers back from written frames, for the next reads
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	err    error
	frames []index.Frame // where each frame landed; the writer goroutine's until done
}

type queuedFrame struct {
	frame []byte
	at    int64 // stream bytes received with it (for the error message)
}

func newFrameWriter(agent string, chk *stream.FrameChecker, prod *production) *frameWriter {
	fw := &frameWriter{agent: agent, chk: chk, prod: prod,
		queue: make(chan queuedFrame, frameQueue), free: make(chan []byte, frameQueue+2), done: make(chan struct{})}
	go fw.run()
	return fw
}

func (fw *frameWriter) run() {
	defer close(fw.done)
	for q := range fw.queue {
		if fw.failed() == nil {
			if err := fw.put(q); err != nil {
				fw.mu.Lock()
				fw.err = err
				fw.mu.Unlock()
			}
		}
		fw.reuse(q.frame)
	}
}

// put checks one frame (not the pieces of an encrypted stream: chk nil)
// and writes it to tape.
func (fw *frameWriter) put(q queuedFrame) error {
	if err := fw.check(q.frame); err != nil {
		return fmt.Errorf("agent %s: frame %d (%s, %s into the stream) is damaged, nothing of it went to tape: %w",
			fw.agent, len(fw.frames), units.FormatSize(int64(len(q.frame))), units.FormatSize(q.at), err)
	}
	loc, err := fw.prod.sink.WriteFrame(q.frame)
	if err != nil {
		return fmt.Errorf("writing to tape: %w", err)
	}
	fw.prod.hooks.Phase.Media.Add(int64(len(q.frame)))
	// Where the frame landed; the agent adds the uncompressed offsets and
	// sizes it knows.
	fw.frames = append(fw.frames, index.Frame{CSize: uint32(len(q.frame)), Part: int32(loc.Part), PartOffset: loc.Offset})
	return nil
}

func (fw *frameWriter) check(frame []byte) error {
	if fw.chk == nil {
		return nil
	}
	return fw.chk.Check(frame)
}

// buffer returns a free buffer for the next message (nil: ReadMsg makes one).
func (fw *frameWriter) buffer() []byte {
	select {
	case b := <-fw.free:
		return b
	default:
		return nil
	}
}

// reuse gives a message's buffer back once nothing refers to it.
func (fw *frameWriter) reuse(b []byte) {
	select {
	case fw.free <- b[:0]:
	default: // more buffers than needed: let it go
	}
}

// write queues a frame; it waits while frameQueue frames are queued.
func (fw *frameWriter) write(frame []byte, at int64) {
	fw.queue <- queuedFrame{frame: frame, at: at}
}

// failed returns the first failure so far.
func (fw *frameWriter) failed() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.err
}

// finish waits for the queued frames and returns where they landed and
// the first failure.
func (fw *frameWriter) finish() ([]index.Frame, error) {
	fw.once.Do(func() { close(fw.queue) })
	<-fw.done
	return fw.frames, fw.failed()
}
