package main

import (
	"fmt"
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

// progressLine draws one progress event: a bar with percentage and time
// left when the phase's total is known, else the running figures.
func progressLine(ev monitor.Event, width int) string {
	figures := fmt.Sprintf("%s  %s  %s", units.Count(ev.Files, "file"), units.FormatSize(ev.Bytes), units.FormatRate(ev.Rate))
	head := ev.Phase
	if ev.Total > 0 {
		frac := min(float64(ev.Bytes)/float64(ev.Total), 1)
		const barWidth = 24
		done := int(frac * barWidth)
		bar := strings.Repeat("=", done) + strings.Repeat(" ", barWidth-done)
		if done < barWidth {
			bar = bar[:done] + ">" + bar[done+1:]
		}
		left := "?"
		if ev.Rate > 0 && ev.Bytes < ev.Total {
			left = (time.Duration(float64(ev.Total-ev.Bytes)/ev.Rate) * time.Second).Round(time.Second).String()
		} else if ev.Bytes >= ev.Total {
			left = "0s"
		}
		head = fmt.Sprintf("%s [%s] %3.0f%%  %s of %s  %s left", ev.Phase, bar, frac*100,
			units.FormatSize(ev.Bytes), units.FormatSize(ev.Total), left)
		figures = fmt.Sprintf("%s  %s", units.Count(ev.Files, "file"), units.FormatRate(ev.Rate))
	}
	line := head + "  " + figures
	if room := width - len([]rune(line)) - 3; room > 10 && ev.Path != "" {
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

// terminalWidth is the width of the terminal on stderr, or 100.
func terminalWidth() int {
	ws, err := unix.IoctlGetWinsize(int(os.Stderr.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 100
	}
	return int(ws.Col)
}
