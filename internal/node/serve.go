package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
)

// Libraries is the node's half of the changer protocol: the libraries in a
// node home (HOME/vtl/NAME) — folder, S3 or tape libraries, each a
// library.Changer — served to the server over the tunnel. Every
// handle it gives out (a leased drive, an open device) lives until it is
// released or the session that took it ends: Close releases them all, so
// a server that vanishes mid-backup leaves no drive leased and no tape
// file open on the node (the partial tape file is aborted).
type Libraries struct {
	home  string
	spans *spans            // the process's span sessions (direct data path); nil: none
	hw    *library.Hardware // how a tape library's changer and drives are reached; nil: mtx and st

	calls sync.WaitGroup // calls being answered: Close waits for them

	mu      sync.Mutex
	libs    map[string]library.Changer
	next    int64
	drives  map[int64]*driveHandle
	devices map[int64]*devHandle
	closed  bool
}

type driveHandle struct {
	mu  sync.Mutex // a library.Drive is used by one goroutine at a time
	lib library.Changer
	drv library.Drive
	dev int64 // the device handle of the tape loaded now, 0 for none
}

type devHandle struct {
	dev   tape.Device
	owned bool // the device belongs to a drive: the drive closes it
}

// NewLibraries serves the libraries of a node home.
func NewLibraries(homeDir string) *Libraries {
	return &Libraries{home: homeDir, libs: map[string]library.Changer{},
		drives: map[int64]*driveHandle{}, devices: map[int64]*devHandle{}}
}

// Close releases every drive and closes every device the session holds,
// once the calls being answered have returned (the tunnel is closed first,
// so a call reading a stream ends at once).
func (l *Libraries) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.closeSessions()
	l.closeReads()
	l.calls.Wait()
	l.mu.Lock()
	drives, devices := l.drives, l.devices
	l.drives, l.devices = map[int64]*driveHandle{}, map[int64]*devHandle{}
	l.mu.Unlock()
	for _, d := range devices {
		if !d.owned {
			d.dev.Close()
		}
	}
	for _, d := range drives {
		d.mu.Lock()
		d.drv.Release()
		d.mu.Unlock()
	}
	return nil
}

// Names lists the node's libraries (the folders under HOME/vtl).
func (l *Libraries) Names() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(l.home, "vtl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (l *Libraries) lib(name string) (library.Changer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lib := l.libs[name]; lib != nil {
		return lib, nil
	}
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return nil, fmt.Errorf("%w: library name %q", errBadRequest, name)
	}
	lib, err := library.OpenChanger(home.LibraryDir(l.home, name), l.hw)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no library %q on this node: %w", name, library.ErrNotLibrary)
	}
	if err != nil {
		return nil, err
	}
	l.libs[name] = lib
	return lib, nil
}

func (l *Libraries) add(v any) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, tape.ErrClosed
	}
	l.next++
	switch h := v.(type) {
	case *driveHandle:
		l.drives[l.next] = h
	case *devHandle:
		l.devices[l.next] = h
	}
	return l.next, nil
}

