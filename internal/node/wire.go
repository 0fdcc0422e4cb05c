package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/tape"
)

// The wire of the changer protocol: plain JSON bodies, each error a
// wireError naming the library's or the tape's sentinel it wraps, so that
// the server's engine tells a busy drive, a full tape or a corrupt block
// apart exactly as it does for a library of its own.

// wireError is an error answer (any status ≥ 400), and the trailer of a
// data stream that broke.
type wireError struct {
	Codes   []string           `json:"codes,omitempty"` // the keys of sentinels it wraps, none for any other error
	Message string             `json:"message"`
	Corrupt *tape.CorruptError `json:"corrupt,omitempty"`
}

// sentinels are the errors that keep their identity across the protocol.
// The keys are the protocol's: never reuse one for another error.
var sentinels = []struct {
	code string
	err  error
}{
	{"invalid_config", library.ErrInvalidConfig},
	{"exists", library.ErrExists},
	{"not_library", library.ErrNotLibrary},
	{"bad_inventory", library.ErrBadInventory},
	{"no_drive", library.ErrNoDrive},
	{"unknown_tape", library.ErrUnknownTape},
	{"exported", library.ErrExported},
	{"not_exported", library.ErrNotExported},
	{"no_free_slot", library.ErrNoFreeSlot},
	{"mail_slots_full", library.ErrMailSlotsFull},
	{"no_tape", library.ErrNoTape},
	{"drive_busy", library.ErrDriveBusy},
	{"released", library.ErrReleased},
	{"unsupported", library.ErrUnsupported},
	{"blank", tape.ErrBlank},
	{"bad_label", tape.ErrBadLabel},
	{"corrupt", tape.ErrCorrupt},
	{"truncated", tape.ErrTruncated},
	{"incomplete", tape.ErrIncomplete},
	{"end_of_media", tape.ErrEndOfMedia},
	{"no_such_file", tape.ErrNoSuchFile},
	{"busy", tape.ErrBusy},
	{"closed", tape.ErrClosed},
	{"no_handle", ErrNoHandle},
	{"tape_library", library.ErrTapeLibrary},
	{"changer", library.ErrChanger},
	{"no_device", library.ErrNoDevice},
}

// ErrNoHandle: a call names a drive, device or writer handle the node does
// not hold (it restarted, or the handle was released).
var ErrNoHandle = errors.New("no such handle on the node")

// toWire encodes err with the first sentinel it wraps.
func toWire(err error) wireError {
	we := wireError{Message: err.Error()}
	var ce *tape.CorruptError
	if errors.As(err, &ce) {
		c := *ce
		c.Err = nil
		we.Corrupt = &c
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			we.Codes = append(we.Codes, s.code)
		}
	}
	return we
}

// remoteError is an error the node answered with: its text is the node's,
// and errors.Is sees the sentinel it wrapped there.
type remoteError struct {
	node string
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return "storage node " + e.node + ": " + e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

// fromWire turns an answered error back into an error that wraps the same
// sentinel (and is a *tape.CorruptError when it was one).
func (we wireError) err(node string) error {
	re := &remoteError{node: node, msg: we.Message}
	for _, code := range we.Codes {
		for _, s := range sentinels {
			if s.code == code {
				re.errs = append(re.errs, s.err)
			}
		}
	}
	if we.Corrupt != nil {
		c := *we.Corrupt
		if len(re.errs) == 0 {
			re.errs = []error{tape.ErrCorrupt}
		}
		c.Err = re
		return &c
	}
	return re
}

// writeErr answers an error.
func writeErr(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNoHandle), errors.Is(err, library.ErrUnknownTape), errors.Is(err, tape.ErrNoSuchFile):
		status = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(toWire(err))
}

var errBadRequest = errors.New("bad request")

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// maxJSON bounds a JSON body of the protocol.
const maxJSON = 4 << 20

func readJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, maxJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

// LibraryInfo is a library of the node: its configuration and folder.
type LibraryInfo struct {
	Config library.Config `json:"config"`
	Dir    string         `json:"dir"`
}

// createLibrary asks the node to create a library (folder, S3 or tape).
type createLibrary struct {
	Config library.Config `json:"config"`
}

// driveSettings is SetDrive's request.
type driveSettings struct {
	BlockSize  int `json:"block_size"`
	BufferSize int `json:"buffer_size"`
}

// acquired is a leased drive.
type acquired struct {
	Handle int64 `json:"handle"`
	Number int   `json:"number"`
}

// loadWritable is LoadWritableIf's request. The server evaluates its tape
// filter on the library's tapes first and sends the barcodes it accepts
// (nil: every tape).
type loadWritable struct {
	Allow   []string `json:"allow"`
	Exclude []string `json:"exclude"`
}

// device is an open tape device on the node.
type device struct {
	Handle  int64      `json:"handle"`
	Barcode string     `json:"barcode"`
	Label   tape.Label `json:"label"`
	Used    int64      `json:"used"`
}

// Headers and trailers of the data calls.
const (
	hdrRemaining = "Kura-Remaining" // an append's bytes left before early warning
	hdrCapacity  = "Kura-Capacity"  // an append's bytes left before the end of the tape
	hdrInfo      = "Kura-File-Info" // a read's tape file (JSON tape.FileInfo)
	trlWritten   = "Kura-Written"   // an append's byte count, sent last: without it the node aborts
	trlError     = "Kura-Error"     // a read that broke: the wireError as JSON
)

// RefusedError: the server answered the tunnel request with an error
// (Status 401 or 403: not enrolled, revoked, not a node).
type RefusedError struct {
	Status int
	Body   string
}

func (e *RefusedError) Error() string {
	var ae struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(e.Body), &ae) == nil && ae.Message != "" {
		return fmt.Sprintf("the server refused the node (%d): %s", e.Status, ae.Message)
	}
	return fmt.Sprintf("the server refused the node (%d): %s", e.Status, e.Body)
}

func readBody(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return string(b)
}
