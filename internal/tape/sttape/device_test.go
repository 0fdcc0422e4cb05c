package sttape

import (
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

const (
	testBlock    = 4 << 10
	testCapacity = 4 << 20
)

// emulated is a Device on an emulated drive that tapetest can reopen and
// whose label it can damage.
type emulated struct {
	*Device
	media *Media
}

func (e *emulated) Reopen(t *testing.T) tape.Device {
	t.Helper()
	drv, err := e.media.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(drv, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return &emulated{Device: d, media: e.media}
}

// DamageLabel flips a bit in the first copy of the label (record 0).
func (e *emulated) DamageLabel(t *testing.T) { e.media.FlipBit(0, 100) }

var _ tapetest.LabelDamager = (*emulated)(nil)

// newEmulated formats a blank emulated tape: label capacity c, the drive's
// early warning at ew and its physical end at end (data bytes).
func newEmulated(t *testing.T, c, ew, end int64) *emulated {
	t.Helper()
	m := NewMedia(ew, end)
	drv, err := m.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	d, err := Format(drv, tape.Label{Barcode: "ST0001L8", Library: "st", BlockSize: testBlock, Capacity: c},
		Options{Clock: func() time.Time { clock = clock.Add(time.Second); return clock }})
	if err != nil {
		t.Fatalf("format: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return &emulated{Device: d, media: m}
}

// TestConformance runs the device suite on the emulated st driver, the
// drive's own early warning and end far past the label's capacity.
func TestConformance(t *testing.T) {
	tapetest.Run(t, func(t *testing.T) tape.Device {
		return newEmulated(t, testCapacity, 4*testCapacity, 6*testCapacity)
	})
}
