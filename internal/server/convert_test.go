package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
)

// fill sets every field of v (a pointer) to a value that is not zero, so
// a field the conversion forgets shows up in the JSON.
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, *n%60, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(t, v.Field(i), n)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage{}) {
			v.Set(reflect.ValueOf(json.RawMessage(`{"kind":"backup"}`)))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(t, v.Index(0), n)
		fill(t, v.Index(1), n)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint8, reflect.Uint32:
		v.SetUint(uint64(*n % 200))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		t.Fatalf("fill: %s", v.Type())
	}
}

func filled[T any](t *testing.T) *T {
	var v T
	n := 0
	fill(t, reflect.ValueOf(&v).Elem(), &n)
	return &v
}

// asMap is v's JSON as a map, with extra merged in: what the wire carried
// when the api types embedded the catalog's.
func asMap(t *testing.T, v any, extra map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, x := range extra {
		b, _ := json.Marshal(x)
		var y any
		_ = json.Unmarshal(b, &y)
		m[k] = y
	}
	return m
}

func sameWire(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		wb, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("%s on the wire changed:\ngot  %s\nwant %s", what, gb, wb)
	}
}

// TestWireKeepsJSONNames: the wire types are the API's own, but they carry
// every field of the records they are made from under the JSON names the
// API had when it sent those records (docs/api.md), so agents and clients
// of this version interoperate.
func TestWireKeepsJSONNames(t *testing.T) {
	c := filled[catalog.Client](t)
	sameWire(t, "client", asMap(t, APIClient(c, true), nil), asMap(t, c, map[string]any{"connected": true}))

	j, f := filled[catalog.Job](t), filled[monitor.Figures](t)
	sameWire(t, "job", asMap(t, APIJob(j, *f), nil), asMap(t, j, map[string]any{"figures": f}))

	ss := filled[catalog.Saveset](t)
	sameWire(t, "saveset", asMap(t, APISaveset(ss), nil), asMap(t, ss, nil))

	fr := *filled[[]index.Frame](t)
	sameWire(t, "frames", asMap(t, api.BackupClose{Frames: apiFrames(fr)}, nil),
		asMap(t, struct {
			Frames []index.Frame `json:"frames"`
			Meta   []byte        `json:"meta"`
		}{Frames: fr}, nil))

	// An agent's outcome comes back to the engine whole.
	o := filled[engine.RestoreOutcome](t)
	var wire api.RestoreOutcome
	b, _ := json.Marshal(o)
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if back := engineOutcome(wire); !reflect.DeepEqual(&back, o) {
		t.Errorf("restore outcome through the wire:\ngot  %+v\nwant %+v", back, *o)
	}
}

// TestEventOnTheWire: a job event crosses the event stream as api.Event
// under the JSON names the stream had when it sent the monitor's events,
// and comes back to the job monitor whole; an event without figures, or
// with empty lists, reads the same too.
func TestEventOnTheWire(t *testing.T) {
	for _, ev := range []*monitor.Event{
		filled[monitor.Event](t),
		{Kind: monitor.Progress, JobID: 3, Phase: "backup", Files: 2, Bytes: 10, Rate: 5, Tape: "KUR001"},
		{Kind: monitor.JobEnded, JobID: 4, Message: "failed", Figures: &monitor.Figures{Kind: "backup"}},
	} {
		sameWire(t, "event "+string(ev.Kind), asMap(t, APIEvent(*ev), nil), asMap(t, ev, nil))
		b, err := json.Marshal(APIEvent(*ev))
		if err != nil {
			t.Fatal(err)
		}
		var wire api.Event
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		back := MonitorEvent(wire)
		if ev.Figures != nil && ev.Figures.Tapes == nil {
			// The wire sends empty lists as [], never null.
			back.Figures.Tapes, back.Figures.Phases = nil, nil
		}
		if !reflect.DeepEqual(&back, ev) {
			t.Errorf("event through the wire:\ngot  %+v\nwant %+v", back, *ev)
		}
	}
}
