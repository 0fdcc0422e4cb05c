// Package planner turns measured throughput into a backup design, the way
// seed 004 sizes a backup server: what fits in the backup window, how many
// generations the capacity holds, whether verify still fits (seed 001), and
// when to scale up or out. Plan is a pure function: it returns its figures
// and the reasons behind them, in words.
package planner

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kura-backup/kura/internal/units"
)

// Input is what the administrator knows or measured.
type Input struct {
	Throughput float64       // bytes/s the backup sustains (measured: kura jobs, kura bench)
	Window     time.Duration // the nightly backup window
	Capacity   int64         // bytes of backup storage
	Reserve    float64       // share of the window kept for verify and other work (0.3 = 30 %)
	Daily      int64         // bytes of a full backup; 0 = as much as the window allows
	ChangeRate float64       // share of Daily that changes per day (incremental/differential schedules); 0 = fulls only
	FullEvery  int           // days between fulls with ChangeRate (1 = a full every day)
	Diff       bool          // differentials between fulls instead of incrementals
	Verify     bool          // every backup is verified (reads it all back at Throughput)
}

// Result is the plan and its reasons.
type Result struct {
	WindowBytes   int64    `json:"window_bytes"`   // bytes the usable part of the window moves
	Daily         int64    `json:"daily_bytes"`    // the full backup planned
	Fits          bool     `json:"fits"`           // the planned backups fit the window
	CycleBytes    int64    `json:"cycle_bytes"`    // storage of one generation (a full and what depends on it)
	Generations   int      `json:"generations"`    // generations the capacity holds
	VerifyFits    bool     `json:"verify_fits"`    // backup and verify fit the whole window
	ServersNeeded int      `json:"servers_needed"` // at this throughput, servers to back up Daily in the window
	Reasons       []string `json:"reasons"`
}

// Plan computes the design. It needs a positive throughput, window and
// capacity; every number it returns comes with a sentence in Reasons.
func Plan(in Input) (Result, error) {
	var r Result
	switch {
	case in.Throughput <= 0:
		return r, errors.New("throughput must be positive")
	case in.Window <= 0:
		return r, errors.New("window must be positive")
	case in.Capacity <= 0:
		return r, errors.New("capacity must be positive")
	case in.Reserve < 0 || in.Reserve >= 1:
		return r, errors.New("reserve must be at least 0 % and below 100 %")
	case in.ChangeRate < 0 || in.ChangeRate > 1:
		return r, errors.New("change rate must be between 0 % and 100 %")
	}
	if in.FullEvery <= 0 {
		in.FullEvery = 1
	}
	say := func(format string, args ...any) { r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...)) }
	sec := in.Window.Seconds()
	total := in.Throughput * sec
	usable := total * (1 - in.Reserve)
	r.WindowBytes = int64(usable)
	say("%s for %s moves %s; keeping %.0f %% of the window for verify and other work leaves %s a night.",
		units.FormatRate(in.Throughput), hm(in.Window), units.FormatSize(int64(total)), in.Reserve*100, units.FormatSize(r.WindowBytes))

	r.Daily = in.Daily
	if r.Daily == 0 {
		r.Daily = r.WindowBytes
		say("Without a given data size, the plan backs up what the window allows: %s.", units.FormatSize(r.Daily))
	}

	// The biggest night: the full; with differentials, the day before the
	// next full carries every change since the last full.
	biggest := float64(r.Daily)
	cycle := float64(r.Daily)
	if in.ChangeRate > 0 && in.FullEvery > 1 {
		change := in.ChangeRate * float64(r.Daily)
		for day := 1; day < in.FullEvery; day++ {
			b := change
			if in.Diff {
				b = math.Min(change*float64(day), float64(r.Daily))
			}
			cycle += b
		}
		kind := "incremental"
		if in.Diff {
			kind = "differential"
		}
		say("A full every %d days with daily %ss at %.1f %% change: a generation (the full and the %d backups that depend on it) takes %s.",
			in.FullEvery, kind, in.ChangeRate*100, in.FullEvery-1, units.FormatSize(int64(cycle)))
	}
	r.CycleBytes = int64(cycle)
	r.Fits = biggest <= usable
	if r.Fits {
		say("The full backup of %s fits the usable window (%.0f %% of it).", units.FormatSize(r.Daily), 100*biggest/usable)
	} else {
		say("The full backup of %s does NOT fit the usable window of %s: it needs %s at this rate.",
			units.FormatSize(r.Daily), units.FormatSize(r.WindowBytes), hm(time.Duration(biggest/in.Throughput*float64(time.Second))))
	}
	r.ServersNeeded = int(math.Ceil(biggest / usable))
	r.Generations = int(float64(in.Capacity) / cycle)
	say("%s of capacity holds %s of %s.", units.FormatSize(in.Capacity), units.Count(int64(r.Generations), "generation"), units.FormatSize(r.CycleBytes))
	if r.Generations < 1 {
		say("The capacity does not hold even one generation: add storage before anything else.")
	}

	need := biggest / in.Throughput
	if in.Verify {
		need *= 2
	}
	r.VerifyFits = biggest*2/in.Throughput <= sec
	switch {
	case in.Verify && !r.VerifyFits:
		say("Backup and verify of the biggest night take %s, more than the %s window (seed 001: verify is a phase of its own).",
			hm(time.Duration(need*float64(time.Second))), hm(in.Window))
	case in.Verify:
		say("Backup and verify of the biggest night take %s of the %s window.", hm(time.Duration(need*float64(time.Second))), hm(in.Window))
	case r.VerifyFits:
		say("A verify of every backup would still fit the window.")
	default:
		say("A verify of every backup would not fit the window.")
	}

	switch {
	case r.ServersNeeded > 1:
		say("Scale out or up: at this rate %d servers (or drives fed by separate clients) are needed, or a faster target (seed 004: RAID-10 instead of RAID-5).", r.ServersNeeded)
	case biggest > 0.8*usable:
		say("The window is more than 80 %% used: plan to scale up or out before the data grows.")
	default:
		say("One server is enough; %s of headroom is left in the window.", units.FormatSize(int64(usable-biggest)))
	}
	return r, nil
}

// hm writes a duration as hours and minutes: "8h", "13h39m", "45m".
func hm(d time.Duration) string {
	m := int64(d.Round(time.Minute) / time.Minute)
	switch h := m / 60; {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m%60 == 0:
		return fmt.Sprintf("%dh", h)
	default:
		return fmt.Sprintf("%dh%02dm", h, m%60)
	}
}
