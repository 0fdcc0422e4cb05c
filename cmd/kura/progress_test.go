package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/monitor"
)

func TestProgressLine(t *testing.T) {
	ev := monitor.Event{Phase: "backup", Files: 1234, Bytes: 50 << 20, Total: 100 << 20, Rate: 10 << 20, Path: "home/me/some/long/path/file.txt"}
	got := progressLine(ev, 120)
	for _, want := range []string{"backup  [", "50%", "50.0 MiB of 100.0 MiB", "5s left", "1,234 files", "file.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress line %q lacks %q", got, want)
		}
	}
	if n := len([]rune(progressLine(ev, 60))); n >= 60 {
		t.Errorf("line of %d runes does not fit a 60-column terminal", n)
	}
	one := ev
	one.Files = 1
	if got := progressLine(one, 120); !strings.Contains(got, " 1 file ") || strings.Contains(got, "1 files") {
		t.Errorf("one file: %q", got)
	}
	ev.Total = 0
	if got := progressLine(ev, 120); strings.Contains(got, "[") || !strings.Contains(got, "50.0 MiB") {
		t.Errorf("without a total: %q", got)
	}
}

func TestParseTimeCoversWhatWasWritten(t *testing.T) {
	cases := map[string]time.Duration{"2026-11-30 15:04:05": time.Second, "2026-11-30 15:04": time.Minute, "2026-11-30": 24 * time.Hour}
	for in, span := range cases {
		got, err := parseTime(in)
		if err != nil {
			t.Fatal(err)
		}
		start, _ := time.ParseInLocation("2006-01-02 15:04:05"[:len(in)], in, time.Local)
		if want := start.Add(span - time.Nanosecond); !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, want %v (the end of that %v)", in, got, want, span)
		}
	}
	if _, err := parseTime("yesterday-ish"); err == nil {
		t.Error("nonsense accepted")
	}
}
