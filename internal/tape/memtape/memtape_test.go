package memtape_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/memtape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// reopenable loads the same media again, as a restarted drive would.
type reopenable struct{ *memtape.Tape }

func (r reopenable) Reopen(t *testing.T) tape.Device {
	d, err := r.Media().Load(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func newTape(t *testing.T, bs int, capacity, early int64) *memtape.Tape {
	t.Helper()
	d, err := memtape.New(tape.Label{Barcode: "M00001L", Library: "mem", BlockSize: bs, Capacity: capacity, EarlyWarning: early})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name  string
		bs    int
		early int64
	}{
		{"block=512", 512, 0},
		{"block=65536/early", 65536, 1536 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			tapetest.Run(t, func(t *testing.T) tape.Device {
				return reopenable{newTape(t, c.bs, 2<<20, c.early)}
			})
		})
	}
}

// TestCrashLeavesIncomplete: a device closed with its writer open leaves
// the tape file incomplete, as a crash does; the next Append on the media
// removes it and takes its number.
func TestCrashLeavesIncomplete(t *testing.T) {
	d := newTape(t, 4096, 1<<20, 0)
	tapetest.WriteFile(t, d, "kept", []byte("kept"), 0)
	w, err := d.Append("crashed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(tapetest.Payload(1, 10000)); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, tape.ErrClosed) {
		t.Errorf("Write after the device closed: %v, want ErrClosed", err)
	}
	d2, err := d.Media().Load(0)
	if err != nil {
		t.Fatal(err)
	}
	files, err := d2.Files()
	if err != nil || len(files) != 2 || files[1].Status != tape.FileIncomplete || files[1].Bytes != 10000 {
		t.Fatalf("after the crash Files() = %+v, %v", files, err)
	}
	if _, err := d2.Open(2); !errors.Is(err, tape.ErrIncomplete) {
		t.Errorf("Open(incomplete) = %v", err)
	}
	info := tapetest.WriteFile(t, d2, "next", []byte("next"), 0)
	if info.Number != 2 || d2.Used() != 8 {
		t.Errorf("Append after the crash: tape file %d, Used %d; want 2, 8", info.Number, d2.Used())
	}
}

// TestOneWriterPerMedia: two devices with the same media loaded share its
// writer lock.
func TestOneWriterPerMedia(t *testing.T) {
	d := newTape(t, 4096, 1<<20, 0)
	d2, err := d.Media().Load(0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := d.Append("one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Append("two"); !errors.Is(err, tape.ErrBusy) {
		t.Fatalf("Append on the second device = %v, want ErrBusy", err)
	}
	if err := d.Media().Relabel(d.Label()); !errors.Is(err, tape.ErrBusy) {
		t.Errorf("Relabel under a writer = %v, want ErrBusy", err)
	}
	w.Abort()
	tapetest.WriteFile(t, d2, "two", []byte("two"), 0)
	if got := tapetest.ReadFile(t, d, 1); !bytes.Equal(got, []byte("two")) {
		t.Errorf("the first device reads %q", got)
	}
}

func TestShelfAndRelabel(t *testing.T) {
	s := memtape.NewShelf(nil)
	if _, err := s.Media("X1"); !errors.Is(err, tape.ErrBlank) {
		t.Errorf("Media of an unknown barcode = %v, want ErrBlank", err)
	}
	l := tape.Label{Barcode: "X1", Library: "mem", BlockSize: 4096, Capacity: 1 << 20}
	m, err := s.Format(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Format(l); !errors.Is(err, memtape.ErrExists) {
		t.Errorf("second Format = %v, want ErrExists", err)
	}
	bad := l
	bad.Barcode, bad.BlockSize = "X2", 100
	if _, err := s.Format(bad); err == nil {
		t.Error("Format with a 100-byte block size succeeded")
	}
	d, err := m.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	tapetest.WriteFile(t, d, "a", []byte("abc"), 0)
	if err := m.Relabel(l); err != nil {
		t.Fatal(err)
	}
	if files, _ := d.Files(); len(files) != 0 || d.Used() != 0 || d.Label().Generation != 2 {
		t.Errorf("after Relabel: %d files, %d bytes used, generation %d", len(files), d.Used(), d.Label().Generation)
	}
	if got := s.Barcodes(); len(got) != 1 || got[0] != "X1" {
		t.Errorf("Barcodes() = %v", got)
	}
}

func TestFaults(t *testing.T) {
	tapetest.RunFaults(t, func(t *testing.T) tape.Device { return reopenable{newTape(t, 4096, 2<<20, 0)} })
}
