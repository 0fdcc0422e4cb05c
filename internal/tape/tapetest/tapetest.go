// Package tapetest is the conformance suite every tape.Device passes.
package tapetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
)

// Reopener is a device that can be opened again from its media, as after a
// restart. Devices that implement it are also checked for durability.
type Reopener interface {
	tape.Device
	Reopen(t *testing.T) tape.Device
}

// LabelDamager is a device that can damage one copy of its label on its
// media (one bit). Devices that implement it are checked to stay readable:
// same label, same tape files, and the reopened device reports the damage
// (a LabelDamage() error method wrapping tape.ErrBadLabel).
type LabelDamager interface {
	Reopener
	DamageLabel(t *testing.T)
}

// OneHead is a device with a single head (a physical tape drive): it
// cannot read one tape file while it writes another, and answers an Open
// during a write with tape.ErrBusy instead. The suite checks that in place
// of reading while writing.
type OneHead interface {
	OneHead() bool
}

// Run runs the suite. open returns a fresh, empty device each time it is
// called; its capacity must be between 1 MiB and 64 MiB, and its block size
// (Label().BlockSize) the one its writers use.
func Run(t *testing.T, open func(t *testing.T) tape.Device) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open(t)) })
	t.Run("Seek", func(t *testing.T) { testSeek(t, open(t)) })
	t.Run("Files", func(t *testing.T) { testFiles(t, open(t)) })
	t.Run("Capacity", func(t *testing.T) { testCapacity(t, open(t)) })
	t.Run("OneWriter", func(t *testing.T) { testOneWriter(t, open(t)) })
	t.Run("Abort", func(t *testing.T) { testAbort(t, open(t)) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, open(t)) })
	t.Run("NoSuchFile", func(t *testing.T) { testNoSuchFile(t, open(t)) })
	t.Run("ReadWhileWriting", func(t *testing.T) { testReadWhileWriting(t, open(t)) })
	t.Run("Durable", func(t *testing.T) {
		d := open(t)
		r, ok := d.(Reopener)
		if !ok {
			t.Skip("device cannot be reopened from its media")
		}
		testDurable(t, r)
	})
	t.Run("DamagedLabel", func(t *testing.T) {
		d := open(t)
		r, ok := d.(LabelDamager)
		if !ok {
			t.Skip("device cannot damage its label")
		}
		testDamagedLabel(t, r)
	})
}

// Payload returns n deterministic pseudo-random bytes for seed.
func Payload(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, n64(n)))
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func n64(n int) uint64 { return uint64(n) }

