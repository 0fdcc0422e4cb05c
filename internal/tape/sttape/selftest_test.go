package sttape

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/tape"
)

// TestSelfTestReports: the read-only check names a damaged trailer and an
// incomplete tape file, leaves the driver's block size as it found it,
// and writes nothing.
func TestSelfTestReports(t *testing.T) {
	d, _ := twoFiles(t)
	d.media.FlipBit(13, 5) // trailer 2
	drv, err := d.media.Load(false)
	if err != nil {
		t.Fatal(err)
	}
	drv.Op(mtSETBLK, 1024)
	written := d.media.Counts().BlocksWritten
	r, err := SelfTest(drv, SelfTestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Label == nil || r.Label.Barcode != "ST0001L8" || len(r.Files) != 2 || !strings.Contains(r.FilesProblem, "tape file 2") {
		t.Errorf("report %+v", r)
	}
	if st, _ := drv.Status(); st.BlockSize != 1024 || !st.BOT() {
		t.Errorf("after the selftest: block size %d, at the beginning %v; want 1024 as before, rewound", st.BlockSize, st.BOT())
	}
	if d.media.Counts().BlocksWritten != written {
		t.Error("the read-only selftest wrote")
	}
}

// TestSelfTestMismatch: a tape that gives back other bytes than it took
// (caught by the block CRCs) is ErrMismatch (exit 4 in the CLI); the check
// says so and blanks the tape. A good drive's check matches and has rates.
func TestSelfTestMismatch(t *testing.T) {
	m := NewMedia(1<<30, 2<<30)
	drv, _ := m.Load(true)
	r, err := SelfTest(liar{drv, m}, SelfTestOptions{Write: true, Bytes: 1 << 20, BlockSize: 64 << 10, Clock: ticking()})
	if !errors.Is(err, ErrMismatch) || !errors.Is(err, tape.ErrCorrupt) {
		t.Fatalf("SelfTest on a drive that changes data: %v", err)
	}
	if r.Match || !r.LeftBlank {
		t.Errorf("report %+v", r)
	}
	drv, _ = NewMedia(1<<30, 2<<30).Load(true)
	r, err = SelfTest(drv, SelfTestOptions{Write: true, Bytes: 1 << 20, BlockSize: 64 << 10, Clock: ticking()})
	if err != nil || !r.Match || r.WriteRate != 1<<20 || r.ReadRate != 1<<20 {
		t.Errorf("a good drive: %v, %+v (rates of 1 MiB in a tick of 1 s)", err, r)
	}
}

// liar is a drive whose media flips a bit of every data block after it
// is written (a drive that corrupts what it writes).
type liar struct {
	*Emulation
	m *Media
}

func (l liar) Write(p []byte) (int, error) {
	n, err := l.Emulation.Write(p)
	if err == nil && len(p) == 64<<10 {
		l.m.FlipBit(l.m.Records()-1, 3)
	}
	return n, err
}

func ticking() func() time.Time {
	now := time.Unix(0, 0)
	return func() time.Time { now = now.Add(time.Second); return now }
}
