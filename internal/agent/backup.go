package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/kura-backup/kura/internal/apiclient"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/stream"
)

// heartbeat is how often a backup stream reports its figures when no frame
// goes out (an incremental walking unchanged files sends no frames).
const heartbeat = 2 * time.Second

// netSink sends a backup's frames, figures and warnings to the server as
// one stream of messages (api.WriteMsg). Its figures are those of what
// went out (sentFigures).
type netSink struct {
	mu    sync.Mutex
	w     io.Writer
	sent  *sentFigures
	clear bool  // the stream writer's frames come here as they are (no sealSink between)
	off   int64 // bytes of frames sent
	plain int64 // of an encrypted stream: the plaintext they hold
	err   error
}

func (n *netSink) send(typ byte, payload ...[]byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return n.err
	}
	n.err = api.WriteMsg(n.w, typ, payload...)
	return n.err
}

// WriteFrame sends one frame; its place on tape comes back at the end.
// It returns once the connection has taken the frame's last byte.
func (n *netSink) WriteFrame(frame []byte) (stream.Location, error) {
	if err := n.send(api.MsgFrame, frame); err != nil {
		return stream.Location{}, err
	}
	loc := stream.Location{Offset: n.off}
	n.off += int64(len(frame))
	switch {
	case n.clear:
		n.sent.enter(n.off)
		n.sent.sentTo(n.off)
	case loc.Offset > 0:
		// A batch of sealed chunks (the first message is the age
		// header): the frames whose plaintext it ends went out.
		n.plain += int64(seal.PlainLen(len(frame)))
		n.sent.sentTo(n.plain)
	}
	return loc, n.progress()
}

func (n *netSink) progress() error {
	b, _ := json.Marshal(n.sent.figures())
	return n.send(api.MsgProgress, b)
}

func (n *netSink) warn(path, msg string) {
	b, _ := json.Marshal(api.NewWarning(path, msg))
	_ = n.send(api.MsgWarning, b)
}

