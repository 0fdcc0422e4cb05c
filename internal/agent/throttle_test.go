package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/stream"
)

// wireWrite is one write to the connection: when, and how many bytes.
type wireWrite struct {
	at time.Time
	n  int
}

// wireLog records every write to the connection at the fake clock's time.
type wireLog struct {
	clock  *monitor.FakeClock
	writes []wireWrite
}

func (w *wireLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, wireWrite{w.clock.Now(), len(p)})
	return len(p), nil
}

// TestLimitHoldsOnTheWire: whatever the frame size and however the
// producer pauses, the connection is given at most limit × t bytes by any
// moment t since the start (the limiter starts empty), and at most
// limit × t + burst over any span t between two writes; the burst is at
// most 64 KiB, and no write is larger than it. The limit is also used:
// the stream takes no longer than its bytes at the limit plus the time
// slept too long and paused. Time is a fake clock: a sleep advances it,
// in one run exactly, in the other oversleeping at random as a loaded
// machine does (a write that comes late lets the next come that much
// sooner after it, never sooner than the schedule).
func TestLimitHoldsOnTheWire(t *testing.T) {
	for _, maxOver := range []time.Duration{0, 2 * time.Millisecond} {
		for _, bps := range []int64{8 << 10, 256 << 10, 12_500_000} {
			for _, frame := range []int{64 << 10, 1 << 20, 4 << 20} {
				t.Run(fmt.Sprintf("over=%s/bps=%d/frame=%d", maxOver, bps, frame), func(t *testing.T) {
					testLimit(t, maxOver, bps, frame)
				})
			}
		}
	}
}

func testLimit(t *testing.T, maxOver time.Duration, bps int64, frame int) {
	r := rand.New(rand.NewPCG(uint64(bps), uint64(frame)))
	clock := monitor.NewFakeClock(time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC))
	start := clock.Now()
	wire := &wireLog{clock: clock}
	var extra time.Duration // oversleeping and pauses: time not owed to the limit
	lw := &limitedWriter{ctx: context.Background(), w: wire, lim: newLimiter(bps, clock.Now()), clock: clock,
		sleep: func(_ context.Context, d time.Duration) error {
			var over time.Duration
			if maxOver > 0 {
				over = time.Duration(r.Int64N(int64(maxOver)))
			}
			extra += over
			clock.Advance(d + over)
			return nil
		}}
	sink := &netSink{w: lw, sent: &sentFigures{}, clear: true}
	payload := make([]byte, frame)
	total := int64(0)
	for range 6 {
		if _, err := sink.WriteFrame(payload); err != nil {
			t.Fatal(err)
		}
		total += int64(frame)
		if r.IntN(3) == 0 { // the producer pauses: tokens build up to a burst
			pause := time.Duration(r.Int64N(int64(3 * time.Second)))
			extra += pause
			clock.Advance(pause)
		}
	}
	burst := lw.lim.Burst()
	if burst > 64<<10 || burst != burstOf(bps) {
		t.Fatalf("burst %d, want burstOf %d, at most 64 KiB", burst, burstOf(bps))
	}
	// slack for the limiter's rounding of delays to whole nanoseconds
	slack := 1 + float64(bps)*1e-6
	var sent int64
	for i, w := range wire.writes {
		if w.n > burst {
			t.Fatalf("write %d of %d bytes: more than the burst of %d", i, w.n, burst)
		}
		sent += int64(w.n)
		if limit := float64(bps)*w.at.Sub(start).Seconds() + slack; float64(sent) > limit {
			t.Fatalf("by write %d, %d bytes in %s since the start: more than limit × t = %.0f", i, sent, w.at.Sub(start), limit)
		}
	}
	if sent < total {
		t.Fatalf("%d bytes on the wire, want at least the %d of the frames", sent, total)
	}
	// Every span between two writes, both ends included.
	for i := range wire.writes {
		var n int64
		for j := i; j < len(wire.writes); j++ {
			n += int64(wire.writes[j].n)
			span := wire.writes[j].at.Sub(wire.writes[i].at) + maxOver
			if limit := float64(bps)*span.Seconds() + float64(burst) + slack; float64(n) > limit {
				t.Fatalf("writes %d..%d: %d bytes in %s (+%s late): more than %.0f (limit × t + burst)", i, j, n, span-maxOver, maxOver, limit)
			}
		}
	}
	took := wire.writes[len(wire.writes)-1].at.Sub(start)
	owed := time.Duration(float64(sent) / float64(bps) * float64(time.Second))
	if took > owed+extra+time.Millisecond {
		t.Errorf("%d bytes took %s at %d B/s: more than the %s they need plus %s overslept or paused", sent, took, bps, owed, extra)
	}
}

