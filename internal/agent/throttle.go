package agent

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/monitor"
)

// Bandwidth limits (docs/operations.md, "Bandwidth").
//
// The limit is a promise about the wire. A backup's frames (1 MiB by
// default) are produced at disk speed into the stream writer's pipeline;
// the limiter sits after it, at the write to the connection, and lets a
// frame through in pieces of at most one burst. So by any moment the
// connection has been given at most limit × t + burst bytes over any
// span t, whatever the frame size, and nothing is given ahead of time:
// the limiter starts empty.
//
// What a limit should cost is a wake-up and a socket write per piece
// (docs/benchmarks.md §4.3.1, BenchmarkLimitedSend): the pieces are cut
// on the connection's goroutine, behind the handoff (limitedUpload), so
// the sink hands each message across once; a small message goes in one
// write with its header (api.WriteMsg); and the HTTP transport sends a
// piece as one chunk in one socket write (apiclient.bulkBufferSize).
//
// The progress the agent reports counts what went out, not what was
// read: the figures of a frame (files and source bytes read by the time
// it was full, stream.Options.OnSeal) are released once the frame's last
// byte has been written to the connection. The job monitor's rate is then
// the wire's (times the compression ratio: it counts source bytes); it
// never runs ahead of the connection by more than the frame being sent.

// Burst bounds: a tenth of a second of the limit up to 64 KiB, or 20 ms
// of it (burstPerSecond bursts a second) when that is more; at least
// minBurst (so a low limit does not cut the stream into tiny writes) and at
// most maxBurst (so a high one never bursts much above it). Each piece
// costs a timer wake-up and a socket write (about 0.2 ms of CPU on the
// project's 2-core machine), so the burst grows with the limit: at
// 100 Mbit/s 244 KiB pieces, 50 a second, where a fixed 64 KiB cost 190
// wake-ups a second (docs/benchmarks.md §4.3.1); at 10 Mbit/s it stays at
// 64 KiB. Over any second the wire carries at most 2 % more than the limit
// above 25 Mbit/s, and at most 64 KiB more below.
const (
	minBurst       = 16 << 10
	smallBurst     = 64 << 10
	maxBurst       = 1 << 20
	burstPerSecond = 50
)

// burstOf is the burst of a limit of bps bytes per second.
func burstOf(bps int64) int {
	return int(min(max(bps/burstPerSecond, min(bps/10, smallBurst), minBurst), maxBurst))
}

// newLimiter allows bps bytes per second with a burst of burstOf(bps),
// starting empty (no initial burst) at now.
func newLimiter(bps int64, now time.Time) *rate.Limiter {
	burst := burstOf(bps)
	lim := rate.NewLimiter(rate.Limit(bps), burst)
	lim.AllowN(now, burst)
	return lim
}

// limitedWriter holds writes to a rate: each Write goes on in pieces of
// at most the limiter's burst, each one after its turn. Time is the
// clock's; sleep waits (sleepCtx in production, a fake clock's advance in
// tests).
type limitedWriter struct {
	ctx   context.Context
	w     io.Writer
	lim   *rate.Limiter
	clock monitor.Clock
	sleep func(ctx context.Context, d time.Duration) error
}

func newLimitedWriter(ctx context.Context, w io.Writer, bps int64) *limitedWriter {
	clock := monitor.SystemClock{}
	return &limitedWriter{ctx: ctx, w: w, lim: newLimiter(bps, clock.Now()), clock: clock, sleep: sleepCtx}
}

// limitedUpload is a backup's request body held to a rate: the handoff's
// writes reach the connection through a limitedWriter, so each piece's
// wait and write run on the transport's goroutine, one after the other.
// The producer's side hands over each message once (not each piece) and
// its Write still returns only when the connection has taken the last
// byte. (With the limiter before the handoff, every piece was also a
// hand-over between two goroutines and back, each waking a thread:
// BenchmarkLimitedSend with real waits, 3.84 against 3.40 CPU s/GiB.)
type limitedUpload struct {
	h  *handoff
	lw *limitedWriter // its w is the connection, set by WriteTo
}

func newLimitedUpload(ctx context.Context, h *handoff, bps int64) *limitedUpload {
	return &limitedUpload{h: h, lw: newLimitedWriter(ctx, nil, bps)}
}

// WriteTo writes the handoff's bytes to w at the rate.
func (u *limitedUpload) WriteTo(w io.Writer) (int64, error) {
	u.lw.w = w
	return u.h.WriteTo(u.lw)
}

// Read is io.Reader for a transport that does not use WriteTo: at most a
// burst at a time, returned once its turn has come.
func (u *limitedUpload) Read(p []byte) (int, error) {
	p = p[:min(len(p), u.lw.lim.Burst())]
	n, err := u.h.Read(p)
	if n > 0 {
		if werr := u.lw.wait(n); werr != nil {
			return 0, werr
		}
	}
	return n, err
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), l.lim.Burst())
		if err := l.wait(k); err != nil {
			return n, err
		}
		m, err := l.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// wait takes k bytes' turn (k <= burst).
func (l *limitedWriter) wait(k int) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	now := l.clock.Now()
	r := l.lim.ReserveN(now, k)
	if !r.OK() {
		return fmt.Errorf("bandwidth limit: %d bytes exceed the burst of %d", k, l.lim.Burst())
	}
	if d := r.DelayFrom(now); d > 0 {
		if err := l.sleep(l.ctx, d); err != nil {
			r.CancelAt(l.clock.Now())
			return err
		}
	}
	return nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sentFigures are a backup's figures as far as its stream has gone out.
// Frames are marked in stream order three times: sealed (full, with the
// figures counted so far), entered (handed to the sink, which gives the
// stream offset its last byte will have), and sent (the connection has
// taken the bytes up to an offset). Offsets are those of the sink that
// marks them: the frames' bytes for a clear stream, the plaintext (label
// included) for an encrypted one.
type sentFigures struct {
	mu      sync.Mutex
	sealed  []api.Progress // sealed, not yet entered
	pending []sentMark     // entered, not yet sent
	sent    api.Progress
}

type sentMark struct {
	end int64
	p   api.Progress
}

// seal notes the figures of a frame that is full.
func (f *sentFigures) seal(p api.Progress) {
	f.mu.Lock()
	f.sealed = append(f.sealed, p)
	f.mu.Unlock()
}

// enter notes that the oldest sealed frame went to the sink and ends at
// offset end.
func (f *sentFigures) enter(end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sealed) == 0 {
		return // not a frame of the stream writer's: nothing to release
	}
	f.pending = append(f.pending, sentMark{end: end, p: f.sealed[0]})
	f.sealed = f.sealed[1:]
}

// sentTo notes that every byte before offset off went out: the frames
// ending there or before count.
func (f *sentFigures) sentTo(off int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	for ; i < len(f.pending) && f.pending[i].end <= off; i++ {
		f.sent = maxProgress(f.sent, f.pending[i].p)
	}
	f.pending = f.pending[i:]
}

// all counts everything: the stream has gone out whole.
func (f *sentFigures) all(p api.Progress) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sealed, f.pending = nil, nil
	f.sent = maxProgress(f.sent, p)
}

// figures are the figures of what went out.
func (f *sentFigures) figures() api.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// maxProgress keeps the figures from going backwards.
func maxProgress(a, b api.Progress) api.Progress {
	return api.Progress{Files: max(a.Files, b.Files), Bytes: max(a.Bytes, b.Bytes)}
}
