// Package faultdev wraps any tape.Device and injects the failures a drive
// can meet, the way package faultfs does for a folder's files: a write
// error after a number of bytes, the end of the media earlier than the
// label says, a failing Finish, a failing Append, and a read error or a
// corrupt block at an offset of a tape file. The same fault tests thereby
// run against every implementation (folder, memory, object store, drive).
//
// With no rules a wrapped device behaves exactly as the one it wraps
// (tapetest passes through it), except that it offers no optional
// capability but tape.Remainer (and that only while the wrapped writer
// has it and EarlyWarningOnly is off): a DataPath would bypass the faults.
package faultdev

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kura-backup/kura/internal/tape"
)

// ErrInjected is the error a rule returns when it names none.
var ErrInjected = errors.New("faultdev: injected fault")

// Op is the operation a Rule fails.
type Op int

const (
	// Write fails the writes of a matching writer once its tape file would
	// pass AfterBytes bytes; with Short the bytes up to AfterBytes are
	// accepted first. The error sticks, and the Finish that follows fails
	// with it and aborts the tape file.
	Write Op = iota
	// EndOfMedia ends the tape early: a matching writer's writes fail with
	// tape.ErrEndOfMedia once the tape (Used before the Append plus the
	// tape file) would pass AfterBytes bytes, and EarlyWarning turns true
	// only then — a tape that ends without warning.
	EndOfMedia
	// Finish fails a matching writer's Finish; the tape file is aborted.
	Finish
	// Append fails a matching Append before anything is written.
	Append
	// Read fails reads of tape file File at byte offset AfterBytes and
	// past it.
	Read
	// Corrupt makes the block of tape file File that holds byte offset
	// AfterBytes fail its check: reads reaching it return a
	// *tape.CorruptError wrapping tape.ErrCorrupt.
	Corrupt
)

// Rule says what to fail and when.
type Rule struct {
	Op Op
	// Tag selects writers whose tag contains it ("" = every writer).
	Tag string
	// Nth selects only the Nth matching Append (1-based; 0 = every one).
	Nth int
	// File is the tape file a Read or Corrupt rule applies to (1-based).
	File int
	// AfterBytes is the byte offset where the fault starts.
	AfterBytes int64
	// Short lets a Write rule accept the bytes up to AfterBytes before it
	// fails.
	Short bool
	// Err is the error returned (wrapped with where it happened); nil means
	// ErrInjected. EndOfMedia and Corrupt always use their sentinels.
	Err error
}

func (r Rule) err() error {
	if r.Err != nil {
		return r.Err
	}
	return ErrInjected
}

// Device is a tape.Device with faults.
type Device struct {
	inner tape.Device
	ewo   bool

	mu       sync.Mutex
	rules    []Rule
	appends  []int // per rule: matching Appends so far
	injected int
}

var _ tape.Device = (*Device)(nil)

// New wraps inner with rules.
func New(inner tape.Device, rules ...Rule) *Device {
	return &Device{inner: inner, rules: rules, appends: make([]int, len(rules))}
}

// EarlyWarningOnly makes the device's writers hide tape.Remainer, like a
// physical drive that only signals early warning. It returns d.
func (d *Device) EarlyWarningOnly() *Device {
	d.ewo = true
	return d
}

// Inner is the wrapped device.
func (d *Device) Inner() tape.Device { return d.inner }

// Injected is the number of faults injected so far.
func (d *Device) Injected() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.injected
}

func (d *Device) count() {
	d.mu.Lock()
	d.injected++
	d.mu.Unlock()
}

func (d *Device) Label() tape.Label               { return d.inner.Label() }
func (d *Device) Files() ([]tape.FileInfo, error) { return d.inner.Files() }
func (d *Device) Used() int64                     { return d.inner.Used() }
func (d *Device) Close() error                    { return d.inner.Close() }
func (d *Device) where() string                   { return "tape " + d.inner.Label().Barcode }
func (d *Device) String() string                  { return "faultdev(" + d.where() + ")" }
func (d *Device) readRules(n int) (rs []Rule) {
	return d.matching(func(r Rule) bool { return (r.Op == Read || r.Op == Corrupt) && r.File == n })
}
func (d *Device) matching(f func(Rule) bool) []Rule { return filter(d.rules, f) }

