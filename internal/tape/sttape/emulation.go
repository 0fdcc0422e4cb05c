package sttape

import (
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Media is an emulated cartridge: records (data blocks and filemarks) in
// order, end of data after the last. It outlives the Emulation drives that
// load it, so a test can "reopen" a tape. Capacity counts data bytes only;
// filemarks take no room.
type Media struct {
	mu sync.Mutex
	// recs[i] is a block, or a filemark when mark[i].
	recs [][]byte
	mark []bool
	off  []int64 // off[i]: data bytes in recs[:i]; len(recs)+1 entries
	fms  []int   // positions of the filemarks, ascending
	// earlyWarning and end are data byte counts: a write that takes the
	// tape to earlyWarning or past it signals early warning; no block goes
	// past end.
	earlyWarning, end int64
	writeProtected    bool
	ejected           bool // MTOFFL since the last Load

	counts Counts
}

// Counts are what an emulated drive was asked to do, so tests can assert
// how much a device reads and moves (a tape file found by spacing over
// filemarks, not by reading the data in front of it).
type Counts struct {
	BlocksRead    int64 // data blocks returned by Read
	BlocksWritten int64
	Rewinds       int64
	Spaces        int64 // MTFSF, MTBSF, MTFSR, MTBSR, MTEOM, MTSEEK operations
}

// NewMedia is a blank cartridge that signals early warning once
// earlyWarning data bytes are on it and holds at most end.
func NewMedia(earlyWarning, end int64) *Media {
	if earlyWarning <= 0 || earlyWarning > end {
		panic(fmt.Sprintf("sttape.NewMedia: early warning %d, end %d", earlyWarning, end))
	}
	return &Media{earlyWarning: earlyWarning, end: end, off: []int64{0}}
}

// SetWriteProtected moves the cartridge's write-protect tab.
func (m *Media) SetWriteProtected(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeProtected = on
}

// Ejected reports whether a drive ejected the cartridge (MTOFFL) since it
// was last loaded: what a changer's robot needs before it can take the
// cartridge out of the drive.
func (m *Media) Ejected() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ejected
}

// Counts returns what the drives did to this cartridge so far.
func (m *Media) Counts() Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts
}

// Records is the number of records (blocks and filemarks) on the media.
func (m *Media) Records() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// FlipBit damages record i (a block) in bit b, as a medium error that the
// drive does not notice would.
func (m *Media) FlipBit(i, b int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.recs) || m.mark[i] || b < 0 || b >= 8*len(m.recs[i]) {
		panic(fmt.Sprintf("sttape.Media.FlipBit(%d, %d): no such bit", i, b))
	}
	m.recs[i][b/8] ^= 1 << (b % 8)
}

// Cut ends the recorded data after the first i records, as a power loss
// while writing leaves a tape (no filemark after the last block).
func (m *Media) Cut(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.truncate(min(max(i, 0), len(m.recs)))
}

func (m *Media) truncate(i int) {
	m.recs, m.mark, m.off = m.recs[:i], m.mark[:i], m.off[:i+1]
	m.fms = m.fms[:sort.SearchInts(m.fms, i)]
}

func (m *Media) add(b []byte, mark bool) {
	if mark {
		m.fms = append(m.fms, len(m.recs))
	}
	m.recs = append(m.recs, b)
	m.mark = append(m.mark, mark)
	m.off = append(m.off, m.off[len(m.off)-1]+int64(len(b)))
}

// Load puts the cartridge into a new emulated drive, opened for writing or
// read only. As the st driver does, opening a write-protected tape for
// writing fails with EROFS.
func (m *Media) Load(write bool) (*Emulation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if write && m.writeProtected {
		return nil, unix.EROFS
	}
	m.ejected = false
	return &Emulation{m: m, write: write, known: true, compression: true}, nil
}

