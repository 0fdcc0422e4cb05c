package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

// pipeNode serves a node home's libraries over an in-memory tunnel and
// returns the server's end. Closing the tunnel ends the node's session.
func pipeNode(t *testing.T, homeDir string) (*Conn, *Libraries, func()) {
	t.Helper()
	srvEnd, nodeEnd := net.Pipe()
	libs := NewLibraries(homeDir)
	served := make(chan struct{})
	go func() {
		defer close(served)
		ServeConn(nodeEnd, libs.Handler())
		libs.Close()
	}()
	cc, hc, err := NewClient(srvEnd)
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		cc.Close()
		srvEnd.Close()
		<-served
	}
	t.Cleanup(stop)
	return &Conn{Node: "sn1", HC: hc}, libs, stop
}

func newRemoteLibrary(t *testing.T, c *Conn, name string, slots int) *Remote {
	t.Helper()
	lib, err := c.CreateLibrary(library.Config{Name: name, Slots: slots, Drives: 2, TapeSize: 16 << 20, BarcodePrefix: "SN"})
	if err != nil {
		t.Fatalf("CreateLibrary: %v", err)
	}
	return lib
}

// TestRemoteDeviceConformance: a tape of a node's library, reached over the
// tunnel, passes the device conformance suite every device passes.
func TestRemoteDeviceConformance(t *testing.T) {
	c, _, _ := pipeNode(t, t.TempDir())
	n := 0
	tapetest.Run(t, func(t *testing.T) tape.Device {
		n++
		lib := newRemoteLibrary(t, c, "lib"+string(rune('a'+n)), 1)
		drv, err := lib.Acquire(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { drv.Release() })
		dev, _, err := drv.LoadWritable()
		if err != nil {
			t.Fatal(err)
		}
		return dev
	})
}

// TestRemoteChanger: the inventory, drive leases and errors of a node's
// library cross the tunnel with their meaning; a session that ends
// releases its drives and aborts its open tape file.
func TestRemoteChanger(t *testing.T) {
	homeDir := t.TempDir()
	c, _, stop := pipeNode(t, homeDir)
	lib := newRemoteLibrary(t, c, "far", 3)
	if got := lib.Config(); got.Name != "far" || got.Slots != 3 || got.Dir == "" {
		t.Fatalf("Config %+v", got)
	}
	tapes, err := lib.Tapes()
	if err != nil || len(tapes) != 3 || tapes[0].State != library.StateBlank {
		t.Fatalf("Tapes: %+v, %v; want three blank tapes", tapes, err)
	}
	if _, err := lib.OpenTape("NOPE01"); !errors.Is(err, library.ErrUnknownTape) {
		t.Errorf("OpenTape of an unknown barcode: %v, want ErrUnknownTape", err)
	}
	if _, err := lib.Acquire(context.Background(), 7); !errors.Is(err, library.ErrNoDrive) {
		t.Errorf("Acquire(7): %v, want ErrNoDrive", err)
	}
	drv, err := lib.Acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lib.Acquire(ctx, 1); !errors.Is(err, library.ErrDriveBusy) && !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire of a busy drive with an ended context: %v", err)
	}
	// Only the allowed tape is chosen.
	dev, bc, err := drv.LoadWritableIf(func(b string, blank bool) bool { return b == tapes[2].Barcode })
	if err != nil || bc != tapes[2].Barcode {
		t.Fatalf("LoadWritableIf: %s, %v; want %s", bc, err, tapes[2].Barcode)
	}
	fw, err := dev.Append("saveset 1 data")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(tapetest.Payload(1, 300<<10)); err != nil {
		t.Fatal(err)
	}
	info, err := fw.Finish()
	if err != nil || info.Bytes != 300<<10 || info.Status != tape.FileComplete {
		t.Fatalf("Finish: %+v, %v", info, err)
	}
	if err := lib.MarkFull(bc); err != nil {
		t.Fatal(err)
	}
	if _, _, err := drv.LoadWritableIf(func(b string, blank bool) bool { return b == bc }); !errors.Is(err, library.ErrNoTape) {
		t.Errorf("LoadWritableIf of a full tape only: %v, want ErrNoTape", err)
	}
	// An open tape file when the session ends: aborted, the drive freed.
	dev2, _, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	fw2, err := dev2.Append("saveset 2 data")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw2.Write(tapetest.Payload(2, 100<<10)); err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := fw2.Finish(); err == nil {
		t.Fatal("Finish after the session ended: no error")
	}
	c2, _, _ := pipeNode(t, homeDir)
	lib2, err := c2.Library("far")
	if err != nil {
		t.Fatal(err)
	}
	drv2, err := lib2.Acquire(context.Background(), 1)
	if err != nil {
		t.Fatalf("drive 1 after the session that held it ended: %v", err)
	}
	defer drv2.Release()
	t2, err := lib2.OpenTape(bc)
	if err != nil {
		t.Fatal(err)
	}
	defer t2.Close()
	files, err := t2.Files()
	if err != nil || len(files) != 1 || files[0].Bytes != 300<<10 {
		t.Errorf("files of %s: %+v, %v; want the one finished file", bc, files, err)
	}
	// The library grows and is removed on the node.
	added, err := lib2.AddTapes(2)
	if err != nil || len(added) != 2 {
		t.Fatalf("AddTapes(2): %v, %v", added, err)
	}
	if ts, err := lib2.Tapes(); err != nil || len(ts) != 5 {
		t.Errorf("after AddTapes(2): %d tapes, %v; want 5", len(ts), err)
	}
	gone := newRemoteLibrary(t, c2, "gone", 1)
	if err := gone.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Library("gone"); !errors.Is(err, library.ErrNotLibrary) {
		t.Errorf("a removed library opens: %v", err)
	}
	var _ http.Handler = (&Libraries{}).Handler()
}