// WriteFile appends one tape file holding data, written in chunks of chunk
// bytes (all at once if chunk ≤ 0), and finishes it.
func WriteFile(t testing.TB, d tape.Device, tag string, data []byte, chunk int) tape.FileInfo {
	t.Helper()
	w, err := d.Append(tag)
	if err != nil {
		t.Fatalf("Append(%q): %v", tag, err)
	}
	if chunk <= 0 {
		chunk = max(len(data), 1)
	}
	for p := data; len(p) > 0; {
		n := min(chunk, len(p))
		m, err := w.Write(p[:n])
		if err != nil || m != n {
			w.Abort()
			t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
		}
		p = p[n:]
	}
	if got := w.Written(); got != int64(len(data)) {
		t.Errorf("Written() = %d, want %d", got, len(data))
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if info.Bytes != int64(len(data)) || info.Tag != tag || info.Status != tape.FileComplete {
		t.Fatalf("Finish info = %+v, want %d bytes, tag %q, complete", info, len(data), tag)
	}
	return info
}

// ReadFile reads tape file n whole.
func ReadFile(t testing.TB, d tape.Device, n int) []byte {
	t.Helper()
	r, err := d.Open(n)
	if err != nil {
		t.Fatalf("Open(%d): %v", n, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read tape file %d: %v", n, err)
	}
	return b
}

func testRoundTrip(t *testing.T, d tape.Device) {
	bs := d.Label().BlockSize
	sizes := []int{0, 1, 7, bs - 1, bs, bs + 1, 2 * bs, 3*bs + 5, 12345, 5*bs - 3}
	var total int64
	for i, n := range sizes {
		total += int64(n)
		if total > d.Label().Capacity {
			break
		}
		data := Payload(uint64(i), n)
		chunk := []int{0, 1000, bs, 3}[i%4]
		if chunk == 3 && n > 4096 {
			chunk = 4097
		}
		info := WriteFile(t, d, fmt.Sprintf("size %d", n), data, chunk)
		if info.Number != i+1 {
			t.Errorf("size %d: tape file number %d, want %d", n, info.Number, i+1)
		}
		got := ReadFile(t, d, info.Number)
		if !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back %d bytes that differ from the %d written", n, len(got), len(data))
		}
	}
	if d.Used() != total {
		t.Errorf("Used() = %d, want %d", d.Used(), total)
	}
}

func testSeek(t *testing.T, d tape.Device) {
	bs := d.Label().BlockSize
	n := 7*bs + 123
	data := Payload(42, n)
	WriteFile(t, d, "seek", data, 0)
	r, err := d.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := []int{0, 1, bs - 1, bs, bs + 1, 3 * bs, n - 1, n}
	for range 30 {
		offsets = append(offsets, rng.IntN(n+1))
	}
	for _, off := range offsets {
		if pos, err := r.Seek(int64(off), io.SeekStart); err != nil || pos != int64(off) {
			t.Fatalf("Seek(%d) = %d, %v", off, pos, err)
		}
		l := min(rng.IntN(2*bs+1), n-off)
		buf := make([]byte, l)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatalf("read %d bytes at %d: %v", l, off, err)
		}
		if !bytes.Equal(buf, data[off:off+l]) {
			t.Fatalf("read %d bytes at %d: wrong data", l, off)
		}
	}
	// Relative seeks.
	if pos, err := r.Seek(-10, io.SeekEnd); err != nil || pos != int64(n-10) {
		t.Fatalf("Seek(-10, End) = %d, %v", pos, err)
	}
	if pos, err := r.Seek(-5, io.SeekCurrent); err != nil || pos != int64(n-15) {
		t.Fatalf("Seek(-5, Current) = %d, %v", pos, err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, data[n-15:]) {
		t.Fatalf("read after relative seeks: %d bytes, %v", len(rest), err)
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Error("Seek(-1) succeeded")
	}
	if _, err := r.Seek(int64(n+100), io.SeekStart); err != nil {
		t.Fatalf("seek past end: %v", err)
	}
	if m, err := r.Read(make([]byte, 10)); m != 0 || err != io.EOF {
		t.Errorf("Read past end = %d, %v; want 0, io.EOF", m, err)
	}
}

func testFiles(t *testing.T, d tape.Device) {
	bs := d.Label().BlockSize
	sizes := []int{bs, 0, 3*bs + 1, 10}
	for i, n := range sizes {
		WriteFile(t, d, fmt.Sprintf("file %d", i+1), Payload(uint64(i), n), 0)
	}
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(sizes) {
		t.Fatalf("Files() has %d tape files, want %d", len(files), len(sizes))
	}
	var used int64
	for i, f := range files {
		n := int64(sizes[i])
		used += n
		wantBlocks := (n + int64(f.BlockSize) - 1) / int64(f.BlockSize)
		if f.Number != i+1 || f.Status != tape.FileComplete || f.Bytes != n ||
			f.Tag != fmt.Sprintf("file %d", i+1) || f.BlockSize != bs || f.Blocks != wantBlocks {
			t.Errorf("Files()[%d] = %+v", i, f)
		}
		if f.Written.IsZero() {
			t.Errorf("tape file %d: no written time", f.Number)
		}
	}
	if d.Used() != used {
		t.Errorf("Used() = %d, want %d", d.Used(), used)
	}
}

func testCapacity(t *testing.T, d tape.Device) {
	l := d.Label()
	first := Payload(1, int(l.Capacity/3))
	WriteFile(t, d, "first", first, 0)

	// Overshooting fails with ErrEndOfMedia; the failed Finish removes the
	// unfinished file and gives its bytes back.
	w, err := d.Append("too big")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := w.(tape.Remainer); ok {
		if want := l.EarlyWarning - int64(len(first)); r.Remaining() != want {
			t.Errorf("Remaining() = %d, want %d", r.Remaining(), want)
		}
	}
	if w.EarlyWarning() {
		t.Errorf("EarlyWarning() before anything was written past the first third")
	}
	chunk := make([]byte, 64<<10)
	var werr error
	sawWarning := false
	for werr == nil {
		_, werr = w.Write(chunk)
		if w.EarlyWarning() {
			sawWarning = true
		} else if sawWarning {
			t.Fatalf("EarlyWarning() went back to false: it must be sticky")
		}
	}
	if !sawWarning || !w.EarlyWarning() {
		t.Errorf("the tape filled up without an early warning")
	}
	if !errors.Is(werr, tape.ErrEndOfMedia) {
		t.Fatalf("writing past capacity: %v, want ErrEndOfMedia", werr)
	}
	if d.Used() > l.Capacity {
		t.Errorf("Used() = %d past capacity %d", d.Used(), l.Capacity)
	}
	if _, err := w.Write([]byte{1}); !errors.Is(err, tape.ErrEndOfMedia) {
		t.Errorf("Write after ErrEndOfMedia: %v, want the sticky ErrEndOfMedia", err)
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrEndOfMedia) {
		t.Errorf("Finish after ErrEndOfMedia: %v", err)
	}
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || d.Used() != int64(len(first)) {
		t.Fatalf("after a failed Finish Files() = %+v, Used() = %d: want only the first, %d bytes", files, d.Used(), len(first))
	}
	if _, err := d.Open(2); !errors.Is(err, tape.ErrNoSuchFile) {
		t.Errorf("Open(removed) = %v, want ErrNoSuchFile", err)
	}
	if got := ReadFile(t, d, 1); !bytes.Equal(got, first) {
		t.Fatal("tape file 1 damaged by the failed write")
	}

	// Filling to exactly the capacity works; one byte more does not.
	rest := Payload(2, int(l.Capacity)-len(first))
	info := WriteFile(t, d, "rest", rest, 100000)
	if info.Number != 2 {
		t.Errorf("file after truncation got number %d, want 2", info.Number)
	}
	if d.Used() != l.Capacity {
		t.Errorf("Used() = %d, want capacity %d", d.Used(), l.Capacity)
	}
	w, err = d.Append("nothing fits")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := w.(tape.Remainer); ok && r.Remaining() > 0 {
		t.Errorf("Remaining() = %d on a full tape", r.Remaining())
	}
	if n, err := w.Write([]byte{1}); n != 0 || !errors.Is(err, tape.ErrEndOfMedia) {
		t.Errorf("Write on a full tape = %d, %v", n, err)
	}
	w.Abort()
	if got := ReadFile(t, d, 2); !bytes.Equal(got, rest) {
		t.Fatal("tape file 2 wrong")
	}
}

func testOneWriter(t *testing.T, d tape.Device) {
	w, err := d.Append("one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Append("two"); !errors.Is(err, tape.ErrBusy) {
		t.Fatalf("second Append = %v, want ErrBusy", err)
	}
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, d, "two", []byte("world"), 0)
	if got := ReadFile(t, d, 2); string(got) != "world" {
		t.Fatalf("tape file 2 = %q", got)
	}
}