// Emulation is a Drive on Media that follows the st driver's documented
// semantics (Documentation/scsi/st.rst) in fixed-block and variable-block
// mode: reads and writes of whole blocks, a filemark read as 0 bytes once,
// end of data read as 0 bytes then EIO, writes that discard everything
// after the position, spacing over filemarks and records in both
// directions, and early warning the way the driver reports it: the write
// that reaches it completes; the next write fails with ENOSPC, the one
// after that proceeds, and so on alternately until the physical end, where
// every write fails with ENOSPC.
type Emulation struct {
	m          *Media
	write      bool
	pos        int
	blockSize  int  // 0: variable-block mode
	known      bool // file and block numbers are known (not after MTSEEK, MTEOM)
	lastWrite  bool // the last operation wrote data: a filemark is due on close or repositioning
	enospcNext bool // past early warning: the next write fails with ENOSPC
	eodRead    bool // the 0-byte read at end of data was returned
	// eodSeen: the driver knows it is at end of data (GMT_EOD), as after
	// a read or a space that ran into it, or MTEOM; not merely because
	// the last filemark was read or the last block written.
	eodSeen     bool
	compression bool
	offline     bool // ejected (MTOFFL): every operation but Close fails with EIO
	closed      bool
}

var _ Drive = (*Emulation)(nil)

// Compression reports whether hardware compression is on (the driver's
// default for the emulation is on, as for most drives).
func (e *Emulation) Compression() bool {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.compression
}

func (e *Emulation) Read(p []byte) (int, error) {
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.closed {
		return 0, unix.EBADF
	}
	if e.offline {
		return 0, unix.EIO
	}
	e.lastWrite = false
	if e.blockSize > 0 && len(p)%e.blockSize != 0 {
		return 0, unix.EINVAL
	}
	if e.pos == len(m.recs) {
		if e.eodRead {
			return 0, unix.EIO
		}
		e.eodRead, e.eodSeen = true, true
		return 0, nil
	}
	if m.mark[e.pos] {
		e.pos++
		return 0, nil
	}
	if e.blockSize == 0 {
		b := m.recs[e.pos]
		e.pos++
		if len(p) < len(b) {
			return 0, unix.ENOMEM // the block was longer than the buffer; it is skipped
		}
		m.counts.BlocksRead++
		return copy(p, b), nil
	}
	n := 0
	for n+e.blockSize <= len(p) && e.pos < len(m.recs) && !m.mark[e.pos] {
		b := m.recs[e.pos]
		if len(b) != e.blockSize {
			if n > 0 {
				return n, nil
			}
			return 0, unix.EIO // incorrect length: a block of another size
		}
		copy(p[n:], b)
		n += len(b)
		e.pos++
		m.counts.BlocksRead++
	}
	return n, nil
}

func (e *Emulation) Write(p []byte) (int, error) {
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case e.closed || !e.write:
		return 0, unix.EBADF
	case e.offline:
		return 0, unix.EIO
	case m.writeProtected:
		return 0, unix.EACCES
	case e.blockSize > 0 && (len(p) == 0 || len(p)%e.blockSize != 0):
		return 0, unix.EINVAL
	case e.blockSize == 0 && len(p) == 0:
		return 0, nil
	}
	if e.enospcNext {
		e.enospcNext = false
		return 0, unix.ENOSPC
	}
	m.truncate(e.pos)
	e.eodRead, e.eodSeen = false, false
	bs := e.blockSize
	if bs == 0 {
		bs = len(p)
	}
	n := 0
	for ; n < len(p); n += bs {
		if m.off[e.pos]+int64(bs) > m.end {
			break
		}
		m.add(append([]byte(nil), p[n:n+bs]...), false)
		e.pos++
		m.counts.BlocksWritten++
	}
	if n == 0 {
		e.enospcNext = false
		return 0, unix.ENOSPC // the physical end
	}
	e.lastWrite = true
	e.enospcNext = m.off[e.pos] >= m.earlyWarning
	return n, nil
}

