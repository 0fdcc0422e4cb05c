package monitor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/units"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// sampleFigures builds the figures of a job the way the engine does: meters
// fed under a fake clock, then Measure and Phase.Figures.
func sampleFigures() Figures {
	c := NewFakeClock(t0)
	files, source, media := NewMeter(c), NewMeter(c), NewMeter(c)
	backup := StartPhase(c, "backup")
	for sec := range 725 { // 12m 05s at 30 MiB/s, one busier second
		n := int64(30 << 20)
		if sec == 100 {
			n = 37 << 20
		}
		for _, m := range []*Meter{source, backup.Source} {
			m.Add(n)
		}
		for _, m := range []*Meter{media, backup.Media} {
			m.Add(n * 9 / 10)
		}
		files.Add(145)
		backup.Files.Add(145)
		c.Advance(time.Second)
	}
	backup.End()
	files.Stop()
	source.Stop()
	media.Stop()
	source.Add(1 << 40) // after Stop: ignored

	f := Figures{
		JobID: 12, SavesetID: 7, Level: "full", Kind: "backup", Status: "warnings",
		Tapes: []string{"KUR001", "KUR002"}, Warnings: 3,
	}
	f.Measure(files, source, media)
	f.Phases = append(f.Phases, backup.Figures())
	return f
}

func TestRenderGolden(t *testing.T) {
	f := sampleFigures()
	c := NewFakeClock(t0)
	v := StartPhase(c, "verify")
	for range 390 {
		v.Source.Add(55 << 20)
		c.Advance(time.Second)
	}
	v.End()
	f.Phases = append(f.Phases, v.Figures())

	var buf bytes.Buffer
	Render(&buf, f)
	// A restore: no level, no saveset, no tapes, no phases, zero length.
	buf.WriteString("\n")
	Render(&buf, Figures{JobID: 13, Kind: "restore", Status: "failed", CompressionRatio: "-"})
	golden(t, "render.golden", buf.Bytes())
}

func TestFiguresJSONGolden(t *testing.T) {
	got, err := json.MarshalIndent(sampleFigures(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "figures.json", append(got, '\n'))

	// Empty lists are [] (a stable contract for consumers), not null.
	empty, err := json.Marshal(Figures{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(empty, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tapes", "phases"} {
		if string(m[k]) != "[]" {
			t.Errorf("empty %s encodes as %s, want []", k, m[k])
		}
	}
}

func TestFormatHelpers(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 105005: "105,005", -1234567: "-1,234,567"} {
		if got := units.Thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for s, want := range map[float64]string{0: "0.00s", 4.271: "4.27s", 59.6: "59.60s", 60: "1m 00s", 725: "12m 05s", 3725: "1h 02m 05s"} {
		if got := duration(s); got != want {
			t.Errorf("duration(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestRecorderAndNop(t *testing.T) {
	var r Recorder
	sinks := []Sink{Nop{}, &r, SinkFunc(func(Event) {})}
	for _, s := range sinks {
		s.Event(Event{Kind: JobStarted, JobID: 1})
		s.Event(Event{Kind: WarningEvent, JobID: 1, Path: "/etc/x", Message: "permission denied"})
	}
	ev := r.Events()
	if len(ev) != 2 || ev[0].Kind != JobStarted || ev[1].Message != "permission denied" {
		t.Errorf("recorded %+v", ev)
	}
}
