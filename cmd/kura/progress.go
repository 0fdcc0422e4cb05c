package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

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
		path := ev.Path
		if len(path) > 40 {
			path = "…" + path[len(path)-39:]
		}
		line := fmt.Sprintf("%s %s files  %s  %s  %s", ev.Phase, thousands(ev.Files), units.FormatSize(ev.Bytes),
			units.FormatRate(ev.Rate), path)
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

// thousands formats n with comma separators, as the seeds' tables do.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
