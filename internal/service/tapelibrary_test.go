package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape/mtx/mtxtest"
	"github.com/kura-backup/kura/internal/tape/sttape"
)

// TestTapeLibraryThroughTheService: the verbs of `kura vtl`, `kura tape`
// and `kura drive` work on a real tape library (an emulated changer) as on
// a virtual one: create with the changer's slots, show, list tapes and
// drives, export and import; a missing drive device is a conflict and
// registers nothing.
func TestTapeLibraryThroughTheService(t *testing.T) {
	svc, env := newService(t)
	ctx := context.Background()
	drives := []string{"/dev/nst0", "/dev/nst1"}
	r := mtxtest.New("/dev/sg7", drives, 4, 1)
	for i := 1; i <= 3; i++ {
		r.Insert(i, fmt.Sprintf("S%05dL8", i), sttape.NewMedia(1<<20, 2<<20))
	}
	env.TapeHardware = &library.Hardware{Run: r.Run, OpenDrive: r.OpenDrive}

	_, err := svc.CreateLibrary(ctx, api.LibraryCreate{Name: "lto", Changer: "/dev/sg7", DriveDevices: []string{"/dev/nst0", "/dev/nst7"}})
	wantAPI(t, "create with a missing drive", err, api.CodeConflict, "")
	if libs, _ := svc.Libraries(ctx); len(libs) != 0 {
		t.Fatalf("a failed create registered %+v", libs)
	}

	if _, err := svc.CreateLibrary(ctx, api.LibraryCreate{Name: "lto", Changer: "/dev/sg7", DriveDevices: drives}); err != nil {
		t.Fatal(err)
	}
	l, err := svc.Library(ctx, "lto")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Slots) != 4 || l.MailSlots == nil || len(*l.MailSlots) != 1 || len(l.Drives) != 2 || l.Config.Media != "changer /dev/sg7, drives /dev/nst0 /dev/nst1" {
		t.Errorf("library %+v", l)
	}
	tapes, err := svc.Tapes(ctx, api.TapeQuery{Library: "lto"})
	if err != nil || len(tapes) != 3 || tapes[0].State != string(library.StateUnread) {
		t.Fatalf("tapes %+v, %v", tapes, err)
	}
	ds, err := svc.Drives(ctx, "lto")
	if err != nil || len(ds) != 2 || ds[0].BlockSizeBytes != library.DefaultBlockSize {
		t.Fatalf("drives %+v, %v", ds, err)
	}
	if tp, err := svc.ExportTape(ctx, "S00002L8"); err != nil || tp.State != string(library.StateExported) {
		t.Fatalf("export: %+v, %v", tp, err)
	}
	if s := r.Status(); s.Slots[4].VolumeTag != "S00002L8" {
		t.Fatalf("the changer did not move it to its mail slot: %s", s)
	}
	if tp, err := svc.ImportTape(ctx, "S00002L8"); err != nil || tp.State != string(library.StateUnread) {
		t.Fatalf("import: %+v, %v", tp, err)
	}
	// A tape library's tapes are its cartridges: none are added.
	_, err = svc.AddTapes(ctx, "lto", api.TapeAdd{Count: 1})
	wantAPI(t, "add tapes to a tape library", err, api.CodeConflict, "")
	if err == nil || !strings.Contains(err.Error(), "kura tape import") {
		t.Errorf("adding tapes to a tape library: %v; want it to say how cartridges come in", err)
	}
}
