package server

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/stream"
)

// tapeSink keeps the frames written to it.
type tapeSink struct {
	frames [][]byte
	off    int64
	fail   error
}

func (t *tapeSink) WriteFrame(f []byte) (stream.Location, error) {
	if t.fail != nil {
		return stream.Location{}, t.fail
	}
	t.frames = append(t.frames, bytes.Clone(f))
	loc := stream.Location{Offset: t.off}
	t.off += int64(len(f))
	return loc, nil
}

func newTestFrameWriter(t *testing.T, sink *tapeSink) *frameWriter {
	t.Helper()
	chk, err := stream.NewFrameChecker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chk.Close)
	prod := &production{sink: sink, hooks: engine.ProduceHooks{Phase: monitor.StartPhase(monitor.SystemClock{}, "backup")}}
	return newFrameWriter("c1", chk, prod)
}

// Frames reach the tape checked and in order, while the receive loop
// reuses its buffers: a frame read into a buffer after it was queued does
// not change what is written.
func TestFrameWriterWritesInOrder(t *testing.T) {
	sink := &tapeSink{}
	fw := newTestFrameWriter(t, sink)
	var want [][]byte
	for i := range 20 {
		content := bytes.Repeat([]byte{byte(i)}, 1000+i)
		buf := compress.AppendRawFrame(fw.buffer(), content)
		want = append(want, bytes.Clone(buf))
		fw.write(buf, int64(i))
	}
	frames, err := fw.finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != len(want) || len(frames) != len(want) {
		t.Fatalf("%d frames on tape, %d in the table; want %d", len(sink.frames), len(frames), len(want))
	}
	for i := range want {
		if !bytes.Equal(sink.frames[i], want[i]) {
			t.Fatalf("frame %d on tape differs from frame %d sent", i, i)
		}
		if frames[i].CSize != uint32(len(want[i])) {
			t.Fatalf("frame %d: table says %d bytes, sent %d", i, frames[i].CSize, len(want[i]))
		}
	}
}

// A damaged frame fails the stream naming it; nothing of it, nor of any
// frame after it, reaches the tape; the frames before it do.
func TestFrameWriterStopsAtDamage(t *testing.T) {
	sink := &tapeSink{}
	fw := newTestFrameWriter(t, sink)
	for i := range 6 {
		f := compress.AppendRawFrame(nil, bytes.Repeat([]byte("kura"), 500+i))
		if i == 3 {
			f[len(f)/2] ^= 0x40
		}
		fw.write(f, 0)
	}
	_, err := fw.finish()
	if err == nil || !strings.Contains(err.Error(), "frame 3") || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("finish = %v; want frame 3 named as damaged", err)
	}
	if len(sink.frames) != 3 {
		t.Fatalf("%d frames reached the tape; want the 3 before the damaged one", len(sink.frames))
	}
	if fw.failed() == nil {
		t.Fatal("failed() does not report the damage the receive loop must stop on")
	}
}

// A tape that fails stops the writing at that frame, with the tape's error.
func TestFrameWriterTapeError(t *testing.T) {
	full := errors.New("no space left on device")
	sink := &tapeSink{fail: full}
	fw := newTestFrameWriter(t, sink)
	fw.write(compress.AppendRawFrame(nil, []byte("data")), 0)
	if _, err := fw.finish(); !errors.Is(err, full) {
		t.Fatalf("finish = %v; want the tape's error", err)
	}
}