func (l *Libraries) drive(r *http.Request) (int64, *driveHandle, error) {
	id, err := strconv.ParseInt(r.PathValue("h"), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: handle %q", errBadRequest, r.PathValue("h"))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.drives[id]
	if d == nil {
		return 0, nil, fmt.Errorf("drive handle %d: %w", id, ErrNoHandle)
	}
	return id, d, nil
}

func (l *Libraries) device(r *http.Request) (int64, tape.Device, error) {
	id, err := strconv.ParseInt(r.PathValue("d"), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: handle %q", errBadRequest, r.PathValue("d"))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.devices[id]
	if d == nil {
		return 0, nil, fmt.Errorf("device handle %d: %w", id, ErrNoHandle)
	}
	return id, d.dev, nil
}

// dropDevice forgets the device a drive had loaded (the drive closed it).
func (l *Libraries) dropDevice(d *driveHandle) {
	if d.dev != 0 {
		l.mu.Lock()
		delete(l.devices, d.dev)
		l.mu.Unlock()
		d.dev = 0
	}
}

func (l *Libraries) describe(id int64, barcode string, dev tape.Device) device {
	return device{Handle: id, Barcode: barcode, Label: dev.Label(), Used: dev.Used()}
}

// Handler is the protocol's HTTP handler.
func (l *Libraries) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, fn func(w http.ResponseWriter, r *http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			v, err := fn(w, r)
			if err != nil {
				writeErr(w, err)
				return
			}
			if v != nil {
				_ = writeJSON(w, v)
			}
		})
	}
	h("GET /libraries", l.list)
	h("POST /libraries", l.create)
	h("GET /libraries/{lib}", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		return LibraryInfo{Config: lib.Config(), Dir: lib.Config().Dir}, nil
	})
	h("GET /libraries/{lib}/status", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		return lib.Status()
	})
	h("GET /libraries/{lib}/tapes", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		return lib.Tapes()
	})
	h("GET /libraries/{lib}/drives", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		return lib.Drives()
	})
	h("POST /libraries/{lib}/drives/{n}", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil {
			return nil, fmt.Errorf("%w: drive %q", errBadRequest, r.PathValue("n"))
		}
		var s driveSettings
		if err := readJSON(r.Body, &s); err != nil {
			return nil, err
		}
		return struct{}{}, lib.SetDrive(n, s.BlockSize, s.BufferSize)
	})
	h("POST /libraries/{lib}/tapes/{bc}/{op}", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		bc := r.PathValue("bc")
		switch r.PathValue("op") {
		case "export":
			err = lib.Export(bc)
		case "import":
			err = lib.Import(bc)
		case "full":
			err = lib.MarkFull(bc)
		case "erase":
			err = lib.Erase(bc)
		case "open":
			dev, err := lib.OpenTape(bc)
			if err != nil {
				return nil, err
			}
			id, err := l.add(&devHandle{dev: dev})
			if err != nil {
				dev.Close()
				return nil, err
			}
			return l.describe(id, bc, dev), nil
		default:
			return nil, fmt.Errorf("%w: no operation %q", errBadRequest, r.PathValue("op"))
		}
		return struct{}{}, err
	})
	h("POST /libraries/{lib}/add", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil {
			return nil, fmt.Errorf("%w: tapes %q", errBadRequest, r.URL.Query().Get("n"))
		}
		a, ok := lib.(interface{ AddTapes(int) ([]string, error) })
		if !ok {
			return nil, fmt.Errorf("library %s: %w: its tapes are the cartridges in its changer (put new ones into a mail slot and import them with kura tape import)", r.PathValue("lib"), library.ErrTapeLibrary)
		}
		return a.AddTapes(n)
	})
	h("DELETE /libraries/{lib}", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		rm, ok := lib.(interface{ Remove() error })
		if !ok {
			return nil, fmt.Errorf("library %s cannot be removed: %w", r.PathValue("lib"), library.ErrUnsupported)
		}
		if err := rm.Remove(); err != nil {
			return nil, err
		}
		l.mu.Lock()
		delete(l.libs, r.PathValue("lib"))
		l.mu.Unlock()
		return struct{}{}, nil
	})
	h("POST /libraries/{lib}/acquire", func(w http.ResponseWriter, r *http.Request) (any, error) {
		lib, err := l.lib(r.PathValue("lib"))
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("drive"))
		drv, err := lib.Acquire(r.Context(), n)
		if err != nil {
			return nil, err
		}
		id, err := l.add(&driveHandle{lib: lib, drv: drv})
		if err != nil {
			drv.Release()
			return nil, err
		}
		return acquired{Handle: id, Number: drv.Number()}, nil
	})
	h("POST /drives/{h}/{op}", l.driveOp)
	h("GET /devices/{d}", func(w http.ResponseWriter, r *http.Request) (any, error) {
		id, dev, err := l.device(r)
		if err != nil {
			return nil, err
		}
		return l.describe(id, dev.Label().Barcode, dev), nil
	})
	h("GET /devices/{d}/files", func(w http.ResponseWriter, r *http.Request) (any, error) {
		_, dev, err := l.device(r)
		if err != nil {
			return nil, err
		}
		fs, err := dev.Files()
		if fs == nil && err == nil {
			fs = []tape.FileInfo{}
		}
		return fs, err
	})
	h("POST /devices/{d}/close", func(w http.ResponseWriter, r *http.Request) (any, error) {
		id, err := strconv.ParseInt(r.PathValue("d"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: handle %q", errBadRequest, r.PathValue("d"))
		}
		l.mu.Lock()
		d := l.devices[id]
		if d != nil && !d.owned {
			delete(l.devices, id)
		}
		l.mu.Unlock()
		if d == nil {
			return nil, fmt.Errorf("device handle %d: %w", id, ErrNoHandle)
		}
		if d.owned {
			return struct{}{}, nil // the drive closes it
		}
		return struct{}{}, d.dev.Close()
	})
	h("POST /devices/{d}/span", l.openSpan)
	h("POST /libraries/{lib}/read", l.openRead)
	h("POST /reads/{t}/cancel", l.cancelRead)
	h("POST /agents/{name}/cancel", l.cancelAgent)
	mux.HandleFunc("GET /spans/{t}/events", l.spanEvents)
	h("POST /spans/{t}/close", func(w http.ResponseWriter, r *http.Request) (any, error) {
		s, err := l.span(r)
		if err != nil {
			return nil, err
		}
		var c api.BackupClose
		if err := readJSON(r.Body, &c); err != nil {
			return nil, err
		}
		select {
		case s.closeCh <- c:
		default:
			return nil, fmt.Errorf("%w: the span session is closed already", errBadRequest)
		}
		return struct{}{}, nil
	})
	h("POST /spans/{t}/cancel", func(w http.ResponseWriter, r *http.Request) (any, error) {
		s, err := l.span(r)
		if err != nil {
			return nil, err
		}
		s.end(fmt.Errorf("the server cancelled the backup: %s", r.URL.Query().Get("why")))
		return struct{}{}, nil
	})
	mux.HandleFunc("POST /devices/{d}/append", l.appendFile)
	mux.HandleFunc("GET /devices/{d}/files/{n}", l.readFile)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, fmt.Errorf("%w: no call %s %s", errBadRequest, r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		closed := l.closed
		if !closed {
			l.calls.Add(1)
		}
		l.mu.Unlock()
		if closed {
			writeErr(w, errSessionEnded)
			return
		}
		defer l.calls.Done()
		mux.ServeHTTP(w, r)
	})
}

