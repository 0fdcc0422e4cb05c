// Package memtape is a tape.Device in memory: the fast device for tests of
// code above the drive contract (spanning, the engine's writers, fault
// wrappers), and the reference for what the contract asks when nothing can
// go wrong with the media itself.
//
// A Media holds one cartridge's recorded state (label and tape files); a
// Tape is a device with that media loaded. Several Tapes may load the same
// Media one after the other or at once, as a drive reopened after a restart
// does: the writer lock lives on the media, so a second writer on any of
// them fails with tape.ErrBusy. A Shelf keeps media by barcode.
//
// Invariants: a finished tape file's bytes are never changed; only the
// last tape file can be incomplete (being written, or left so when its
// Tape was closed with the writer open — a crash) and the next Append
// removes it; Used counts every tape file's bytes plus the open writer's.
package memtape

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/tape"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Media is the recorded state of one cartridge. Its methods are safe for
// concurrent use.
type Media struct {
	mu     sync.Mutex
	label  tape.Label
	files  []*file
	writer bool // a FileWriter is open on this media
	clock  func() time.Time
}

type file struct {
	info tape.FileInfo // Status FileIncomplete until Finish
	data []byte
}

// Format returns new media labelled l. As tape.Format does, it sets Version,
// Generation, Created and Labelled, and a zero EarlyWarning means Capacity.
// clock stamps the label and tape files; nil means time.Now.
func Format(l tape.Label, clock func() time.Time) (*Media, error) {
	if clock == nil {
		clock = time.Now
	}
	nl, err := tape.NewLabel(l, clock())
	if err != nil {
		return nil, fmt.Errorf("memtape: format %s: %w", l.Barcode, err)
	}
	return &Media{label: nl, clock: clock}, nil
}

// Label is the media's label.
func (m *Media) Label() tape.Label {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.label
}

// Load returns a device with the media loaded. blockSize is the block size
// of tape files written from now on; 0 means the label's.
func (m *Media) Load(blockSize int) (*Tape, error) {
	if blockSize != 0 && (blockSize < tape.MinBlockSize || blockSize > tape.MaxBlockSize) {
		return nil, fmt.Errorf("memtape: block size %d: want 0 or %d to %d", blockSize, tape.MinBlockSize, tape.MaxBlockSize)
	}
	return &Tape{m: m, blockSize: blockSize}, nil
}

// Relabel erases every tape file and labels the media again, as
// tape.Tape.Relabel does: zero fields of l keep the current label's values,
// the barcode cannot change, Generation counts up. A writer open on the
// media makes it fail with tape.ErrBusy.
func (m *Media) Relabel(l tape.Label) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.label
	if m.writer {
		return fmt.Errorf("memtape: relabel %s: %w", old.Barcode, tape.ErrBusy)
	}
	nl, err := tape.Relabelled(old, l, old.Generation, m.clock())
	if err != nil {
		return fmt.Errorf("memtape: %w", err)
	}
	m.label, m.files = nl, nil
	return nil
}

// used is the bytes of all tape files. Called with m.mu held.
func (m *Media) used() int64 {
	var u int64
	for _, f := range m.files {
		u += int64(len(f.data))
	}
	return u
}

// Tape is a device with a Media loaded. It is safe for concurrent use.
type Tape struct {
	m         *Media
	blockSize int

	mu     sync.Mutex
	w      *writer
	closed bool
}

var _ tape.Device = (*Tape)(nil)

// New formats new media labelled l and loads it: the shortest way to a
// fresh device in a test.
func New(l tape.Label) (*Tape, error) {
	m, err := Format(l, nil)
	if err != nil {
		return nil, err
	}
	return m.Load(0)
}

// Media is the loaded media.
func (t *Tape) Media() *Media { return t.m }

// Label is the media's label.
func (t *Tape) Label() tape.Label { return t.m.Label() }

// Relabel relabels the loaded media (Media.Relabel).
func (t *Tape) Relabel(l tape.Label) error {
	if t.isClosed() {
		return tape.ErrClosed
	}
	return t.m.Relabel(l)
}

