package sttape

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEmulation checks the emulated driver against st.rst, one behaviour
// at a time, since every device test stands on it.
func TestEmulation(t *testing.T) {
	m := NewMedia(8*512, 10*512)
	e, err := m.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	blk := func(c byte) []byte {
		b := make([]byte, 512)
		b[0] = c
		return b
	}
	read := func() (byte, int, error) {
		t.Helper()
		b := make([]byte, 512)
		n, err := e.Read(b)
		return b[0], n, err
	}
	must(e.Op(mtSETBLK, 512))
	if _, err := e.Write(make([]byte, 100)); !errors.Is(err, unix.EINVAL) {
		t.Errorf("a write of part of a block in fixed-block mode: %v, want EINVAL", err)
	}
	// a b FM c FM
	for _, c := range []byte("ab") {
		if n, err := e.Write(blk(c)); n != 512 || err != nil {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	must(e.Op(mtWEOF, 1))
	e.Write(blk('c'))
	must(e.Op(mtWEOF, 1))
	if st, _ := e.Status(); !st.EOF() || st.FileNo != 2 || st.BlockNo != 0 {
		t.Errorf("status at the end: %+v", st)
	}
	must(e.Op(mtEOM, 1))
	if st, _ := e.Status(); !st.EOD() || st.FileNo != -1 {
		t.Errorf("status after MTEOM: %+v, want end of data, file number unknown", st)
	}
	must(e.Op(mtREW, 1))
	if st, _ := e.Status(); !st.BOT() || st.FileNo != 0 {
		t.Errorf("status after rewind: %+v", st)
	}
	// Reading a filemark returns 0 bytes once, then the next file.
	for _, want := range []struct {
		c byte
		n int
	}{{'a', 512}, {'b', 512}, {0, 0}, {'c', 512}, {0, 0}} {
		c, n, err := read()
		if n != want.n || err != nil || (n > 0 && c != want.c) {
			t.Fatalf("read: %q %d %v, want %q %d", c, n, err, want.c, want.n)
		}
	}
	// End of data: 0 bytes, then EIO.
	if _, n, err := read(); n != 0 || err != nil {
		t.Errorf("first read at end of data: %d, %v", n, err)
	}
	if _, _, err := read(); !errors.Is(err, unix.EIO) {
		t.Errorf("second read at end of data: %v, want EIO", err)
	}
	// MTBSF stops before the filemark, MTFSF after it.
	must(e.Op(mtBSF, 2))
	if st, _ := e.Status(); st.FileNo != 0 || st.BlockNo != 2 {
		t.Errorf("after MTBSF 2: file %d block %d, want 0, 2", st.FileNo, st.BlockNo)
	}
	must(e.Op(mtFSF, 1))
	if c, _, _ := read(); c != 'c' {
		t.Errorf("after MTFSF 1 read %q, want c", c)
	}
	if err := e.Op(mtFSF, 5); !errors.Is(err, unix.EIO) {
		t.Errorf("MTFSF past the end of data: %v, want EIO", err)
	}
	// MTBSR and a block of the wrong size.
	must(e.Op(mtREW, 1))
	must(e.Op(mtFSR, 1))
	if c, _, _ := read(); c != 'b' {
		t.Errorf("after MTFSR 1 read %q, want b", c)
	}
	must(e.Op(mtBSR, 2))
	must(e.Op(mtSETBLK, 1024))
	if _, err := e.Read(make([]byte, 1024)); !errors.Is(err, unix.EIO) {
		t.Errorf("reading a 512-byte block with the drive set to 1024: %v, want EIO", err)
	}
	// Writing in the middle discards everything after.
	must(e.Op(mtSETBLK, 512))
	must(e.Op(mtFSR, 1))
	e.Write(blk('x'))
	must(e.Op(mtREW, 1))
	if m.Records() != 3 {
		t.Errorf("%d records after writing over b (a, x and the filemark a reposition writes), want 3", m.Records())
	}
	// Early warning at 8 blocks, the end at 10: the write that reaches
	// early warning succeeds, then ENOSPC and success alternate until the
	// end, where every write fails.
	must(e.Op(mtEOM, 1))
	m2 := NewMedia(8*512, 10*512)
	e, _ = m2.Load(true)
	must(e.Op(mtSETBLK, 512))
	var got []string
	for range 14 {
		_, err := e.Write(blk('w'))
		st, _ := e.Status()
		switch {
		case err != nil:
			got = append(got, unix.ErrnoName(err.(unix.Errno)))
		case st.EOT():
			got = append(got, "ok+EOT")
		default:
			got = append(got, "ok")
		}
	}
	want := "ok ok ok ok ok ok ok ok+EOT ENOSPC ok+EOT ENOSPC ok+EOT ENOSPC ENOSPC"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("writes to the end:\n got %s\nwant %s", s, want)
	}
	// Close writes a filemark after data.
	recs := m2.Records()
	must(e.Close())
	if m2.Records() != recs+1 {
		t.Error("Close after a write wrote no filemark")
	}
}

// TestIoctlNumbers: the request numbers are those of linux/mtio.h on
// 64-bit Linux (MTIOCTOP 0x40086d01, MTIOCGET 0x80306d02, MTIOCPOS
// 0x80086d03).
func TestIoctlNumbers(t *testing.T) {
	for name, c := range map[string][2]uintptr{
		"MTIOCTOP": {mtIOCTOP, 0x40086d01},
		"MTIOCGET": {mtIOCGET, 0x80306d02},
		"MTIOCPOS": {mtIOCPOS, 0x80086d03},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %#x, want %#x", name, c[0], c[1])
		}
	}
}

// TestOpenDriveRefusesOtherFiles: a file that is not a tape device is
// refused with a clear error, before anything is written to it.
func TestOpenDriveRefusesOtherFiles(t *testing.T) {
	p := t.TempDir() + "/not-a-tape"
	if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDrive(p, true); err == nil || !errors.Is(err, unix.ENOTTY) {
		t.Errorf("OpenDrive(regular file) = %v, want ENOTTY (not a tape device)", err)
	}
}
