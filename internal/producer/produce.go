// Package producer is the producing half of a backup: it walks the
// selected paths, reads the files, writes them as a pax stream cut into
// compressed frames to a sink, and writes the index. The engine runs it for
// a local backup and the agent on a client; it knows nothing of the
// catalog or the tapes.
package producer

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kura-backup/kura/internal/compress"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/plugin"
	"github.com/kura-backup/kura/internal/span"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// A backup is two halves joined by a stream of frames:
//
//	producer: walk ─► read ─► pax ─► compressed frames ─► sink   (+ the index)
//	media:    sink = span writer ─► drive ─► tape files ─► catalog
//
// A local backup runs both halves in one process. A backup through an agent
// runs the producer on the agent (so compression happens before the
// network) and the media half on the server; the server's Producer is then
// a proxy that feeds the agent's frames to the span writer.

// Spec says what a producer reads and how it encodes it.
type Spec struct {
	JobID     int64
	Paths     []string // absolute, sorted
	Excludes  []string
	Skip      []string // never back these up (the library, the home)
	Compress  compress.Level
	FrameSize int
	Workers   int
	ReadAhead int
	BaseID    int64         // the base saveset of an incremental or differential (0: full)
	Base      *index.Reader // its index (local producers); nil for a full backup
	// Stream tunes the stream writer beyond level and frame size (the auto
	// controller, the number of encoders). Level and FrameSize win.
	Stream stream.Options
	// Uncounted are absolute directories this backup stores (as parents
	// of its paths) but does not count in its files: a later stream of a
	// split backup, whose earlier stream counts the parents they share, so
	// that the streams total what one stream would.
	Uncounted []string
	// Sealed: the stream and the index are to be encrypted (age) by the
	// producer, the stream starting with Label inside the encryption. Only
	// an agent does it (it holds the key); Local refuses.
	Sealed bool
	Label  []byte
	// Span, when set, is where the frames go on tape, for a producer that
	// can have the drive's own machine write them (a storage node's
	// library: the agent sends its stream straight to the node). Such a
	// producer reports the parts in Produced; others ignore it and write
	// to the sink.
	Span *SpanTarget
	// Sources are commands and plug-ins whose output the backup stores
	// instead of files (Paths is then empty); see command.go.
	Sources []plugin.Source
	// PartSize is the most of a command's output held in memory and
	// stored as one entry (0: DefaultPartSize).
	PartSize int
}

// ErrSealedHere: a producer asked to encrypt that cannot (Local: the
// machine of the library holds no client's key).
var ErrSealedHere = errors.New("produce: encryption is done by a client's agent, not here")

// Hooks are where a producer's figures go while it runs.
type Hooks struct {
	Phase *monitor.Phase // Source and Files are counted here; Media as frames reach the sink
	// Warn records a warning about one path. Calls come from one goroutine
	// at a time.
	Warn func(path, msg string)
	// Tick is called after each entry (may be nil); it throttles itself.
	Tick func(path string)
}

// Produced is a finished stream: its frame table and the means to close
// its index.
type Produced struct {
	Frames  []index.Frame
	Files   int64 // entries backed up (unchanged files of an incremental not counted)
	Entries int64 // entries in the index: the whole tree
	// FinishIndex closes the index with the final frame table (nil: the
	// producer's own) and the saveset record, and makes sure every byte of
	// it has reached the index writer given to Produce.
	FinishIndex func(frames []index.Frame, meta []byte) error
	// Untrusted: the index comes from elsewhere (an agent across the
	// network); the backup checks it before it goes to tape.
	Untrusted bool
	// Parts, MediaBytes and Tapes are set when the producer had the
	// frames written elsewhere (Spec.Span): the finished data parts, the
	// bytes on tape, and every tape written on, in order. The caller's
	// sink then holds nothing.
	Parts      []span.Part
	MediaBytes int64
	Tapes      []string
}

// SpanTarget is what a span writer on the drive's machine needs: the tape
// loaded for the first part, the saveset's label (a copy of it heads each
// part; nil: no header, an encrypted stream), the tape files' tag, and the
// tapes it may go on to at early warning (nil: any).
type SpanTarget struct {
	Device  tape.Device
	Barcode string
	Label   *stream.Label
	Tag     string
	Allow   []string
}

// ErrBadIndex: an index from an untrusted producer does not read back, or
// does not match the stream that went to tape. The backup fails; nothing
// of the index is on tape.
var ErrBadIndex = errors.New("the index does not match the backup")

// A Producer makes the saveset stream of a backup.
type Producer interface {
	// Produce writes the stream's frames to sink, in order, and the index
	// entries to idx; it returns once the stream is closed. On error the
	// sink holds a partial stream that the caller aborts.
	Produce(ctx context.Context, spec Spec, sink stream.FrameSink, idx io.Writer, hooks Hooks) (*Produced, error)
}

// Local reads the files of this machine.
type Local struct{}

var _ Producer = Local{}

// Produce walks spec.Paths and streams them.
func (Local) Produce(ctx context.Context, spec Spec, sink stream.FrameSink, idx io.Writer, hooks Hooks) (*Produced, error) {
	if hooks.Phase == nil {
		return nil, errors.New("produce: no phase to count into")
	}
	if hooks.Warn == nil {
		hooks.Warn = func(string, string) {}
	}
	if spec.Sealed {
		return nil, ErrSealedHere
	}
	if spec.FrameSize == 0 {
		spec.FrameSize = stream.DefaultFrameSize
	}
	media := hooks.Phase.Media
	sopts := spec.Stream
	sopts.Level, sopts.FrameSize = spec.Compress, spec.FrameSize
	userOnFrame := sopts.OnFrame
	sopts.OnFrame = func(n, c int) {
		media.Add(int64(c))
		if userOnFrame != nil {
			userOnFrame(n, c)
		}
	}
	strm, err := stream.NewWriter(sink, sopts)
	if err != nil {
		return nil, err
	}
	p := &producer{ctx: ctx, spec: spec, hooks: hooks, uncounted: map[string]bool{}}
	for _, d := range spec.Uncounted {
		p.uncounted[strings.TrimPrefix(filepath.ToSlash(filepath.Clean(d)), "/")] = true
	}
	var base *baseIndex
	if spec.Base != nil {
		base = &baseIndex{it: spec.Base.Iter(), id: spec.BaseID}
	}
	idxw := index.NewWriter(idx, nil)
	run := func() error { return p.stream(strm, idxw, base) }
	if len(spec.Sources) > 0 {
		run = func() error { return p.streamSources(strm, idxw) }
	}
	if err := run(); err != nil {
		strm.Abort()
		return nil, err
	}
	frames, err := strm.Close()
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return &Produced{Frames: frames, Files: p.files, Entries: idxw.Len(), FinishIndex: func(fr []index.Frame, meta []byte) error {
		err := errors.New("index already finished")
		once.Do(func() {
			if fr == nil {
				fr = frames
			}
			idxw.SetFrames(fr)
			if err = idxw.SetMeta(meta); err != nil {
				return
			}
			err = idxw.Close()
		})
		return err
	}}, nil
}

// producer is one local production in progress.
type producer struct {
	ctx   context.Context
	spec  Spec
	hooks Hooks

	asyncMu   sync.Mutex
	asyncWarn [][2]string
	files     int64
	uncounted map[string]bool // index paths of Spec.Uncounted
}