func testAbort(t *testing.T, d tape.Device) {
	bs := d.Label().BlockSize
	first := Payload(3, 2*bs+3)
	WriteFile(t, d, "kept", first, 0)
	w, err := d.Append("aborted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(Payload(4, 3*bs)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || d.Used() != int64(len(first)) {
		t.Fatalf("after Abort Files() = %+v, Used() = %d: the aborted file's bytes are still there", files, d.Used())
	}
	second := Payload(5, bs/2)
	info := WriteFile(t, d, "next", second, 0)
	if info.Number != 2 {
		t.Errorf("Append after Abort made tape file %d, want 2 (the aborted one removed)", info.Number)
	}
	files, err = d.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Status != tape.FileComplete {
			t.Errorf("tape file %d is %s", f.Number, f.Status)
		}
	}
	if !bytes.Equal(ReadFile(t, d, 1), first) || !bytes.Equal(ReadFile(t, d, 2), second) {
		t.Fatal("tape files wrong after Abort and Append")
	}
	if d.Used() != int64(len(first)+len(second)) {
		t.Errorf("Used() = %d, want %d", d.Used(), len(first)+len(second))
	}
}

func testClosed(t *testing.T, d tape.Device) {
	w, err := d.Append("x")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("d")); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Write after Finish = %v", err)
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Finish after Finish = %v", err)
	}
	if err := w.Abort(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Abort after Finish = %v", err)
	}
	w, err = d.Append("y")
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := w.Write([]byte("d")); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Write after Abort = %v", err)
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Finish after Abort = %v", err)
	}
	r, err := d.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Read after Close = %v", err)
	}
}

