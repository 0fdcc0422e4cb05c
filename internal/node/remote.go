package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
)

// callTimeout bounds a call about the inventory or a handle (not a data
// stream, not Acquire, which waits as long as its context): a node that
// stops answering fails the job instead of holding it.
const callTimeout = 2 * time.Minute

// Conn is the server's end of one node's protocol: an HTTP client whose
// requests reach the node (through the tunnel the node dialled).
type Conn struct {
	Node string       // the node's name, in errors
	HC   *http.Client // requests to http://node/…
	// DataURL is the node's data port (https://HOST:PORT), where agents
	// send backups straight to the node; "" when it has none.
	DataURL string
}

const base = "http://node"

func (c *Conn) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		return nil, fmt.Errorf("storage node %s: %w", c.Node, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, c.readErr(resp)
	}
	return resp, nil
}

func (c *Conn) readErr(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var we wireError
	if json.Unmarshal(b, &we) != nil || we.Message == "" {
		return fmt.Errorf("storage node %s answered %d: %s", c.Node, resp.StatusCode, bytes.TrimSpace(b))
	}
	return we.err(c.Node)
}

// call sends in (if not nil) as JSON and decodes the answer into out (if
// not nil), within callTimeout.
func (c *Conn) call(ctx context.Context, method, path string, in, out any) error {
	if ctx == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSON)).Decode(out); err != nil {
		return fmt.Errorf("storage node %s: reading the answer to %s %s: %w", c.Node, method, path, err)
	}
	return nil
}

// Libraries lists the node's libraries.
func (c *Conn) Libraries() ([]LibraryInfo, error) {
	var out []LibraryInfo
	return out, c.call(nil, "GET", "/libraries", nil, &out)
}

// CreateLibrary creates a library on the node (in its home's vtl folder;
// cfg.Dir is ignored) — a folder library, or on the media cfg.Media names:
// an S3 bucket the node reaches with its own credentials, or a changer and
// drives on the node's machine — and returns it as a Changer.
func (c *Conn) CreateLibrary(cfg library.Config) (*Remote, error) {
	var info LibraryInfo
	cfg.Dir = ""
	if err := c.call(nil, "POST", "/libraries", createLibrary{Config: cfg}, &info); err != nil {
		return nil, err
	}
	info.Config.Dir = info.Dir
	return &Remote{c: c, cfg: info.Config}, nil
}

// Library opens a library of the node as a Changer.
func (c *Conn) Library(name string) (*Remote, error) {
	var info LibraryInfo
	if err := c.call(nil, "GET", "/libraries/"+url.PathEscape(name), nil, &info); err != nil {
		return nil, err
	}
	info.Config.Dir = info.Dir
	return &Remote{c: c, cfg: info.Config}, nil
}

// Remote is a library on a storage node, as a library.Changer: every call
// goes to the node, every device it hands out reads and writes the node's
// tapes. Config is as the node had it when the Remote was made.
type Remote struct {
	c   *Conn
	cfg library.Config
}

var (
	_ library.Changer = (*Remote)(nil)
	_ library.Drive   = (*remoteDrive)(nil)
	_ tape.Device     = (*remoteDevice)(nil)
	_ tape.Remainer   = (*remainWriter)(nil)
)

// Node is the name of the node the library lives on.
func (r *Remote) Node() string { return r.c.Node }

func (r *Remote) path(rest string) string { return "/libraries/" + url.PathEscape(r.cfg.Name) + rest }

func (r *Remote) Config() library.Config { return r.cfg }

func (r *Remote) Status() (library.Status, error) {
	var st library.Status
	return st, r.c.call(nil, "GET", r.path("/status"), nil, &st)
}

func (r *Remote) Tapes() ([]library.TapeStatus, error) {
	var ts []library.TapeStatus
	return ts, r.c.call(nil, "GET", r.path("/tapes"), nil, &ts)
}