func (t *Tape) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Files lists the tape files in order; an incomplete last one is listed
// with tape.FileIncomplete.
func (t *Tape) Files() ([]tape.FileInfo, error) {
	if t.isClosed() {
		return nil, tape.ErrClosed
	}
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]tape.FileInfo, len(m.files))
	for i, f := range m.files {
		out[i] = f.info
		if f.info.Status == tape.FileIncomplete {
			out[i].Bytes = int64(len(f.data))
			out[i].Blocks = blocks(out[i].Bytes, f.info.BlockSize)
		}
	}
	return out, nil
}

// Used is the number of data bytes on the tape, the open writer's included.
func (t *Tape) Used() int64 {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.m.used()
}

// Close releases the device. An open writer is left as a crash leaves it:
// its tape file stays incomplete until the next Append. Later calls fail
// with tape.ErrClosed.
func (t *Tape) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return tape.ErrClosed
	}
	t.closed = true
	if w := t.w; w != nil {
		t.m.mu.Lock()
		w.closed = true
		t.m.writer = false
		t.m.mu.Unlock()
		t.w = nil
	}
	return nil
}

func blocks(n int64, bs int) int64 { return (n + int64(bs) - 1) / int64(bs) }

// Append starts the next tape file, first removing an incomplete last one.
func (t *Tape) Append(tag string) (tape.FileWriter, error) {
	if err := tape.CheckTag(tag); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, tape.ErrClosed
	}
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writer {
		return nil, fmt.Errorf("append to %s: %w", m.label.Barcode, tape.ErrBusy)
	}
	if n := len(m.files); n > 0 && m.files[n-1].info.Status == tape.FileIncomplete {
		m.files = m.files[:n-1]
	}
	bs := cmpOr(t.blockSize, m.label.BlockSize)
	f := &file{info: tape.FileInfo{Number: len(m.files) + 1, Status: tape.FileIncomplete, BlockSize: bs, Tag: tag}}
	m.files = append(m.files, f)
	m.writer = true
	w := &writer{t: t, f: f, base: m.used(), label: m.label}
	t.w = w
	return w, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// writer is a FileWriter on memory. It knows exactly what still fits, so it
// implements tape.Remainer.
type writer struct {
	t     *Tape
	f     *file
	base  int64 // bytes of the tape files before this one
	label tape.Label

	// Guarded by t.m.mu.
	closed bool
	err    error // sticky
	warned bool
}

var (
	_ tape.FileWriter = (*writer)(nil)
	_ tape.Remainer   = (*writer)(nil)
)

