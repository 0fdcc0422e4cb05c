package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"slices"
	"testing"
)

func msg(typ byte, n uint32, payload []byte) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], n)
	return append(b, payload...)
}

// Messages round-trip; every malformed header or cut message is an error
// of the right kind.
func TestReadMsg(t *testing.T) {
	var b bytes.Buffer
	frame := bytes.Repeat([]byte{0xAB}, 200<<10)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(WriteMsg(&b, MsgFrame, frame[:100<<10], frame[100<<10:]))
	must(WriteMsg(&b, MsgProgress, []byte(`{"files":1}`)))
	must(WriteMsg(&b, MsgEnd))
	var buf []byte
	for _, want := range []struct {
		typ byte
		n   int
	}{{MsgFrame, len(frame)}, {MsgProgress, 11}, {MsgEnd, 0}} {
		typ, p, err := ReadMsg(&b, buf)
		if err != nil || typ != want.typ || len(p) != want.n {
			t.Fatalf("ReadMsg = %q, %d bytes, %v; want %q, %d bytes", typ, len(p), err, want.typ, want.n)
		}
		buf = p
	}
	if _, _, err := ReadMsg(&b, buf); err != io.EOF {
		t.Errorf("at the end: %v; want io.EOF", err)
	}

	for what, tc := range map[string]struct {
		in   []byte
		want error
	}{
		"unknown type":          {msg('Z', 0, nil), ErrBadMsg},
		"frame over MaxMsg":     {msg(MsgFrame, MaxMsg+1, nil), ErrBadMsg},
		"JSON over MaxJSONMsg":  {msg(MsgProgress, MaxJSONMsg+1, nil), ErrBadMsg},
		"length 0xFFFFFFFF":     {msg(MsgWarning, 0xFFFFFFFF, nil), ErrBadMsg},
		"cut header":            {[]byte{MsgFrame, 0, 0}, io.ErrUnexpectedEOF},
		"cut payload":           {msg(MsgEnd, 10, []byte("abc")), io.ErrUnexpectedEOF},
		"frame claiming MaxMsg": {msg(MsgFrame, MaxMsg, []byte("abc")), io.ErrUnexpectedEOF},
	} {
		if _, _, err := ReadMsg(bytes.NewReader(tc.in), nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", what, err, tc.want)
		}
	}
}

// A header that claims a large message followed by a few bytes costs
// memory in proportion to the bytes, not to the claim.
func TestReadMsgClaimCostsLittle(t *testing.T) {
	in := msg(MsgFrame, MaxMsg, bytes.Repeat([]byte{1}, 1000))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, _, err := ReadMsg(bytes.NewReader(in), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("a cut message: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 10<<20 {
		t.Errorf("10 cut messages claiming %d bytes allocated %d bytes", MaxMsg, got)
	}
}

// FuzzReadMsg: whatever the bytes, ReadMsg never panics, returns only known
// types with payloads within their limits, consumes exactly each message,
// and what it reads writes back to the same bytes.
func FuzzReadMsg(f *testing.F) {
	var b bytes.Buffer
	_ = WriteMsg(&b, MsgFrame, []byte{0x28, 0xB5, 0x2F, 0xFD, 1, 2, 3})
	_ = WriteMsg(&b, MsgProgress, []byte(`{"files":3,"bytes":9}`))
	_ = WriteMsg(&b, MsgWarning, []byte(`{"path":"/a","message":"m"}`))
	_ = WriteMsg(&b, MsgEnd, []byte(`{}`))
	f.Add(b.Bytes())
	f.Add(msg(MsgAbort, 2, []byte("{}")))
	f.Add(msg(MsgFrame, MaxMsg, nil))
	f.Add(msg('?', 1, []byte{0}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var out bytes.Buffer
		var buf []byte
		for {
			before := r.Len()
			typ, p, err := ReadMsg(r, buf)
			if err != nil {
				if err == io.EOF && before != 0 {
					t.Fatalf("io.EOF with %d bytes left", before)
				}
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrBadMsg) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			limit := MaxJSONMsg
			switch typ {
			case MsgFrame:
				limit = MaxMsg
			case MsgProgress, MsgWarning, MsgEnd, MsgAbort:
			default:
				t.Fatalf("type %#x returned", typ)
			}
			if len(p) > limit {
				t.Fatalf("payload of %d bytes for type %q", len(p), typ)
			}
			if used := before - r.Len(); used != 5+len(p) {
				t.Fatalf("consumed %d bytes for a %d-byte payload", used, len(p))
			}
			if err := WriteMsg(&out, typ, p); err != nil {
				t.Fatal(err)
			}
			buf = p
		}
		if !bytes.HasPrefix(in, out.Bytes()) {
			t.Fatalf("the messages read do not write back to the input")
		}
	})
}

// A warning about a file whose name is not valid UTF-8 names that file
// after the trip through JSON, not one with U+FFFD in its name.
func TestWarningKeepsANonUTF8Path(t *testing.T) {
	for _, path := range []string{"/srv/caf\xe9", "/srv/café", ""} {
		b, err := json.Marshal(NewWarning(path, "name is not valid UTF-8"))
		if err != nil {
			t.Fatal(err)
		}
		var w Warning
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if w.FilePath() != path || w.Message != "name is not valid UTF-8" {
			t.Errorf("%q came back as %q (%s)", path, w.FilePath(), b)
		}
	}
}

// writeLog keeps each Write as it came.
type writeLog [][]byte

func (w *writeLog) Write(p []byte) (int, error) {
	*w = append(*w, bytes.Clone(p))
	return len(p), nil
}

// A small message (figures, a warning, the end) is one Write, so that a
// bandwidth-limited connection sends it as one piece; a frame is its
// header, then its payload slices as they are (not copied).
func TestWriteMsgWrites(t *testing.T) {
	figures := []byte(`{"files":3,"bytes":1048576}`)
	frame := bytes.Repeat([]byte{0xCD}, smallMsg+1)
	for _, c := range []struct {
		name    string
		typ     byte
		payload [][]byte
		writes  []int
	}{
		{"progress", MsgProgress, [][]byte{figures}, []int{5 + len(figures)}},
		{"end", MsgEnd, nil, []int{5}},
		{"two small slices", MsgWarning, [][]byte{figures[:4], figures[4:]}, []int{5 + len(figures)}},
		{"largest small", MsgFrame, [][]byte{frame[:smallMsg]}, []int{5 + smallMsg}},
		{"frame", MsgFrame, [][]byte{frame[:100], frame[100:]}, []int{5, 100, len(frame) - 100}},
	} {
		var log writeLog
		if err := WriteMsg(&log, c.typ, c.payload...); err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for _, w := range log {
			sizes = append(sizes, len(w))
		}
		if !slices.Equal(sizes, c.writes) {
			t.Errorf("%s: writes of %v bytes, want %v", c.name, sizes, c.writes)
		}
		typ, p, err := ReadMsg(bytes.NewReader(bytes.Join(log, nil)), nil)
		if err != nil || typ != c.typ || !bytes.Equal(p, bytes.Join(c.payload, nil)) {
			t.Errorf("%s: read back %q, %d bytes, %v", c.name, typ, len(p), err)
		}
	}
}