func (r *Remote) Drives() ([]library.DriveStatus, error) {
	var ds []library.DriveStatus
	return ds, r.c.call(nil, "GET", r.path("/drives"), nil, &ds)
}

func (r *Remote) SetDrive(n int, blockSize, bufferSize int) error {
	return r.c.call(nil, "POST", r.path("/drives/"+strconv.Itoa(n)), driveSettings{BlockSize: blockSize, BufferSize: bufferSize}, nil)
}

func (r *Remote) tapeOp(barcode, op string) error {
	return r.c.call(nil, "POST", r.path("/tapes/"+url.PathEscape(barcode)+"/"+op), nil, nil)
}

func (r *Remote) Export(barcode string) error   { return r.tapeOp(barcode, "export") }
func (r *Remote) Import(barcode string) error   { return r.tapeOp(barcode, "import") }
func (r *Remote) MarkFull(barcode string) error { return r.tapeOp(barcode, "full") }
func (r *Remote) Erase(barcode string) error    { return r.tapeOp(barcode, "erase") }

// AddTapes adds n blank, labelled tapes to the library on the node and
// returns their barcodes.
func (r *Remote) AddTapes(n int) ([]string, error) {
	var out []string
	return out, r.c.call(nil, "POST", r.path("/add?n="+strconv.Itoa(n)), nil, &out)
}

// Remove deletes the library and its tapes on the node.
func (r *Remote) Remove() error { return r.c.call(nil, "DELETE", r.path(""), nil, nil) }

func (r *Remote) OpenTape(barcode string) (tape.Device, error) {
	var d device
	if err := r.c.call(nil, "POST", r.path("/tapes/"+url.PathEscape(barcode)+"/open"), nil, &d); err != nil {
		return nil, err
	}
	return r.c.newDevice(d, false), nil
}

func (r *Remote) Acquire(ctx context.Context, n int) (library.Drive, error) {
	var a acquired
	if err := r.c.call(ctx, "POST", r.path("/acquire?drive="+strconv.Itoa(n)), nil, &a); err != nil {
		return nil, err
	}
	return &remoteDrive{r: r, h: a.Handle, n: a.Number}, nil
}

// remoteDrive is a drive leased on the node.
type remoteDrive struct {
	r        *Remote
	h        int64
	n        int
	cur      *remoteDevice
	released bool
}

func (d *remoteDrive) Number() int { return d.n }

func (d *remoteDrive) op(op string, in any, out any) error {
	if d.released {
		return library.ErrReleased
	}
	return d.r.c.call(nil, "POST", "/drives/"+strconv.FormatInt(d.h, 10)+"/"+op, in, out)
}

func (d *remoteDrive) loaded(dv device) *remoteDevice {
	if d.cur != nil {
		d.cur.markClosed()
	}
	d.cur = d.r.c.newDevice(dv, true)
	return d.cur
}

func (d *remoteDrive) Load(barcode string) (tape.Device, error) {
	var dv device
	if err := d.op("load?barcode="+url.QueryEscape(barcode), nil, &dv); err != nil {
		return nil, err
	}
	return d.loaded(dv), nil
}

func (d *remoteDrive) LoadWritable(exclude ...string) (tape.Device, string, error) {
	return d.LoadWritableIf(nil, exclude...)
}

// LoadWritableIf evaluates allow here, on the library's tapes as the node
// lists them, and sends the node the barcodes it accepts; the node makes
// the choice among them under its library lock.
func (d *remoteDrive) LoadWritableIf(allow library.TapeFilter, exclude ...string) (tape.Device, string, error) {
	req := loadWritable{Exclude: exclude}
	if req.Exclude == nil {
		req.Exclude = []string{}
	}
	if allow != nil {
		tapes, err := d.r.Tapes()
		if err != nil {
			return nil, "", err
		}
		req.Allow = []string{}
		for _, t := range tapes {
			if allow(t.Barcode, t.State == library.StateBlank) {
				req.Allow = append(req.Allow, t.Barcode)
			}
		}
	}
	var dv device
	if err := d.op("loadwritable", req, &dv); err != nil {
		return nil, "", err
	}
	return d.loaded(dv), dv.Barcode, nil
}

