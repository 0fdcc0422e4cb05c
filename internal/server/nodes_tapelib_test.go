package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/apiclient"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/node"
	"github.com/kura-backup/kura/internal/tape/mtx/mtxtest"
	"github.com/kura-backup/kura/internal/tape/sttape"
)

// TestStorageNodeTapeLibrary: a tape library (a changer and st drives,
// here the emulated robot and drives) on a storage node. The node checks
// its own devices: a missing drive is refused in the node's words and
// nothing is registered. The cartridges the robot holds are the library's
// tapes in the catalog; an agent's backup goes to the node's data port
// onto a cartridge the node labels; a restore and a verify read it back
// through the node; cartridges are never added, only imported.
func TestStorageNodeTapeLibrary(t *testing.T) {
	drives := []string{"/dev/nst0", "/dev/nst1"}
	robot := mtxtest.New("/dev/sg4", drives, 3, 1)
	for i := 1; i <= 3; i++ {
		robot.Insert(i, fmt.Sprintf("N%05dL8", i), sttape.NewMedia(4<<20, 8<<20))
	}
	r := startServer(t, t.TempDir(), "")
	ctx := t.Context()
	home := r.enrollNode("sn1", "")
	sn := r.startNodeWith("sn1", node.Options{Home: home, DataListen: "127.0.0.1:0",
		TapeHardware: &library.Hardware{Run: robot.Run, OpenDrive: robot.OpenDrive}})

	_, err := r.admin.CreateLibrary(ctx, api.LibraryCreate{Name: "lto", Node: "sn1", Changer: "/dev/sg4", DriveDevices: []string{"/dev/nst0", "/dev/nst9"}})
	if apiclient.Code(err) != api.CodeConflict || !strings.Contains(err.Error(), "storage node sn1") || !strings.Contains(err.Error(), "/dev/nst9") {
		t.Errorf("creating a tape library with a missing drive on the node: %v; want a conflict in the node's words naming /dev/nst9", err)
	}
	if _, err := r.admin.Library(ctx, "lto"); apiclient.Code(err) != api.CodeNotFound {
		t.Fatalf("after a refused create, library lto: %v; want not found (nothing registered)", err)
	}
	if _, err := os.Stat(filepath.Join(sn.home, "vtl", "lto")); !os.IsNotExist(err) {
		t.Errorf("the refused library left its folder on the node: %v", err)
	}

	lib, err := r.admin.CreateLibrary(ctx, api.LibraryCreate{Name: "lto", Node: "sn1", Changer: "/dev/sg4", DriveDevices: drives, BlockSizeBytes: 32 << 10, BufferSizeBytes: 256 << 10})
	if err != nil {
		t.Fatalf("creating a tape library on node sn1: %v", err)
	}
	if lib.Node != "sn1" || lib.Config.Slots != 3 || lib.Config.Drives != 2 || lib.Config.Media != "changer /dev/sg4, drives /dev/nst0 /dev/nst1" {
		t.Errorf("library lto: %+v", lib)
	}
	tapes, err := r.admin.Tapes(ctx, api.TapeQuery{Library: "lto"})
	if err != nil || len(tapes) != 3 || tapes[0].Barcode != "N00001L8" || tapes[0].State != string(library.StateUnread) {
		t.Fatalf("the robot's cartridges as tapes of lto: %+v, %v", tapes, err)
	}
	_, err = r.admin.AddTapes(ctx, "lto", api.TapeAdd{Count: 1})
	if apiclient.Code(err) != api.CodeConflict || !strings.Contains(err.Error(), "kura tape import") {
		t.Errorf("adding tapes to a tape library on a node: %v; want a conflict saying how cartridges come in", err)
	}

	r.runAgent("c1")
	src := t.TempDir()
	makeTree(t, src, 10, 7)
	j := r.wait(r.submit(api.JobRequest{Kind: api.KindBackup, Client: "c1", Paths: []string{src}, Library: "lto"})[0])
	if j.State != catalog.StateSucceeded {
		t.Fatalf("backup to the node's tape library: %s (%s)", j.State, j.Error)
	}
	if sn.n.DataReceived() == 0 {
		t.Errorf("no backup data came to the node's data port")
	}
	rec, err := r.srv.Env().Catalog.Saveset(j.SavesetID)
	if err != nil {
		t.Fatal(err)
	}
	// The data is on the robot's cartridge, which now carries Kura's label.
	bc := rec.Parts[0].Barcode
	if robot.Media(bc) == nil || robot.Moves() == 0 {
		t.Fatalf("saveset %d on %s: not a cartridge of the robot, or the robot never moved (%d moves)", j.SavesetID, bc, robot.Moves())
	}
	if tp, err := r.admin.Tape(ctx, bc); err != nil || tp.UsedBytes == 0 {
		t.Errorf("tape %s after the backup: %+v, %v; want it used", bc, tp, err)
	}

	r.restoreAndCheck("c1", j.SavesetID, src)
	if sn.n.DataSent() == 0 || r.srv.RestoreBytesSent() != 0 {
		t.Errorf("restore: node sent %d bytes, the server %d; want all from the node", sn.n.DataSent(), r.srv.RestoreBytesSent())
	}
	if v := r.wait(r.submit(api.JobRequest{Kind: api.KindVerify, Saveset: j.SavesetID, Level: "data"})[0]); v.State != catalog.StateSucceeded {
		t.Errorf("verify of saveset %d on the node's tape library: %s (%s)", j.SavesetID, v.State, v.Error)
	}
}