func (w *writer) Write(p []byte) (int, error) {
	m := w.t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.closed {
		return 0, tape.ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	used := w.base + int64(len(w.f.data))
	if used+int64(len(p)) > w.label.Capacity {
		w.err = fmt.Errorf("tape %s: tape file %d: %w: %d bytes used of %d, %d more refused",
			w.label.Barcode, w.f.info.Number, tape.ErrEndOfMedia, used, w.label.Capacity, len(p))
		w.warned = true
		return 0, w.err
	}
	w.f.data = append(w.f.data, p...)
	if used+int64(len(p)) >= w.label.EarlyWarning {
		w.warned = true
	}
	return len(p), nil
}

func (w *writer) Written() int64 {
	w.t.m.mu.Lock()
	defer w.t.m.mu.Unlock()
	return int64(len(w.f.data))
}

func (w *writer) Remaining() int64 {
	w.t.m.mu.Lock()
	defer w.t.m.mu.Unlock()
	return w.label.EarlyWarning - w.base - int64(len(w.f.data))
}

func (w *writer) EarlyWarning() bool {
	w.t.m.mu.Lock()
	defer w.t.m.mu.Unlock()
	return w.warned || w.base+int64(len(w.f.data)) >= w.label.EarlyWarning
}

// end closes the writer; keep says whether its tape file stays. Called
// with t.mu held.
func (w *writer) end(keep bool) {
	m := w.t.m
	w.closed = true
	m.writer = false
	if !keep {
		if i := slices.Index(m.files, w.f); i >= 0 {
			m.files = slices.Delete(m.files, i, i+1)
		}
	}
	if w.t.w == w {
		w.t.w = nil
	}
}

// Finish writes the filemark. After a write error (tape.ErrEndOfMedia) it
// removes the tape file and returns that error.
func (w *writer) Finish() (tape.FileInfo, error) {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	m := w.t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.closed {
		return tape.FileInfo{}, tape.ErrClosed
	}
	if w.err != nil {
		w.end(false)
		return tape.FileInfo{}, w.err
	}
	bs := w.f.info.BlockSize
	var table []byte
	for p := w.f.data; len(p) > 0; p = p[min(bs, len(p)):] {
		table = binary.LittleEndian.AppendUint32(table, crc32.Checksum(p[:min(bs, len(p))], castagnoli))
	}
	w.f.data = bytes.Clone(w.f.data) // no spare capacity shared with later appends
	w.f.info.Status = tape.FileComplete
	w.f.info.Bytes = int64(len(w.f.data))
	w.f.info.Blocks = blocks(w.f.info.Bytes, bs)
	w.f.info.CRCTable = crc32.Checksum(table, castagnoli)
	w.f.info.Written = m.clock().UTC()
	w.end(true)
	return w.f.info, nil
}

// Abort removes the unfinished tape file.
func (w *writer) Abort() error {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	m := w.t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.closed {
		return tape.ErrClosed
	}
	w.end(false)
	return nil
}

// Open opens tape file n for reading.
func (t *Tape) Open(n int) (tape.FileReader, error) {
	if t.isClosed() {
		return nil, tape.ErrClosed
	}
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if n < 1 || n > len(m.files) {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", m.label.Barcode, n, tape.ErrNoSuchFile)
	}
	f := m.files[n-1]
	if f.info.Status != tape.FileComplete {
		return nil, fmt.Errorf("tape %s: tape file %d: %w", m.label.Barcode, n, tape.ErrIncomplete)
	}
	return &reader{info: f.info, r: bytes.NewReader(f.data)}, nil
}

type reader struct {
	info   tape.FileInfo
	r      *bytes.Reader
	closed bool
}

func (r *reader) Info() tape.FileInfo { return r.info }

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	return r.r.Read(p)
}

func (r *reader) Seek(off int64, whence int) (int64, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	return r.r.Seek(off, whence)
}

func (r *reader) Close() error {
	if r.closed {
		return tape.ErrClosed
	}
	r.closed = true
	return nil
}

// Shelf holds media by barcode: a memory library's tapes. Its methods are
// safe for concurrent use.
type Shelf struct {
	mu    sync.Mutex
	media map[string]*Media
	clock func() time.Time
}

// NewShelf returns an empty shelf; clock stamps labels and tape files (nil
// means time.Now).
func NewShelf(clock func() time.Time) *Shelf {
	return &Shelf{media: map[string]*Media{}, clock: clock}
}

// ErrExists: Format was asked for a barcode the shelf already holds.
var ErrExists = errors.New("memtape: barcode already on the shelf")

// Format puts new media labelled l on the shelf.
func (s *Shelf) Format(l tape.Label) (*Media, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.media[l.Barcode]; ok {
		return nil, fmt.Errorf("format %s: %w", l.Barcode, ErrExists)
	}
	m, err := Format(l, s.clock)
	if err != nil {
		return nil, err
	}
	s.media[l.Barcode] = m
	return m, nil
}

// Media returns the media with barcode bc; tape.ErrBlank when the shelf has
// none (nothing was ever labelled under that barcode).
func (s *Shelf) Media(bc string) (*Media, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.media[bc]
	if !ok {
		return nil, fmt.Errorf("memtape: tape %s: %w", bc, tape.ErrBlank)
	}
	return m, nil
}

// Remove takes media off the shelf.
func (s *Shelf) Remove(bc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.media, bc)
}

// Barcodes lists the shelf's barcodes in order.
func (s *Shelf) Barcodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.media))
	for bc := range s.media {
		out = append(out, bc)
	}
	sort.Strings(out)
	return out
}

var _ io.ReadSeekCloser = (*reader)(nil)