func testNoSuchFile(t *testing.T, d tape.Device) {
	for _, n := range []int{-1, 0, 1, 2} {
		if _, err := d.Open(n); !errors.Is(err, tape.ErrNoSuchFile) {
			t.Errorf("Open(%d) on an empty tape = %v, want ErrNoSuchFile", n, err)
		}
	}
	WriteFile(t, d, "", []byte("x"), 0)
	if _, err := d.Open(2); !errors.Is(err, tape.ErrNoSuchFile) {
		t.Errorf("Open(2) = %v, want ErrNoSuchFile", err)
	}
	if files, err := d.Files(); err != nil || len(files) != 1 {
		t.Errorf("Files() = %v, %v", files, err)
	}
}

func testReadWhileWriting(t *testing.T, d tape.Device) {
	bs := d.Label().BlockSize
	first := Payload(6, 4*bs+1)
	WriteFile(t, d, "first", first, 0)
	w, err := d.Append("second")
	if err != nil {
		t.Fatal(err)
	}
	if oh, ok := d.(OneHead); ok && oh.OneHead() {
		if _, err := w.Write(Payload(7, 2*bs)); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Open(1); !errors.Is(err, tape.ErrBusy) {
			t.Errorf("Open(1) while tape file 2 is written on a one-head device = %v, want ErrBusy", err)
		}
		if _, err := d.Open(2); !errors.Is(err, tape.ErrIncomplete) {
			t.Errorf("Open of the file being written = %v, want ErrIncomplete", err)
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ReadFile(t, d, 1), first) || !bytes.Equal(ReadFile(t, d, 2), Payload(7, 2*bs)) {
			t.Fatal("tape files wrong after a write that a read waited for")
		}
		return
	}
	done := make(chan error)
	go func() {
		for range 3 {
			r, err := d.Open(1)
			if err != nil {
				done <- err
				return
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err == nil && !bytes.Equal(b, first) {
				err = errors.New("tape file 1 differs while tape file 2 is written")
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	second := Payload(7, 6*bs)
	for p := second; len(p) > 0; p = p[min(len(p), 1000):] {
		if _, err := w.Write(p[:min(len(p), 1000)]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Open(2); !errors.Is(err, tape.ErrIncomplete) {
		t.Errorf("Open of the file being written = %v, want ErrIncomplete", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ReadFile(t, d, 2), second) {
		t.Fatal("tape file 2 wrong")
	}
}

func testDurable(t *testing.T, d Reopener) {
	bs := d.Label().BlockSize
	var want [][]byte
	for i, n := range []int{bs * 3, 1, 0, bs + 17} {
		data := Payload(uint64(100+i), n)
		WriteFile(t, d, fmt.Sprintf("durable %d", i), data, 0)
		want = append(want, data)
	}
	before, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	d2 := d.Reopen(t)
	if d2.Label() != d.Label() {
		t.Errorf("label after reopen = %+v, want %+v", d2.Label(), d.Label())
	}
	after, err := d2.Files()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("Files() after reopen:\n%v\nwant\n%v", after, before)
	}
	if d2.Used() != d.Used() {
		t.Errorf("Used() after reopen = %d, want %d", d2.Used(), d.Used())
	}
	for i, data := range want {
		if !bytes.Equal(ReadFile(t, d2, i+1), data) {
			t.Errorf("tape file %d differs after reopen", i+1)
		}
	}
}

func testDamagedLabel(t *testing.T, d LabelDamager) {
	bs := d.Label().BlockSize
	data := Payload(200, 2*bs+5)
	WriteFile(t, d, "before the damage", data, 0)
	d.DamageLabel(t)
	d2 := d.Reopen(t)
	if d2.Label() != d.Label() {
		t.Errorf("label with one copy damaged = %+v, want %+v", d2.Label(), d.Label())
	}
	if ld, ok := d2.(interface{ LabelDamage() error }); !ok || !errors.Is(ld.LabelDamage(), tape.ErrBadLabel) {
		t.Errorf("the reopened device does not report the damaged label as ErrBadLabel")
	}
	if !bytes.Equal(ReadFile(t, d2, 1), data) {
		t.Error("tape file 1 differs with the label damaged")
	}
}