func filter(rules []Rule, f func(Rule) bool) []Rule {
	var out []Rule
	for _, r := range rules {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

// Append starts a tape file on the wrapped device, with the write rules
// that match tag (and this Append, for Nth rules).
func (d *Device) Append(tag string) (tape.FileWriter, error) {
	d.mu.Lock()
	var active []Rule
	for i, r := range d.rules {
		if r.Op > Append || !strings.Contains(tag, r.Tag) {
			continue
		}
		d.appends[i]++
		if r.Nth == 0 || d.appends[i] == r.Nth {
			active = append(active, r)
		}
	}
	d.mu.Unlock()
	for _, r := range active {
		if r.Op == Append {
			d.count()
			return nil, fmt.Errorf("append to %s: %w", d.where(), r.err())
		}
	}
	base := d.inner.Used()
	fw, err := d.inner.Append(tag)
	if err != nil {
		return nil, err
	}
	w := &writer{d: d, fw: fw, base: base, rules: active}
	if rem, ok := fw.(tape.Remainer); ok && !d.ewo {
		return &remainingWriter{writer: w, rem: rem}, nil
	}
	return w, nil
}

// writer is a FileWriter with the write rules of its Append.
type writer struct {
	d     *Device
	fw    tape.FileWriter
	base  int64 // the tape's bytes before this tape file
	rules []Rule

	mu     sync.Mutex
	err    error // sticky injected error
	warned bool  // an injected end of media
	closed bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, tape.ErrClosed
	}
	if w.err != nil {
		w.mu.Unlock()
		return 0, w.err
	}
	written := w.fw.Written()
	accept, fail := len(p), error(nil)
	for _, r := range w.rules {
		switch r.Op {
		case Write:
			if written+int64(len(p)) > r.AfterBytes {
				fail = fmt.Errorf("%s: write at byte %d of the tape file: %w", w.d.where(), r.AfterBytes, r.err())
				accept = 0
				if r.Short {
					accept = int(max(0, r.AfterBytes-written))
				}
			}
		case EndOfMedia:
			if used := w.base + written; used+int64(len(p)) > r.AfterBytes {
				fail = fmt.Errorf("%s: %w: the tape ended early, at %d bytes (%d used, %d more refused)",
					w.d.where(), tape.ErrEndOfMedia, r.AfterBytes, used, len(p))
				accept = 0
				w.warned = true
			}
		}
		if fail != nil {
			break
		}
	}
	w.mu.Unlock()
	n, err := 0, error(nil)
	if accept > 0 {
		n, err = w.fw.Write(p[:accept])
	}
	if err != nil || fail == nil {
		return n, err
	}
	w.d.count()
	w.mu.Lock()
	w.err = fail
	w.mu.Unlock()
	return n, fail
}

func (w *writer) Written() int64 { return w.fw.Written() }

func (w *writer) EarlyWarning() bool {
	w.mu.Lock()
	warned := w.warned
	w.mu.Unlock()
	return warned || w.fw.EarlyWarning()
}

func (w *writer) Finish() (tape.FileInfo, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return tape.FileInfo{}, tape.ErrClosed
	}
	w.closed = true
	err := w.err
	w.mu.Unlock()
	if err == nil {
		for _, r := range w.rules {
			if r.Op == Finish {
				w.d.count()
				err = fmt.Errorf("%s: finish: %w", w.d.where(), r.err())
				break
			}
		}
	}
	if err != nil {
		if aerr := w.fw.Abort(); aerr != nil && !errors.Is(aerr, tape.ErrClosed) {
			return tape.FileInfo{}, errors.Join(err, aerr)
		}
		return tape.FileInfo{}, err
	}
	return w.fw.Finish()
}

func (w *writer) Abort() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return tape.ErrClosed
	}
	w.closed = true
	w.mu.Unlock()
	return w.fw.Abort()
}

// remainingWriter passes on the wrapped writer's Remainer.
type remainingWriter struct {
	*writer
	rem tape.Remainer
}

func (w *remainingWriter) Remaining() int64 { return w.rem.Remaining() }

var (
	_ tape.FileWriter = (*writer)(nil)
	_ tape.Remainer   = (*remainingWriter)(nil)
)

// Open opens tape file n of the wrapped device, with the read rules for n.
func (d *Device) Open(n int) (tape.FileReader, error) {
	fr, err := d.inner.Open(n)
	if err != nil {
		return nil, err
	}
	rules := d.readRules(n)
	if len(rules) == 0 {
		return fr, nil
	}
	return &reader{d: d, fr: fr, n: n, rules: rules}, nil
}

// reader is a FileReader that fails at the offsets its rules name.
type reader struct {
	d     *Device
	fr    tape.FileReader
	n     int
	pos   int64
	rules []Rule
}

func (r *reader) Info() tape.FileInfo { return r.fr.Info() }
func (r *reader) Close() error        { return r.fr.Close() }

// fault returns the first fault at or after pos: its offset and error.
func (r *reader) fault() (int64, error) {
	off, ferr := int64(-1), error(nil)
	for _, ru := range r.rules {
		at := ru.AfterBytes
		var err error
		if ru.Op == Corrupt {
			info := r.fr.Info()
			bs := int64(max(info.BlockSize, 1))
			block := at / bs
			at = block * bs
			err = &tape.CorruptError{Library: r.d.inner.Label().Library, Barcode: r.d.inner.Label().Barcode,
				File: r.n, Block: block, Err: tape.ErrCorrupt}
			if r.pos >= at+bs {
				continue // read past the block
			}
		} else {
			err = fmt.Errorf("%s: tape file %d: read at byte %d: %w", r.d.where(), r.n, at, ru.err())
		}
		if off < 0 || at < off {
			off, ferr = at, err
		}
	}
	return off, ferr
}

func (r *reader) Read(p []byte) (int, error) {
	off, ferr := r.fault()
	if ferr != nil && off >= 0 {
		if r.pos >= off {
			r.d.count()
			// The read that reaches a fault returns nothing of the block,
			// as a device that checks blocks as they enter does.
			return 0, ferr
		}
		if lim := off - r.pos; int64(len(p)) > lim {
			p = p[:lim]
		}
	}
	n, err := r.fr.Read(p)
	r.pos += int64(n)
	return n, err
}

func (r *reader) Seek(offset int64, whence int) (int64, error) {
	pos, err := r.fr.Seek(offset, whence)
	if err == nil {
		r.pos = pos
	}
	return pos, err
}

var _ io.ReadSeekCloser = (*reader)(nil)