func TestBurstOf(t *testing.T) {
	for _, c := range []struct {
		bps  int64
		want int
	}{{1000, 16 << 10}, {256 << 10, 256 << 10 / 10}, {1 << 20, 64 << 10}, {12_500_000, 64 << 10}} {
		if got := burstOf(c.bps); got != c.want {
			t.Errorf("burstOf(%d) = %d, want %d", c.bps, got, c.want)
		}
	}
}

// gateWriter is a connection that takes nothing until the producer has
// sealed `hold` frames (so the pipeline is full ahead of the wire), then
// keeps every byte.
type gateWriter struct {
	sealed <-chan struct{}
	hold   int
	mu     sync.Mutex
	buf    bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	for ; g.hold > 0; g.hold-- {
		<-g.sealed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// TestProgressCountsWhatWentOut: a backup whose connection is slower than
// its disk (the stream writer's pipeline full of frames read ahead)
// reports, in every progress message, no more source bytes than the
// frames that went out before it hold: its figures are the wire's, not
// the disk's. The last message counts everything.
func TestProgressCountsWhatWentOut(t *testing.T) {
	const frame = stream.MinFrameSize
	dir := t.TempDir()
	data := make([]byte, 32*frame+777) // a large file: counted as it is read
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small"), data[:3*frame], 0o644); err != nil {
		t.Fatal(err)
	}
	phase := monitor.StartPhase(monitor.SystemClock{}, "backup")
	sent := &sentFigures{}
	seals := make(chan struct{}, 100)
	gate := &gateWriter{sealed: seals, hold: 5}
	sink := &netSink{w: gate, sent: sent, clear: true}
	spec := producer.Spec{JobID: 1, Paths: []string{dir}, Compress: compress.LevelNone, FrameSize: frame}
	spec.Stream.Workers = 2
	countSent(&spec, sent, phase)
	agentSeal := spec.Stream.OnSeal
	spec.Stream.OnSeal = func() { agentSeal(); seals <- struct{}{} }
	prod, err := producer.Local{}.Produce(context.Background(), spec, sink, io.Discard, producer.Hooks{Phase: phase})
	if err != nil {
		t.Fatal(err)
	}
	sent.all(figuresOf(phase))
	if err := sink.progress(); err != nil {
		t.Fatal(err)
	}
	if len(prod.Frames) < 35 {
		t.Fatalf("%d frames, want at least 35", len(prod.Frames))
	}
	var wire, last int64
	var progress int
	for buf := []byte(nil); ; {
		typ, p, err := api.ReadMsg(&gate.buf, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case api.MsgFrame:
			wire += int64(len(p))
		case api.MsgProgress:
			var pr api.Progress
			if err := json.Unmarshal(p, &pr); err != nil {
				t.Fatal(err)
			}
			progress++
			if pr.Bytes > wire {
				t.Errorf("progress %d: %d source bytes, but only %d bytes of frames went out", progress, pr.Bytes, wire)
			}
			if pr.Bytes < last {
				t.Errorf("progress %d: %d source bytes, down from %d", progress, pr.Bytes, last)
			}
			last = pr.Bytes
		}
	}
	if want := int64(len(data) + 3*frame); last != want {
		t.Errorf("the last progress counts %d source bytes, want %d", last, want)
	}
	if progress < 35 {
		t.Errorf("%d progress messages, want one a frame", progress)
	}
}

// An encrypted stream counts a frame once the sealed batch that ends its
// plaintext went out: no progress message runs ahead of the plaintext
// sent before it.
func TestSealedProgressCountsWhatWentOut(t *testing.T) {
	k, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	label := stream.LabelFrame(stream.Label{SavesetID: 7, Client: "c1"})
	var wire bytes.Buffer
	sent := &sentFigures{}
	sink := &netSink{w: &wire, sent: sent}
	s, err := newSealSink(sink, []string{k.Recipient().String()}, label)
	if err != nil {
		t.Fatal(err)
	}
	var source int64
	for _, size := range []int{1 << 20, 3 << 20, 5, 1<<20 + 1, 200 << 10} {
		source += int64(size)
		sent.seal(api.Progress{Files: 1, Bytes: source}) // as the stream writer would
		if _, err := s.WriteFrame(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sent.figures().Bytes; got != source {
		t.Errorf("after Close %d bytes count as sent, want %d", got, source)
	}
	var batches int64 // more than the plaintext they hold (label and frames)
	header := true
	for buf := []byte(nil); ; {
		typ, p, err := api.ReadMsg(&wire, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case api.MsgFrame:
			if header {
				header = false
				continue
			}
			batches += int64(len(p))
		case api.MsgProgress:
			var pr api.Progress
			if err := json.Unmarshal(p, &pr); err != nil {
				t.Fatal(err)
			}
			if most := max(0, batches-int64(len(label))); pr.Bytes > most {
				t.Errorf("progress says %d bytes; at most %d went out", pr.Bytes, most)
			}
		}
	}
}
