package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/units"
)

// startProgress shows a live status line on stderr while a job runs, when
// stderr is a terminal. It returns a function that clears the line.
func startProgress(env *engine.Env, enabled bool) (stop func()) {
	if !enabled || !isTerminal(os.Stderr) {
		return func() {}
	}
	var mu sync.Mutex
	shown := false
	env.Events = monitor.SinkFunc(func(ev monitor.Event) {
		if ev.Kind != monitor.Progress {
			return
		}
		line := progressLine(ev, terminalWidth())
		mu.Lock()
		fmt.Fprintf(os.Stderr, "\r\033[K%s", line)
		shown = true
		mu.Unlock()
	})
	return func() {
		mu.Lock()
		if shown {
			fmt.Fprint(os.Stderr, "\r\033[K")
		}
		mu.Unlock()
		env.Events = monitor.Nop{}
	}
}

// progressLine draws one progress event: the phase, then — when the
// phase's total is known — a bar, the percentage and the time left, then
// the running figures, the tape in use and, as room allows, the path being
// worked on. On a narrow terminal the less useful parts go first (path,
// bar, rate, files), so the percentage, time left and tape stay. It
// depends on nothing but the event and the width (the time left is the
// bytes left at the event's rate), so golden text tests it.
func progressLine(ev monitor.Event, width int) string {
	type part struct {
		text string
		drop int // 0: always shown; higher numbers are dropped first
	}
	var parts []part
	add := func(text string, drop int) { parts = append(parts, part{text, drop}) }
	add(ev.Phase, 0)
	if ev.Total > 0 {
		frac := float64(ev.Bytes) / float64(ev.Total)
		left := "?"
		switch {
		case ev.Bytes > ev.Total:
			// Past an estimate (the last backup was smaller): how much is
			// left is not known.
			frac = 0.99
		case ev.Bytes == ev.Total:
			left = "0s"
		case ev.Rate > 0:
			left = timeLeft(time.Duration(float64(ev.Total-ev.Bytes) / ev.Rate * float64(time.Second)))
		}
		const barWidth = 24
		done := min(int(frac*barWidth), barWidth)
		bar := strings.Repeat("=", done)
		if done < barWidth {
			bar += ">" + strings.Repeat(" ", barWidth-done-1)
		}
		add("["+bar+"]", 4)
		add(fmt.Sprintf("%d%%", int(math.Floor(frac*100))), 0)
		add(units.FormatSize(ev.Bytes)+" of "+units.FormatSize(ev.Total), 1)
		add(left+" left", 0)
	} else {
		add(units.FormatSize(ev.Bytes), 1)
	}
	add(units.Count(ev.Files, "file"), 2)
	add(units.FormatRate(ev.Rate), 3)
	if ev.Tape != "" {
		add("tape "+ev.Tape, 0)
	}
	join := func(maxDrop int) string {
		var b strings.Builder
		for _, p := range parts {
			if p.drop > maxDrop {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("  ")
			}
			b.WriteString(p.text)
		}
		return b.String()
	}
	line := join(4)
	for maxDrop := 3; maxDrop >= 0 && runeLen(line) > width-1; maxDrop-- {
		line = join(maxDrop)
	}
	if room := width - runeLen(line) - 3; room > 10 && ev.Path != "" {
		path := []rune(ev.Path)
		if len(path) > room {
			path = append([]rune("…"), path[len(path)-room+1:]...)
		}
		line += "  " + string(path)
	}
	if r := []rune(line); len(r) > width-1 && width > 20 {
		line = string(r[:width-1])
	}
	return line
}

func runeLen(s string) int { return len([]rune(s)) }

// timeLeft formats the time left as the job monitor formats elapsed time,
// to the second: "45s", "12m 05s", "1h 08m 16s".
func timeLeft(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	h, m := s/3600, s/60%60
	s %= 60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh %02dm %02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm %02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// terminalWidth is the width of the terminal on stderr, or 100.
func terminalWidth() int {
	ws, err := unix.IoctlGetWinsize(int(os.Stderr.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 100
	}
	return int(ws.Col)
}