func (d *remoteDrive) Unload() error {
	if d.cur != nil {
		d.cur.markClosed()
		d.cur = nil
	}
	return d.op("unload", nil, nil)
}

func (d *remoteDrive) Release() error {
	if d.released {
		return nil
	}
	if d.cur != nil {
		d.cur.markClosed()
		d.cur = nil
	}
	err := d.op("release", nil, nil)
	d.released = true
	return err
}

// remoteDevice is a tape device open on the node.
type remoteDevice struct {
	c     *Conn
	h     int64
	label tape.Label
	owned bool // belongs to a drive: Close only forgets it

	mu     sync.Mutex
	used   int64
	closed bool
}

func (c *Conn) newDevice(d device, owned bool) *remoteDevice {
	return &remoteDevice{c: c, h: d.Handle, label: d.Label, used: d.Used, owned: owned}
}

func (d *remoteDevice) path(rest string) string {
	return "/devices/" + strconv.FormatInt(d.h, 10) + rest
}

func (d *remoteDevice) markClosed() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

func (d *remoteDevice) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *remoteDevice) Label() tape.Label { return d.label }

// Used asks the node; if it cannot answer, the last figure known.
func (d *remoteDevice) Used() int64 {
	if !d.isClosed() {
		var dv device
		if err := d.c.call(nil, "GET", d.path(""), nil, &dv); err == nil {
			d.mu.Lock()
			d.used = dv.Used
			d.mu.Unlock()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used
}

func (d *remoteDevice) Files() ([]tape.FileInfo, error) {
	if d.isClosed() {
		return nil, tape.ErrClosed
	}
	var fs []tape.FileInfo
	return fs, d.c.call(nil, "GET", d.path("/files"), nil, &fs)
}

func (d *remoteDevice) Close() error {
	d.mu.Lock()
	was := d.closed
	d.closed = true
	d.mu.Unlock()
	if was || d.owned {
		return nil
	}
	return d.c.call(nil, "POST", d.path("/close"), nil, nil)
}

// Append starts a tape file on the node: one request whose body is the
// file, sent as it is written. The node answers its headers at once with
// the bytes left before early warning.
func (d *remoteDevice) Append(tag string) (tape.FileWriter, error) {
	if d.isClosed() {
		return nil, tape.ErrClosed
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", base+d.path("/append?tag="+url.QueryEscape(tag)), pr)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Trailer = http.Header{trlWritten: nil}
	req.ContentLength = -1
	resp, err := d.c.HC.Do(req)
	if err != nil {
		cancel()
		pw.Close()
		return nil, fmt.Errorf("storage node %s: %w", d.c.Node, err)
	}
	if resp.StatusCode >= 300 {
		err := d.c.readErr(resp)
		resp.Body.Close()
		cancel()
		pw.Close()
		return nil, err
	}
	rem, err := strconv.ParseInt(resp.Header.Get(hdrRemaining), 10, 64)
	if err != nil {
		rem = -1
	}
	capLeft, err := strconv.ParseInt(resp.Header.Get(hdrCapacity), 10, 64)
	if err != nil {
		capLeft = -1
	}
	w := &remoteWriter{d: d, req: req, pw: pw, resp: resp, cancel: cancel, remaining: rem, capLeft: capLeft}
	if rem >= 0 {
		return &remainWriter{w}, nil
	}
	return w, nil
}

// remoteWriter is a tape file being written on the node.
type remoteWriter struct {
	d         *remoteDevice
	req       *http.Request
	pw        *io.PipeWriter
	resp      *http.Response
	cancel    context.CancelFunc
	remaining int64 // before early warning when the file began; -1 unknown
	capLeft   int64 // before the end of the tape when the file began; -1 unknown
	written   int64
	err       error // sticky
	done      bool
}

type remainWriter struct{ *remoteWriter }

// Remaining is the bytes left before early warning.
func (w *remainWriter) Remaining() int64 { return w.remaining - w.written }

func (w *remoteWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, tape.ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	var eom error
	if w.capLeft >= 0 && w.written+int64(len(p)) > w.capLeft {
		// The tape ends here: what fits goes, then the sticky end of
		// media, as a drive says it (the node would say the same).
		p = p[:max(w.capLeft-w.written, 0)]
		eom = fmt.Errorf("storage node %s: tape %s: %w", w.d.c.Node, w.d.label.Barcode, tape.ErrEndOfMedia)
	}
	n, err := w.pw.Write(p)
	w.written += int64(n)
	if err == nil && eom != nil {
		w.err = eom
		return n, eom
	}
	if err != nil {
		// The node stopped taking the stream: its answer says why.
		_, w.err = w.result()
		if w.err == nil {
			w.err = fmt.Errorf("storage node %s: the append stream broke: %w", w.d.c.Node, err)
		}
		return n, w.err
	}
	return n, nil
}

func (w *remoteWriter) Written() int64 { return w.written }

func (w *remoteWriter) EarlyWarning() bool { return w.remaining >= 0 && w.written >= w.remaining }

// result reads the node's final answer (once).
func (w *remoteWriter) result() (tape.FileInfo, error) {
	defer w.cancel()
	defer w.resp.Body.Close()
	var out struct {
		Info  *tape.FileInfo `json:"info"`
		Error *wireError     `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(w.resp.Body, maxJSON)).Decode(&out); err != nil {
		return tape.FileInfo{}, fmt.Errorf("storage node %s: the tape file's end: %w", w.d.c.Node, err)
	}
	if out.Error != nil {
		return tape.FileInfo{}, out.Error.err(w.d.c.Node)
	}
	if out.Info == nil {
		return tape.FileInfo{}, fmt.Errorf("storage node %s: no answer for the tape file", w.d.c.Node)
	}
	return *out.Info, nil
}

// Finish ends the body with the trailer that names its length: only then
// does the node write the filemark.
func (w *remoteWriter) Finish() (tape.FileInfo, error) {
	if w.done {
		return tape.FileInfo{}, tape.ErrClosed
	}
	w.done = true
	if w.err != nil {
		w.pw.Close() // without the trailer: the node aborts the file
		_, _ = w.result()
		return tape.FileInfo{}, w.err
	}
	w.req.Trailer.Set(trlWritten, strconv.FormatInt(w.written, 10))
	w.pw.Close()
	info, err := w.result()
	if err != nil {
		w.err = err
	}
	return info, err
}

// Abort ends the body without the trailer: the node aborts the file. It
// returns once the node has.
func (w *remoteWriter) Abort() error {
	if w.done {
		return tape.ErrClosed
	}
	w.done = true
	w.pw.Close() // without the trailer: the node aborts the file
	_, _ = w.result()
	return nil
}

// Open opens tape file n on the node for reading.
func (d *remoteDevice) Open(n int) (tape.FileReader, error) {
	if d.isClosed() {
		return nil, tape.ErrClosed
	}
	r := &remoteReader{d: d, n: n}
	if err := r.open(0); err != nil {
		return nil, err
	}
	return r, nil
}

// remoteReader reads a tape file from the node: one streamed answer from
// the current offset; a seek drops it and the next read asks again.
type remoteReader struct {
	d      *remoteDevice
	n      int
	info   tape.FileInfo
	off    int64
	body   io.ReadCloser
	resp   *http.Response
	cancel context.CancelFunc
	closed bool
	err    error
}

func (r *remoteReader) open(off int64) error {
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := r.d.c.do(ctx, "GET", r.d.path(fmt.Sprintf("/files/%d?offset=%d", r.n, off)), nil)
	if err != nil {
		cancel()
		return err
	}
	if err := json.Unmarshal([]byte(resp.Header.Get(hdrInfo)), &r.info); err != nil {
		resp.Body.Close()
		cancel()
		return fmt.Errorf("storage node %s: tape file %d: %w", r.d.c.Node, r.n, err)
	}
	r.resp, r.body, r.cancel, r.off = resp, resp.Body, cancel, off
	return nil
}

func (r *remoteReader) drop() {
	if r.body != nil {
		r.cancel()
		r.body.Close()
		r.body, r.resp = nil, nil
	}
}

func (r *remoteReader) Info() tape.FileInfo { return r.info }

func (r *remoteReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	if r.err != nil {
		return 0, r.err
	}
	if r.body == nil {
		if r.off >= r.info.Bytes {
			return 0, io.EOF
		}
		if err := r.open(r.off); err != nil {
			r.err = err
			return 0, err
		}
	}
	n, err := r.body.Read(p)
	r.off += int64(n)
	if err == io.EOF {
		if t := r.resp.Trailer.Get(trlError); t != "" {
			var we wireError
			if json.Unmarshal([]byte(t), &we) == nil {
				err = we.err(r.d.c.Node)
			} else {
				err = fmt.Errorf("storage node %s: reading tape file %d: %s", r.d.c.Node, r.n, t)
			}
			r.err = err
		}
	} else if err != nil {
		err = fmt.Errorf("storage node %s: reading tape file %d: %w", r.d.c.Node, r.n, err)
		r.err = err
	}
	return n, err
}

func (r *remoteReader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, tape.ErrClosed
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.off + offset
	case io.SeekEnd:
		abs = r.info.Bytes + offset
	default:
		return 0, errors.New("node: bad whence")
	}
	if abs < 0 {
		return 0, errors.New("node: negative position")
	}
	if abs != r.off || r.err != nil {
		r.drop()
		r.err = nil
		r.off = abs
	}
	return abs, nil
}

func (r *remoteReader) Close() error {
	if r.closed {
		return tape.ErrClosed
	}
	r.closed = true
	r.drop()
	return nil
}

// SpanOn says whether dev is a device of a node whose data port agents can
// send to, and gives its connection and handle for OpenSpan.
func SpanOn(dev tape.Device) (*Conn, int64, bool) {
	d, ok := dev.(*remoteDevice)
	if !ok || d.c.DataURL == "" || d.isClosed() {
		return nil, 0, false
	}
	return d.c, d.h, true
}

// OpenSpan opens a span session on device handle dev (SpanOn).
func (c *Conn) OpenSpan(dev int64, req SpanRequest) (SpanOpened, error) {
	var out SpanOpened
	return out, c.call(nil, "POST", "/devices/"+strconv.FormatInt(dev, 10)+"/span", req, &out)
}

// SpanEvents follows a session: fn gets each progress or warning message
// (the agent's JSON), and SpanEvents returns the result. ctx ends the
// following (not the session: CancelSpan does).
func (c *Conn) SpanEvents(ctx context.Context, ticket string, progress, warning func(json.RawMessage)) (*SpanResult, error) {
	resp, err := c.do(ctx, "GET", "/spans/"+url.PathEscape(ticket)+"/events", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev spanEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("storage node %s: following the backup stream: %w", c.Node, err)
		}
		switch {
		case ev.Result != nil:
			return ev.Result, nil
		case ev.Progress != nil:
			progress(ev.Progress)
		case ev.Warning != nil:
			warning(ev.Warning)
		}
	}
}

// CloseSpan hands the node the answer for the agent (the final frame
// table and the saveset record).
func (c *Conn) CloseSpan(ticket string, v any) error {
	return c.call(nil, "POST", "/spans/"+url.PathEscape(ticket)+"/close", v, nil)
}

// CancelSpan ends a session: the agent's stream is cut, the part being
// written aborted.
func (c *Conn) CancelSpan(ticket, why string) error {
	return c.call(nil, "POST", "/spans/"+url.PathEscape(ticket)+"/cancel?why="+url.QueryEscape(why), nil, nil)
}
