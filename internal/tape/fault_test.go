package tape_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/faultfs"
	"github.com/kura-backup/kura/internal/tape/tapetest"
)

func TestFaults(t *testing.T) {
	const bs = 4096
	for _, c := range []struct {
		name string
		rule faultfs.Rule
		want error // nil: any error
	}{
		{"ENOSPC after bytes", faultfs.Rule{Match: ".data", AfterBytes: 10*bs + 100, Err: syscall.ENOSPC}, syscall.ENOSPC},
		{"ENOSPC short after bytes", faultfs.Rule{Match: ".data", AfterBytes: 10*bs + 100, Err: syscall.ENOSPC, Short: true}, syscall.ENOSPC},
		{"EIO on 3rd data write", faultfs.Rule{Match: ".data", Nth: 3, Err: syscall.EIO}, syscall.EIO},
		{"short write without error", faultfs.Rule{Match: ".data", Nth: 2, Short: true}, io.ErrShortWrite},
		{"ENOSPC on checksum table", faultfs.Rule{Match: ".crc", Nth: 2, Err: syscall.ENOSPC}, syscall.ENOSPC},
		{"ENOSPC on checksum header", faultfs.Rule{Match: ".crc", Nth: 1, Err: syscall.ENOSPC}, syscall.ENOSPC},
		{"EIO on data sync", faultfs.Rule{Match: ".data", Op: faultfs.Sync, Nth: 1, Err: syscall.EIO}, syscall.EIO},
		{"EIO on checksum sync", faultfs.Rule{Match: ".crc", Op: faultfs.Sync, Nth: 1, Err: syscall.EIO}, syscall.EIO},
		{"ENOSPC on filemark", faultfs.Rule{Match: ".mark.tmp", Nth: 1, Err: syscall.ENOSPC}, syscall.ENOSPC},
		{"EIO on filemark sync", faultfs.Rule{Match: ".mark.tmp", Op: faultfs.Sync, Nth: 1, Err: syscall.EIO}, syscall.EIO},
	} {
		t.Run(c.name, func(t *testing.T) {
			healthy, dir := newTape(t, bs, 4<<20, tape.Options{})
			earlier := [][]byte{tapetest.Payload(1, 3*bs+5), tapetest.Payload(2, bs)}
			for i, d := range earlier {
				tapetest.WriteFile(t, healthy, fmt.Sprint("earlier ", i), d, 0)
			}

			ffs := faultfs.New(tape.OSFS(), c.rule)
			faulty, err := tape.Open(dir, tape.Options{FS: ffs, BufferSize: 4 * bs})
			if err != nil {
				t.Fatal(err)
			}
			defer faulty.Close()
			err = writeUntilError(faulty, tapetest.Payload(3, 40*bs), 1000)
			if err == nil {
				t.Fatal("write through a faulty file system succeeded")
			}
			if ffs.Injected() == 0 {
				t.Fatal("no fault injected")
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}

			files, err := healthy.Files()
			if err != nil {
				t.Fatal(err)
			}
			// The failed tape file is gone at once, its space given back:
			// a full disk under the library does not stay full.
			if len(files) != 2 {
				t.Fatalf("after the fault Files() = %+v, want the failed tape file 3 removed", files)
			}
			if _, err := healthy.Open(3); !errors.Is(err, tape.ErrNoSuchFile) {
				t.Errorf("Open(3) = %v, want ErrNoSuchFile", err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "000003.*")); len(left) > 0 {
				t.Errorf("left on the tape after the fault: %v", left)
			}
			if want := int64(len(earlier[0]) + len(earlier[1])); faulty.Used() != want {
				t.Errorf("Used() = %d after the fault, want %d", faulty.Used(), want)
			}
			for i, d := range earlier {
				if !bytes.Equal(tapetest.ReadFile(t, healthy, i+1), d) {
					t.Fatalf("tape file %d damaged by the fault", i+1)
				}
			}
			next := tapetest.Payload(4, 5*bs+1)
			if info := tapetest.WriteFile(t, healthy, "next", next, 0); info.Number != 3 {
				t.Errorf("next Append wrote tape file %d, want 3", info.Number)
			}
			if !bytes.Equal(tapetest.ReadFile(t, healthy, 3), next) {
				t.Fatal("tape file written after the fault reads back wrong")
			}
		})
	}
}

// writeUntilError appends one tape file and returns the first error of
// Append, Write or Finish; a failed Write is followed by Finish, which must
// fail too.
func writeUntilError(d tape.Device, data []byte, chunk int) error {
	w, err := d.Append("faulty")
	if err != nil {
		return err
	}
	for p := data; len(p) > 0; p = p[min(chunk, len(p)):] {
		if _, err := w.Write(p[:min(chunk, len(p))]); err != nil {
			if _, ferr := w.Finish(); ferr == nil {
				return errors.New("Finish succeeded after a failed Write")
			}
			return err
		}
	}
	_, err = w.Finish()
	return err
}

// The crash test re-executes the test binary; the child appends a tape file
// block by block until it is killed.
const crashEnv = "KURA_TAPE_CRASH_CHILD"

func TestKillMidWrite(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		return
	}
	tp, dir := newTape(t, 4096, 64<<20, tape.Options{})
	earlier := [][]byte{tapetest.Payload(1, 100000), tapetest.Payload(2, 4096)}
	for i, d := range earlier {
		tapetest.WriteFile(t, tp, fmt.Sprint("earlier ", i), d, 0)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidWrite$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	// Wait until the child has pushed several blocks through the drive.
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "writing" {
			ready = true
			break
		}
	}
	if !ready {
		t.Fatalf("child never reported progress: %v", sc.Err())
	}
	// While the child writes, the tape is busy for everyone else.
	if _, err := tp.Append("intruder"); !errors.Is(err, tape.ErrBusy) {
		t.Errorf("Append while another process writes = %v, want ErrBusy", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()

	tp2, err := tape.Open(dir, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tp2.Close()
	files, err := tp2.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[2].Status != tape.FileIncomplete || files[2].Bytes == 0 {
		t.Fatalf("after the kill Files() = %+v, want a non-empty incomplete tape file 3", files)
	}
	for i, d := range earlier {
		if !bytes.Equal(tapetest.ReadFile(t, tp2, i+1), d) {
			t.Fatalf("tape file %d damaged by the crash", i+1)
		}
	}
	next := tapetest.Payload(5, 50000)
	if info := tapetest.WriteFile(t, tp2, "after crash", next, 0); info.Number != 3 {
		t.Errorf("Append after the crash wrote tape file %d, want 3", info.Number)
	}
	if !bytes.Equal(tapetest.ReadFile(t, tp2, 3), next) {
		t.Fatal("tape file written after the crash reads back wrong")
	}
	files, _ = tp2.Files()
	if len(files) != 3 {
		t.Errorf("%d tape files, want 3", len(files))
	}
}

// crashChild writes a tape file until it is killed. It reports "writing"
// on stdout once blocks have reached the data file.
func crashChild(dir string) {
	tp, err := tape.Open(dir, tape.Options{BufferSize: 2 * 4096})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w, err := tp.Append("killed")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	block := tapetest.Payload(3, 4096)
	for i := 0; ; i++ {
		if _, err := w.Write(block); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if i == 8 {
			// With a ring of 2, 9 blocks accepted means at least 7 written.
			fmt.Println("writing")
		}
		if w.(tape.Remainer).Remaining() < 1<<20 {
			// Never finish: wait to be killed.
			select {}
		}
	}
}