func (l *Libraries) list(w http.ResponseWriter, r *http.Request) (any, error) {
	names, err := l.Names()
	if err != nil {
		return nil, err
	}
	out := []LibraryInfo{}
	for _, n := range names {
		lib, err := l.lib(n)
		if err != nil {
			continue // not a library: left out
		}
		out = append(out, LibraryInfo{Config: lib.Config(), Dir: lib.Config().Dir})
	}
	return out, nil
}

func (l *Libraries) create(w http.ResponseWriter, r *http.Request) (any, error) {
	var req createLibrary
	if err := readJSON(r.Body, &req); err != nil {
		return nil, err
	}
	cfg := req.Config
	if cfg.Name == "" || cfg.Name != filepath.Base(cfg.Name) || cfg.Name[0] == '.' {
		return nil, fmt.Errorf("%w: library name %q", library.ErrInvalidConfig, cfg.Name)
	}
	cfg.Dir = home.LibraryDir(l.home, cfg.Name)
	// The node reaches the media itself: the bucket with the credentials
	// of its own environment, the changer and drives on its own machine.
	var (
		lib library.Changer
		err error
	)
	if cfg.Media != nil && cfg.Media.Kind == library.MediaChanger {
		lib, err = library.CreateTapeLibrary(cfg, l.hw)
	} else {
		lib, err = library.Create(cfg)
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.libs[cfg.Name] = lib
	l.mu.Unlock()
	return LibraryInfo{Config: lib.Config(), Dir: lib.Config().Dir}, nil
}

func (l *Libraries) driveOp(w http.ResponseWriter, r *http.Request) (any, error) {
	id, d, err := l.drive(r)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch op := r.PathValue("op"); op {
	case "load", "loadwritable":
		l.dropDevice(d)
		var (
			dev tape.Device
			bc  string
		)
		if op == "load" {
			bc = r.URL.Query().Get("barcode")
			dev, err = d.drv.Load(bc)
		} else {
			var req loadWritable
			if err := readJSON(r.Body, &req); err != nil {
				return nil, err
			}
			var allow library.TapeFilter
			if req.Allow != nil {
				allow = func(barcode string, blank bool) bool { return slices.Contains(req.Allow, barcode) }
			}
			dev, bc, err = d.drv.LoadWritableIf(allow, req.Exclude...)
		}
		if err != nil {
			return nil, err
		}
		dh, err := l.add(&devHandle{dev: dev, owned: true})
		if err != nil {
			return nil, err
		}
		d.dev = dh
		return l.describe(dh, bc, dev), nil
	case "unload":
		l.dropDevice(d)
		return struct{}{}, d.drv.Unload()
	case "release":
		l.dropDevice(d)
		l.mu.Lock()
		delete(l.drives, id)
		l.mu.Unlock()
		return struct{}{}, d.drv.Release()
	default:
		return nil, fmt.Errorf("%w: no drive operation %q", errBadRequest, op)
	}
}

// appendFile writes the request body as a new tape file. It answers its
// headers at once (the bytes left before early warning), then reads the
// body; the file is finished only when the body ends with the Kura-Written
// trailer naming every byte received, and aborted otherwise (a broken or
// cancelled stream). The answer's body is the finished file's FileInfo.
func (l *Libraries) appendFile(w http.ResponseWriter, r *http.Request) {
	_, dev, err := l.device(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	fw, err := dev.Append(r.URL.Query().Get("tag"))
	if err != nil {
		writeErr(w, err)
		return
	}
	remaining := int64(-1)
	if rm, ok := fw.(tape.Remainer); ok {
		remaining = rm.Remaining()
	}
	w.Header().Set(hdrRemaining, strconv.FormatInt(remaining, 10))
	w.Header().Set(hdrCapacity, strconv.FormatInt(dev.Label().Capacity-dev.Used(), 10))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	n, err := io.CopyBuffer(fw, r.Body, make([]byte, 256<<10))
	if err == nil && r.Trailer.Get(trlWritten) != strconv.FormatInt(n, 10) {
		err = fmt.Errorf("the append stream ended after %d bytes without its end mark: %w", n, tape.ErrIncomplete)
	}
	if err != nil {
		fw.Abort()
		_ = json.NewEncoder(w).Encode(struct {
			Error *wireError `json:"error"`
		}{Error: ptr(toWire(err))})
		return
	}
	info, err := fw.Finish()
	var out struct {
		Info  *tape.FileInfo `json:"info,omitempty"`
		Error *wireError     `json:"error,omitempty"`
	}
	if err != nil {
		out.Error = ptr(toWire(err))
	} else {
		out.Info = &info
	}
	_ = json.NewEncoder(w).Encode(out)
}

func ptr[T any](v T) *T { return &v }

// readFile streams tape file n from ?offset= to its end, every block
// checked by the node's reader; a failure after the headers goes out as the
// Kura-Error trailer.
func (l *Libraries) readFile(w http.ResponseWriter, r *http.Request) {
	_, dev, err := l.device(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	n, err1 := strconv.Atoi(r.PathValue("n"))
	off, err2 := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err1 != nil || err2 != nil || off < 0 {
		writeErr(w, fmt.Errorf("%w: tape file %q at offset %q", errBadRequest, r.PathValue("n"), r.URL.Query().Get("offset")))
		return
	}
	fr, err := dev.Open(n)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer fr.Close()
	if off > 0 {
		if _, err := fr.Seek(off, io.SeekStart); err != nil {
			writeErr(w, err)
			return
		}
	}
	ib, _ := json.Marshal(fr.Info())
	w.Header().Set(hdrInfo, string(ib))
	w.Header().Set("Trailer", trlError)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if _, err := io.CopyBuffer(w, fr, make([]byte, 256<<10)); err != nil && r.Context().Err() == nil {
		eb, _ := json.Marshal(toWire(err))
		w.Header().Set(trlError, string(eb))
	}
}

// errSessionEnded: the session that held a handle ended.
var errSessionEnded = errors.New("the server's session ended")