func (e *Emulation) Op(op int16, count int32) error {
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.closed {
		return unix.EBADF
	}
	if e.offline {
		return unix.EIO
	}
	switch op {
	case mtNOP:
		return nil
	case mtSETBLK:
		if count < 0 || count > 1<<24-1 {
			return unix.EINVAL
		}
		e.blockSize = int(count)
		return nil
	case mtCOMPRESSION:
		e.compression = count != 0
		return nil
	case mtWEOF:
		if !e.write {
			return unix.EBADF
		}
		if m.writeProtected {
			return unix.EACCES
		}
		m.truncate(e.pos)
		for range count {
			m.add(nil, true)
			e.pos++
		}
		e.lastWrite, e.eodRead, e.eodSeen = false, false, false
		return nil
	}
	// Repositioning: data just written is ended with a filemark first, as
	// the driver does on close.
	if e.lastWrite {
		m.truncate(e.pos)
		m.add(nil, true)
		e.pos++
		e.lastWrite = false
	}
	e.eodRead, e.enospcNext, e.eodSeen = false, false, false
	switch op {
	case mtREW:
		m.counts.Rewinds++
		e.pos, e.known = 0, true
		return nil
	case mtOFFL:
		// Rewound and ejected: the drive holds no tape for this handle.
		m.counts.Rewinds++
		e.pos, e.known = 0, true
		m.ejected, e.offline = true, true
		return nil
	case mtFSF, mtBSF, mtFSR, mtBSR:
		m.counts.Spaces++
		if count < 0 {
			return unix.EINVAL
		}
		for range count {
			if err := e.space(op); err != nil {
				return err
			}
		}
		return nil
	case mtEOM:
		m.counts.Spaces++
		e.pos, e.known, e.eodSeen = len(m.recs), false, true
		return nil
	case mtSEEK:
		m.counts.Spaces++
		e.known = false
		if count < 0 || int(count) > len(m.recs) {
			e.pos = len(m.recs)
			return unix.EIO
		}
		e.pos = int(count)
		return nil
	}
	return unix.EINVAL
}

// space moves over one filemark (MTFSF: to after it; MTBSF: to before it)
// or one record (MTFSR, MTBSR: stopping after or before a filemark met on
// the way, with EIO).
func (e *Emulation) space(op int16) error {
	m := e.m
	switch op {
	case mtFSF:
		i := sort.SearchInts(m.fms, e.pos)
		if i == len(m.fms) {
			e.pos, e.eodSeen = len(m.recs), true
			return unix.EIO
		}
		e.pos = m.fms[i] + 1
	case mtBSF:
		i := sort.SearchInts(m.fms, e.pos) - 1
		if i < 0 {
			e.pos = 0
			return unix.EIO
		}
		e.pos = m.fms[i]
	case mtFSR:
		if e.pos == len(m.recs) {
			e.eodSeen = true
			return unix.EIO
		}
		e.pos++
		if m.mark[e.pos-1] {
			return unix.EIO
		}
	case mtBSR:
		if e.pos == 0 {
			return unix.EIO
		}
		e.pos--
		if m.mark[e.pos] {
			return unix.EIO
		}
	}
	return nil
}

func (e *Emulation) Status() (Status, error) {
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.closed {
		return Status{}, unix.EBADF
	}
	if e.offline {
		return Status{FileNo: -1, BlockNo: -1}, nil // no tape: not online
	}
	s := Status{BlockSize: e.blockSize, Gstat: gmtONLINE, FileNo: -1, BlockNo: -1}
	if e.pos == 0 {
		s.Gstat |= gmtBOT
	}
	if e.pos == len(m.recs) && e.eodSeen {
		s.Gstat |= gmtEOD
	}
	if e.pos > 0 && m.mark[e.pos-1] {
		s.Gstat |= gmtEOF
	}
	if m.off[e.pos] >= m.earlyWarning {
		s.Gstat |= gmtEOT
	}
	if m.writeProtected {
		s.Gstat |= gmtWRPROT
	}
	if e.known {
		f := sort.SearchInts(m.fms, e.pos) // filemarks before the position
		s.FileNo = int32(f)
		s.BlockNo = int32(e.pos)
		if f > 0 {
			s.BlockNo = int32(e.pos - m.fms[f-1] - 1)
		}
	}
	return s, nil
}

func (e *Emulation) Tell() (int64, error) {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	if e.closed {
		return 0, unix.EBADF
	}
	if e.offline {
		return 0, unix.EIO
	}
	return int64(e.pos), nil
}

// Close ends data just written with a filemark, as the driver does.
func (e *Emulation) Close() error {
	m := e.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.closed {
		return unix.EBADF
	}
	if e.lastWrite {
		m.truncate(e.pos)
		m.add(nil, true)
	}
	e.closed = true
	return nil
}
