package tapetest

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/faultdev"
)

// RunFaults runs the suite through the fault wrapper (package faultdev)
// with no faults, and as a drive that only signals early warning; then it
// injects each fault the wrapper knows into a device open returns and
// checks what the contract promises: the error is told apart (errors.Is),
// the failed tape file is gone, and the tape files written before it read
// back byte for byte. open is as for Run.
func RunFaults(t *testing.T, open func(t *testing.T) tape.Device) {
	t.Run("NoFaults", func(t *testing.T) {
		Run(t, func(t *testing.T) tape.Device { return faultdev.New(open(t)) })
	})
	t.Run("EarlyWarningOnly", func(t *testing.T) {
		Run(t, func(t *testing.T) tape.Device { return faultdev.New(open(t)).EarlyWarningOnly() })
	})
	t.Run("WriteError", func(t *testing.T) { testWriteFault(t, open(t), false) })
	t.Run("ShortWrite", func(t *testing.T) { testWriteFault(t, open(t), true) })
	t.Run("EndOfMediaEarly", func(t *testing.T) { testEarlyEnd(t, open(t)) })
	t.Run("FinishFails", func(t *testing.T) { testFinishFault(t, open(t)) })
	t.Run("AppendFails", func(t *testing.T) { testAppendFault(t, open(t)) })
	t.Run("ReadError", func(t *testing.T) { testReadFault(t, open(t), faultdev.Read) })
	t.Run("CorruptBlock", func(t *testing.T) { testReadFault(t, open(t), faultdev.Corrupt) })
}

// checkOnly checks that d holds exactly the tape files want, complete.
func checkOnly(t *testing.T, d tape.Device, want ...[]byte) {
	t.Helper()
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	for _, w := range want {
		used += int64(len(w))
	}
	if len(files) != len(want) || d.Used() != used {
		t.Fatalf("Files() = %+v, Used() = %d: want %d complete tape files, %d bytes", files, d.Used(), len(want), used)
	}
	for i, w := range want {
		if files[i].Status != tape.FileComplete {
			t.Errorf("tape file %d is %s", i+1, files[i].Status)
		}
		if !bytes.Equal(ReadFile(t, d, i+1), w) {
			t.Errorf("tape file %d does not read back", i+1)
		}
	}
}

func testWriteFault(t *testing.T, inner tape.Device, short bool) {
	bs := inner.Label().BlockSize
	first := Payload(1, 2*bs+7)
	at := int64(3*bs + 100)
	d := faultdev.New(inner, faultdev.Rule{Op: faultdev.Write, Tag: "doomed", AfterBytes: at, Short: short, Err: syscall.EIO})
	WriteFile(t, d, "first", first, 0)
	w, err := d.Append("doomed")
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	var total int64
	for werr == nil {
		var n int
		n, werr = w.Write(make([]byte, 1000))
		total += int64(n)
	}
	if !errors.Is(werr, syscall.EIO) {
		t.Fatalf("write past the fault: %v, want EIO", werr)
	}
	if want := at / 1000 * 1000; short {
		want = at
		if total != want || w.Written() != want {
			t.Errorf("short write accepted %d bytes (Written %d), want %d", total, w.Written(), want)
		}
	} else if total != want {
		t.Errorf("accepted %d bytes before the fault, want %d", total, want)
	}
	if _, err := w.Write([]byte{1}); !errors.Is(err, syscall.EIO) {
		t.Errorf("Write after the fault: %v, want the sticky EIO", err)
	}
	if _, err := w.Finish(); !errors.Is(err, syscall.EIO) {
		t.Errorf("Finish after the fault: %v, want EIO", err)
	}
	if d.Injected() == 0 {
		t.Error("no fault counted")
	}
	checkOnly(t, d, first)
	second := Payload(2, bs+1)
	if info := WriteFile(t, d, "second", second, 0); info.Number != 2 {
		t.Errorf("the tape file after the failed one is number %d, want 2", info.Number)
	}
	checkOnly(t, d, first, second)
}

func testEarlyEnd(t *testing.T, inner tape.Device) {
	bs := inner.Label().BlockSize
	first := Payload(3, bs+5)
	end := int64(len(first)) + int64(4*bs)
	d := faultdev.New(inner, faultdev.Rule{Op: faultdev.EndOfMedia, AfterBytes: end})
	WriteFile(t, d, "first", first, 0)
	w, err := d.Append("second")
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for werr == nil {
		_, werr = w.Write(make([]byte, 777))
	}
	if !errors.Is(werr, tape.ErrEndOfMedia) {
		t.Fatalf("writing to the early end: %v, want ErrEndOfMedia", werr)
	}
	if !w.EarlyWarning() {
		t.Error("EarlyWarning() false after the end of the media")
	}
	if d.Used() > end {
		t.Errorf("Used() = %d past the early end %d", d.Used(), end)
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrEndOfMedia) {
		t.Errorf("Finish after the end: %v, want ErrEndOfMedia", err)
	}
	checkOnly(t, d, first)
}

func testFinishFault(t *testing.T, inner tape.Device) {
	bs := inner.Label().BlockSize
	first := Payload(4, 3*bs)
	d := faultdev.New(inner, faultdev.Rule{Op: faultdev.Finish, Nth: 2})
	WriteFile(t, d, "first", first, 0)
	w, err := d.Append("second")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(Payload(5, 2*bs)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); !errors.Is(err, faultdev.ErrInjected) {
		t.Fatalf("Finish = %v, want the injected fault", err)
	}
	if _, err := w.Finish(); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Finish after a failed Finish = %v, want ErrClosed", err)
	}
	checkOnly(t, d, first)
	third := Payload(6, 10)
	WriteFile(t, d, "third", third, 0)
	checkOnly(t, d, first, third)
}

func testAppendFault(t *testing.T, inner tape.Device) {
	d := faultdev.New(inner, faultdev.Rule{Op: faultdev.Append, Nth: 1, Err: syscall.EIO})
	if _, err := d.Append("refused"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append = %v, want EIO", err)
	}
	data := Payload(7, 100)
	WriteFile(t, d, "accepted", data, 0)
	checkOnly(t, d, data)
}

func testReadFault(t *testing.T, inner tape.Device, op faultdev.Op) {
	bs := inner.Label().BlockSize
	data := Payload(8, 5*bs+9)
	at := int64(2*bs + 10)
	d := faultdev.New(inner, faultdev.Rule{Op: op, File: 1, AfterBytes: at})
	WriteFile(t, d, "read me", data, 0)
	r, err := d.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	good := at // the bytes that read before the fault
	if op == faultdev.Corrupt {
		good = at / int64(bs) * int64(bs)
		var ce *tape.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, tape.ErrCorrupt) || ce.File != 1 || ce.Block != at/int64(bs) {
			t.Fatalf("reading into the corrupt block: %v, want a CorruptError for tape file 1 block %d", err, at/int64(bs))
		}
	} else if !errors.Is(err, faultdev.ErrInjected) {
		t.Fatalf("reading into the fault: %v, want the injected fault", err)
	}
	if !bytes.Equal(got, data[:good]) {
		t.Errorf("read %d bytes before the fault, want the first %d", len(got), good)
	}
	// Past the fault the file reads again; the others are not touched.
	skip := int64(4 * bs)
	if _, err := r.Seek(skip, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if op == faultdev.Corrupt {
		rest, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(rest, data[skip:]) {
			t.Errorf("reading past the corrupt block: %d bytes, %v", len(rest), err)
		}
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, bs)
	if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head, data[:bs]) {
		t.Errorf("re-reading the first block after a seek back: %v", err)
	}
}