func (a *Agent) backup(ctx context.Context, o api.Order) error {
	b := o.Backup
	idle := idleOf(o)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Open the data stream first: whatever goes wrong after this reaches
	// the server as an abort message with its reason.
	pw := newHandoff()
	var body io.Reader = pw
	if b.BWLimit > 0 {
		// At the write to the connection, after every buffer: the
		// limit holds on the wire, whatever the frame size.
		body = newLimitedUpload(ctx, pw, b.BWLimit)
	}
	phase := monitor.StartPhase(monitor.SystemClock{}, "backup")
	sent := &sentFigures{}
	sink := &netSink{w: pw, sent: sent, clear: !b.Encrypt}
	type answer struct {
		close api.BackupClose
		err   error
	}
	ansc := make(chan answer, 1)
	go func() {
		// A server that stops taking the stream for the idle limit fails
		// it; its answer comes after it has closed the tape files (the
		// job's context bounds that wait).
		var an answer
		var rc io.ReadCloser
		var err error
		if b.DataURL != "" {
			// The library is on a storage node: the stream goes there.
			var nc *apiclient.Client
			if nc, err = apiclient.New(b.DataURL, a.tls, ""); err == nil {
				defer nc.Close()
				rc, err = a.callVia(nc, nc.DoBulk, ctx, "POST", "/span/"+b.Ticket, "application/octet-stream", body, idle, true)
			}
		} else {
			rc, err = a.callBulk(ctx, "POST", jobPath(o.JobID, "/data"), "application/octet-stream", body, idle, true)
		}
		if err != nil {
			an.err = err
		} else {
			an.err = json.NewDecoder(rc).Decode(&an.close)
			rc.Close()
		}
		if an.err != nil {
			// The server refused or broke off: stop producing.
			pw.CloseRead(an.err)
			cancel()
		}
		ansc <- an
	}()
	abort := func(err error) error {
		b, _ := json.Marshal(api.Warning{Message: err.Error()})
		if sink.send(api.MsgAbort, b) == nil {
			pw.Close()
		} else {
			pw.CloseWithError(err)
		}
		var an answer
		select {
		case an = <-ansc:
		case <-time.After(idle):
			cancel() // the server does not answer the abort
			an = <-ansc
		}
		if an.err != nil && ctx.Err() == nil {
			return fmt.Errorf("%w (server: %v)", err, an.err)
		}
		return err
	}

	// Figures go out every few seconds from now on, so a long base
	// index download or a walk over unchanged files never looks silent.
	beatDone := make(chan struct{})
	defer func() {
		select {
		case <-beatDone:
		default:
			close(beatDone)
		}
	}()
	go func() {
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if sink.progress() != nil {
					return
				}
			case <-beatDone:
				return
			}
		}
	}()
	level, err := compress.ParseLevel(b.Compress)
	if err != nil {
		return abort(err)
	}
	paths := b.Paths
	var uncounted []string
	if b.Streams > 1 {
		split, err := SplitPaths(paths, b.Streams)
		if err != nil {
			return abort(err)
		}
		if b.Stream < 1 || b.Stream > len(split) || len(split[b.Stream-1]) == 0 {
			return abort(fmt.Errorf("stream %d of %d: nothing to back up in this stream (fewer entries than streams)", b.Stream, b.Streams))
		}
		paths = split[b.Stream-1]
		uncounted = sharedParents(split, b.Stream)
	}
	spec := producer.Spec{JobID: o.JobID, Paths: paths, Excludes: b.Excludes, Compress: level,
		FrameSize: b.FrameSize, BaseID: b.BaseID, Uncounted: uncounted,
		Sources: plugin.FromAPI(b.Sources), PartSize: b.PartSize}
	countSent(&spec, sent, phase)
	for i, s := range spec.Sources {
		if s.Kind == plugin.KindWAL {
			// A WAL file is read from this agent's spool, where kura wal
			// archive put it, and nowhere else: no command runs.
			p, err := a.spooled(s.Name)
			if err != nil {
				return abort(err)
			}
			spec.Sources[i].Path = p
			continue
		}
		// The server asks; this machine's administrator decides.
		if err := a.opts.Allow.Source(s); err != nil {
			return abort(err)
		}
	}
	if b.BaseID != 0 {
		r, err := a.fetchIndex(ctx, o.JobID, b.BaseID, idle)
		if err != nil {
			return abort(fmt.Errorf("the index of base saveset %d: %w", b.BaseID, err))
		}
		defer r.Close()
		spec.Base = r
	}
	idx, err := os.CreateTemp(a.tmp, fmt.Sprintf("job%d-*.idx", o.JobID))
	if err != nil {
		return abort(err)
	}
	defer os.Remove(idx.Name())
	defer idx.Close()

	var fsink stream.FrameSink = sink
	var sealed *sealSink
	var recips []string
	if b.Encrypt {
		if recips, err = a.recipients(b); err != nil {
			return abort(fmt.Errorf("encryption key: %w", err))
		}
		if sealed, err = newSealSink(sink, recips, b.Label); err != nil {
			return abort(err)
		}
		fsink = sealed
	}
	prod, err := producer.Local{}.Produce(ctx, spec, fsink, idx, producer.Hooks{Phase: phase, Warn: sink.warn})
	if sealed != nil {
		if err == nil {
			err = sealed.Close()
		} else {
			sealed.Abort() // before the abort message goes out
		}
	}
	close(beatDone)
	if err == nil {
		sent.all(figuresOf(phase)) // every frame has gone out
		host, _ := os.Hostname()
		end, _ := json.Marshal(api.BackupEnd{Files: prod.Files, Entries: prod.Entries, Host: host})
		if err = sink.progress(); err == nil {
			err = sink.send(api.MsgEnd, end)
		}
	}
	if err != nil {
		return abort(err)
	}
	pw.Close()
	an := <-ansc
	if an.err != nil {
		return an.err
	}
	// An encrypted stream's frame table holds offsets into the decrypted
	// stream (the agent's own); a clear one's, the server's tape locations.
	frames := prod.Frames
	if sealed == nil {
		if frames, err = mergeFrames(prod.Frames, indexFrames(an.close.Frames)); err != nil {
			return err
		}
	}
	if err := prod.FinishIndex(frames, an.close.Meta); err != nil {
		return err
	}
	up := idx
	if sealed != nil {
		if up, err = a.sealFile(idx, recips, fmt.Sprintf("job%d-*.idx.age", o.JobID)); err != nil {
			return fmt.Errorf("encrypting the index: %w", err)
		}
		defer os.Remove(up.Name())
		defer up.Close()
	} else if _, err := idx.Seek(0, io.SeekStart); err != nil {
		return err
	}
	rc, err := a.call(ctx, "PUT", jobPath(o.JobID, "/index"), "application/octet-stream", up, idle, false)
	if err != nil {
		return fmt.Errorf("sending the index: %w", err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	return err
}

// countSent has each frame's figures go out with it, not when its bytes
// were read: a frame's figures are taken when it is full.
func countSent(spec *producer.Spec, sent *sentFigures, phase *monitor.Phase) {
	spec.Stream.OnSeal = func() { sent.seal(figuresOf(phase)) }
}

// figuresOf are a phase's files and source bytes so far.
func figuresOf(phase *monitor.Phase) api.Progress {
	return api.Progress{Files: phase.Files.Total(), Bytes: phase.Source.Total()}
}

// mergeFrames puts the server's tape locations into the agent's frame
// table (uncompressed offsets and sizes).
func mergeFrames(mine, server []index.Frame) ([]index.Frame, error) {
	if len(mine) != len(server) {
		return nil, fmt.Errorf("the server stored %d frames, the agent sent %d", len(server), len(mine))
	}
	out := make([]index.Frame, len(mine))
	for i := range mine {
		if mine[i].CSize != server[i].CSize {
			return nil, fmt.Errorf("frame %d: the server stored %d bytes, the agent sent %d", i, server[i].CSize, mine[i].CSize)
		}
		out[i] = mine[i]
		out[i].Part, out[i].PartOffset = server[i].Part, server[i].PartOffset
	}
	return out, nil
}

// fetchIndex downloads a saveset's index for this job.
func (a *Agent) fetchIndex(ctx context.Context, job, id int64, idle time.Duration) (*index.Reader, error) {
	return a.downloadIndex(ctx, jobPath(job, fmt.Sprintf("/savesets/%d/index", id)), id, idle)
}

// downloadIndex downloads the index of saveset id from path into a
// temporary file, decrypting an encrypted one with the agent's keys.
func (a *Agent) downloadIndex(ctx context.Context, path string, id int64, idle time.Duration) (*index.Reader, error) {
	rc, err := a.call(ctx, "GET", path, "", nil, idle, false)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f, err := os.CreateTemp(a.tmp, fmt.Sprintf("ss%d-*.idx", id))
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name()) // the open reader keeps it
	defer f.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	var src io.Reader = br
	if head, _ := br.Peek(len(seal.Magic)); seal.IsSealed(head) {
		// The index of an encrypted saveset: decrypted (every chunk
		// authenticated) into the temporary file, which is this agent's.
		ids, err := a.identities()
		if err != nil {
			return nil, fmt.Errorf("saveset %d is encrypted: %w", id, err)
		}
		if src, err = seal.Decrypt(br, ids); err != nil {
			return nil, fmt.Errorf("the index of encrypted saveset %d: %w", id, err)
		}
	}
	if _, err := io.Copy(f, src); err != nil {
		return nil, fmt.Errorf("downloading: %w", err)
	}
	return index.OpenFile(f.Name())
}

// indexFrames is a frame table from the wire.
func indexFrames(fs []api.Frame) []index.Frame {
	out := make([]index.Frame, len(fs))
	for i, f := range fs {
		out[i] = index.Frame(f)
	}
	return out
}
