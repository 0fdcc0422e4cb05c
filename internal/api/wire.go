package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// A backup's data stream (POST /api/v1/agent/jobs/ID/data) is a sequence
// of messages, each
//
//	type  uint8   'F' frame, 'P' progress, 'W' warning, 'E' end, 'X' abort
//	len   uint32  big-endian length of the payload
//	payload
//
// A frame's payload is the frame exactly as it goes to tape (a zstd
// frame); the agent keeps the frames' uncompressed offsets and sizes for its
// index, the server answers with where each frame landed. Progress
// is a JSON Progress (running totals), a warning a JSON Warning, the end a
// JSON BackupEnd. A stream that stops before 'E' is a failed backup.
const (
	MsgFrame    = 'F'
	MsgProgress = 'P'
	MsgWarning  = 'W'
	MsgEnd      = 'E'
	MsgAbort    = 'X' // the agent gives up: a JSON Warning whose Message says why
)

// MaxMsg bounds a message payload: a frame of the largest size, raw, plus
// its overheads.
const MaxMsg = 33 << 20

// MaxJSONMsg bounds the JSON messages.
const MaxJSONMsg = 64 << 10

// ErrBadMsg: the stream is not a sequence of valid messages.
var ErrBadMsg = errors.New("malformed data stream")

// Warning is a warning message of a data stream. A path that is not valid
// UTF-8 would not survive JSON (its bytes become U+FFFD), so the sender
// puts it in PathBytes too (NewWarning); FilePath gives it back.
type Warning struct {
	Path      string `json:"path"`
	PathBytes []byte `json:"path_bytes,omitempty"`
	Message   string `json:"message"`
}

// NewWarning returns the warning for path, which keeps its bytes as they
// are whatever they are.
func NewWarning(path, message string) Warning {
	w := Warning{Path: path, Message: message}
	if !utf8.ValidString(path) {
		w.PathBytes = []byte(path)
	}
	return w
}

// FilePath is the path the warning is about, bytes and all.
func (w Warning) FilePath() string {
	if w.PathBytes != nil {
		return string(w.PathBytes)
	}
	return w.Path
}

// smallMsg is the largest payload WriteMsg sends in the same Write as its
// header: figures, warnings and the end fit; a frame goes as it is, not
// copied.
const smallMsg = 4 << 10

// WriteMsg writes one message: a small one (figures, warnings) in one
// Write, header and payload together, so that a connection sends it as one
// piece; a larger one as its header, then each payload slice as it is.
func WriteMsg(w io.Writer, typ byte, payload ...[]byte) error {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(n))
	if n <= smallMsg {
		msg := append(make([]byte, 0, len(hdr)+n), hdr[:]...)
		for _, p := range payload {
			msg = append(msg, p...)
		}
		_, err := w.Write(msg)
		return err
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, p := range payload {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// ReadMsg reads one message into buf (grown as needed) and returns its type
// and payload. A clean end before a message gives io.EOF.
func ReadMsg(r io.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("%w: cut inside a message header", io.ErrUnexpectedEOF)
		}
		return 0, nil, err
	}
	typ, n := hdr[0], binary.BigEndian.Uint32(hdr[1:])
	limit := uint32(MaxJSONMsg)
	switch typ {
	case MsgFrame:
		limit = MaxMsg
	case MsgProgress, MsgWarning, MsgEnd, MsgAbort:
	default:
		return 0, nil, fmt.Errorf("%w: unknown message type %#x", ErrBadMsg, typ)
	}
	if n > limit {
		return 0, nil, fmt.Errorf("%w: message of %d bytes (at most %d)", ErrBadMsg, n, limit)
	}
	// The buffer grows with the bytes that arrive, not with the length the
	// header claims: a sender that declares a large message and stops
	// costs memory in proportion to what it sent.
	buf = buf[:0]
	for len(buf) < int(n) {
		next := int(n)
		if cap(buf) < next {
			next = min(next, max(2*cap(buf), 64<<10))
			buf = append(buf[:cap(buf)], make([]byte, next-cap(buf))...)[:len(buf)]
		}
		k, err := io.ReadFull(r, buf[len(buf):next])
		buf = buf[:len(buf)+k]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, fmt.Errorf("reading a message of %d bytes: %w", n, err)
		}
	}
	return typ, buf, nil
}
