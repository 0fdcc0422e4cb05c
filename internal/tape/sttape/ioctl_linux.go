//go:build linux

package sttape

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The structures of linux/mtio.h, laid out as the kernel does on this
// architecture (long is the word size, daddr_t an int).
type mtop struct {
	op    int16
	_     int16
	count int32
}

type mtget struct {
	typ    int64 // long
	resid  int64
	dsreg  int64
	gstat  int64
	erreg  int64
	fileno int32 // __kernel_daddr_t
	blkno  int32
}

type mtpos struct{ blkno int64 }

// mtget and mtpos use long: on a 32-bit kernel it is 4 bytes, and these
// structures would be wrong there. Kura builds for 64-bit Linux.
var _ = [1]struct{}{}[unsafe.Sizeof(uintptr(0))-8]

// ioctl request numbers: _IOW('m', 1, mtop), _IOR('m', 2, mtget), _IOR('m', 3, mtpos).
var (
	mtIOCTOP = ioc(1, 'm', 1, unsafe.Sizeof(mtop{}))
	mtIOCGET = ioc(2, 'm', 2, unsafe.Sizeof(mtget{}))
	mtIOCPOS = ioc(2, 'm', 3, unsafe.Sizeof(mtpos{}))
)

// ioc is the kernel's _IOC(dir, type, nr, size) (asm-generic/ioctl.h).
func ioc(dir, typ, nr, size uintptr) uintptr {
	return dir<<30 | size<<16 | typ<<8 | nr
}

// stDrive is a Drive on the st driver's character device.
type stDrive struct {
	f *os.File
}

// OpenDrive opens a tape device: use the non-rewinding node (/dev/nstN), so
// that the position survives between Kura's operations. It is opened read
// only unless write; the st driver refuses to open a write-protected tape
// for writing (EROFS). O_NONBLOCK lets the open succeed with no tape
// loaded, so that Status can say so; the mode is cleared again at once.
func OpenDrive(path string, write bool) (Drive, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d := &stDrive{f: f}
	if _, err := d.Status(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is not a tape device (MTIOCGET: %w)", path, err)
	}
	return d, nil
}

func (d *stDrive) ioctl(req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, d.f.Fd(), req, uintptr(arg))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// Read and Write are single system calls: a tape must see exactly the
// blocks Kura asks for, so no retry loop may split or repeat them (os.File
// would retry a short write).
func (d *stDrive) Read(p []byte) (int, error) {
	fd := int(d.f.Fd())
	for {
		n, err := unix.Read(fd, p)
		if err == unix.EINTR {
			continue
		}
		return max(n, 0), err
	}
}

func (d *stDrive) Write(p []byte) (int, error) {
	fd := int(d.f.Fd())
	for {
		n, err := unix.Write(fd, p)
		if err == unix.EINTR {
			continue
		}
		return max(n, 0), err
	}
}

func (d *stDrive) Op(op int16, count int32) error {
	m := mtop{op: op, count: count}
	return d.ioctl(mtIOCTOP, unsafe.Pointer(&m))
}

func (d *stDrive) Status() (Status, error) {
	var m mtget
	if err := d.ioctl(mtIOCGET, unsafe.Pointer(&m)); err != nil {
		return Status{}, err
	}
	return Status{
		Type:      m.typ,
		BlockSize: int(m.dsreg & 0xffffff),   // MT_ST_BLKSIZE_MASK
		Density:   int(m.dsreg >> 24 & 0xff), // MT_ST_DENSITY_MASK >> MT_ST_DENSITY_SHIFT
		Gstat:     uint32(m.gstat),
		FileNo:    m.fileno,
		BlockNo:   m.blkno,
	}, nil
}

func (d *stDrive) Tell() (int64, error) {
	var m mtpos
	if err := d.ioctl(mtIOCPOS, unsafe.Pointer(&m)); err != nil {
		return 0, err
	}
	return m.blkno, nil
}

func (d *stDrive) Close() error { return d.f.Close() }
