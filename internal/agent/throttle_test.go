package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
	"golang.org/x/time/rate"

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

// TestLimitHoldsOnTheWire: as a backup sends (netSink → handoff →
// limitedUpload → connection), whatever the frame size and however the
// producer pauses, the connection is given at most limit × t bytes by any
// moment t since the start (the limiter starts empty), and at most
// limit × t + burst over any span t between two writes; the burst is at
// most maxBurst (1 MiB), and no write is larger than it. The limit is also used:
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
	lw := &limitedWriter{ctx: context.Background(), lim: newLimiter(bps, clock.Now()), clock: clock,
		sleep: func(_ context.Context, d time.Duration) error {
			var over time.Duration
			if maxOver > 0 {
				over = time.Duration(r.Int64N(int64(maxOver)))
			}
			extra += over
			clock.Advance(d + over)
			return nil
		}}
	// As in a backup: the transport's goroutine writes the body to the
	// connection (WriteTo), and each Write of the sink returns once the
	// connection has taken its bytes (so the pauses below, the sleeps and
	// the wire's log never run at the same time).
	pw := newHandoff()
	upload := &limitedUpload{h: pw, lw: lw}
	copied := make(chan error, 1)
	go func() {
		_, err := upload.WriteTo(wire)
		copied <- err
	}()
	sink := &netSink{w: pw, sent: &sentFigures{}, clear: true}
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
	pw.Close()
	if err := <-copied; err != nil {
		t.Fatal(err)
	}
	burst := lw.lim.Burst()
	if burst > maxBurst || burst != burstOf(bps) {
		t.Fatalf("burst %d, want burstOf %d, at most 1 MiB", burst, burstOf(bps))
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

// TestLimitedUploadRead: a transport that reads the body (no WriteTo)
// gets at most a burst per Read, each once its turn has come: by the time
// a Read returns, at most limit × t bytes have been read since the start.
func TestLimitedUploadRead(t *testing.T) {
	const bps = 256 << 10
	clock := monitor.NewFakeClock(time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC))
	start := clock.Now()
	lw := &limitedWriter{ctx: context.Background(), lim: newLimiter(bps, clock.Now()), clock: clock,
		sleep: func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }}
	pw := newHandoff()
	upload := &limitedUpload{h: pw, lw: lw}
	data := make([]byte, 1<<20+5)
	go func() {
		_ = api.WriteMsg(pw, api.MsgFrame, data)
		pw.Close()
	}()
	buf := make([]byte, 4<<20)
	var got int64
	for {
		n, err := upload.Read(buf)
		if n > burstOf(bps) {
			t.Fatalf("a Read of %d bytes: more than the burst of %d", n, burstOf(bps))
		}
		got += int64(n)
		if limit := float64(bps)*clock.Now().Sub(start).Seconds() + 1; float64(got) > limit {
			t.Fatalf("%d bytes read by %s: more than limit × t = %.0f", got, clock.Now().Sub(start), limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := int64(len(data) + 5); got != want {
		t.Errorf("read %d bytes, want the message's %d", got, want)
	}
}

func TestBurstOf(t *testing.T) {
	for _, c := range []struct {
		bps  int64
		want int
	}{{1000, 16 << 10}, {256 << 10, 256 << 10 / 10}, {1 << 20, 64 << 10}, {1_250_000, 64 << 10}, {12_500_000, 250_000}, {125_000_000, 1 << 20}} {
		if got := burstOf(c.bps); got != c.want {
			t.Errorf("burstOf(%d) = %d, want %d", c.bps, got, c.want)
		}
	}
	// Never smaller than the fixed burst it replaced (a tenth of a second,
	// 16-64 KiB: more pieces would cost more wake-ups), never more than
	// 20 ms of the limit above that, never above 1 MiB.
	for bps := int64(1); bps < 1<<33; bps = bps*3/2 + 1 {
		old := int(min(max(bps/10, 16<<10), 64<<10))
		got := burstOf(bps)
		if got < old || got > max(old, int(bps/50)) || got > 1<<20 {
			t.Fatalf("burstOf(%d) = %d: below the old %d, or above max(old, 20 ms) or 1 MiB", bps, got, old)
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

// BenchmarkLimitedSend: a backup's frames (1 MiB, each with its progress
// message) sent by the agent's netSink over a loopback TCP connection,
// unlimited and limited to 100 Mbit/s, and the CPU this process spends per
// GiB (user + system; it holds both ends of the connection).
//
//   - "limited" is a backup's arrangement (netSink → handoff →
//     limitedUpload → connection: each piece of one burst, 244 KiB at this
//     limit, waits and is written on the connection's goroutine);
//     "before-handoff" is the one it replaced (netSink → limitedWriter →
//     handoff: every piece handed across to that goroutine and back);
//     "burst-64KiB" is limited with the fixed 64 KiB burst Kura used before
//     the burst grew with the limit.
//   - "fake-clock": a wait advances a fake clock at once, so only the
//     limit's own work per byte counts; "real-clock": the waits are real
//     (100 Mbit/s: 84 ms a frame; use -benchtime 40x), so the wake-ups of an
//     otherwise idle process count too, as in a backup.
//
// writes/MiB counts the writes the connection took.
//
//	go test -run X -bench 'LimitedSend/(unlimited|.*/real)' -benchtime 40x -count 5 ./internal/agent
//	go test -run X -bench 'LimitedSend/(unlimited|.*/fake)' -benchtime 2000x -count 5 ./internal/agent
func BenchmarkLimitedSend(b *testing.B) {
	const bps = 12_500_000 // 100 Mbit/s
	run := func(b *testing.B, arr, clockName string) {
		conn := &countingWriter{w: loopback(b)}
		burst := burstOf(bps)
		if arr == "burst-64KiB" {
			burst = 64 << 10
		}
		limited := func(w io.Writer) *limitedWriter {
			if clockName == "real-clock" {
				lw := newLimitedWriter(context.Background(), w, bps)
				lw.lim = rate.NewLimiter(rate.Limit(bps), burst)
				lw.lim.AllowN(time.Now(), burst)
				return lw
			}
			clock := monitor.NewFakeClock(time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC))
			lim := rate.NewLimiter(rate.Limit(bps), burst)
			lim.AllowN(clock.Now(), burst)
			return &limitedWriter{ctx: context.Background(), w: w, lim: lim, clock: clock,
				sleep: func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }}
		}
		pw := newHandoff()
		var body io.WriterTo = pw
		var sinkTo io.Writer = pw
		switch arr {
		case "limited", "burst-64KiB":
			body = &limitedUpload{h: pw, lw: limited(nil)}
		case "before-handoff":
			sinkTo = limited(pw)
		}
		copied := make(chan error, 1)
		go func() {
			_, err := body.WriteTo(conn)
			copied <- err
		}()
		sink := &netSink{w: sinkTo, sent: &sentFigures{}, clear: true}
		frame := make([]byte, 1<<20)
		b.SetBytes(int64(len(frame)))
		c0 := cpuSeconds()
		b.ResetTimer()
		for range b.N {
			if _, err := sink.WriteFrame(frame); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu := cpuSeconds() - c0
		pw.Close()
		if err := <-copied; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(cpu/(float64(b.N)/1024), "cpu-s/GiB")
		b.ReportMetric(float64(conn.writes)/float64(b.N), "writes/MiB")
	}
	b.Run("unlimited", func(b *testing.B) { run(b, "unlimited", "") })
	for _, arr := range []string{"limited", "before-handoff", "burst-64KiB"} {
		for _, clock := range []string{"fake-clock", "real-clock"} {
			b.Run(arr+"/"+clock, func(b *testing.B) { run(b, arr, clock) })
		}
	}
}

// countingWriter counts the writes it passes on.
type countingWriter struct {
	w      io.Writer
	writes int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// loopback is a TCP connection on loopback whose other end reads and
// drops everything.
func loopback(b *testing.B) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
