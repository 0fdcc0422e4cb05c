package monitor

import (
	"time"

	"github.com/kura-backup/kura/internal/units"
)

// Phase is one named part of a job (backup, verify, restore) with its own
// meters. Rates of a phase are rates of its source bytes: the data as the
// user sees it (read in a backup, checked in a verify, written in a
// restore). Media counts bytes on tape, after compression.
type Phase struct {
	Name   string
	Source *Meter // source bytes
	Media  *Meter // media bytes
	Files  *Meter // files
}

// StartPhase starts a phase: its meters start at clock.Now().
func StartPhase(clock Clock, name string) *Phase {
	return &Phase{
		Name:   name,
		Source: NewMeter(clock),
		Media:  NewMeter(clock),
		Files:  NewMeter(clock),
	}
}

// End stops the phase's meters; later calls do nothing.
func (p *Phase) End() {
	p.Source.Stop()
	p.Media.Stop()
	p.Files.Stop()
}

// Elapsed returns the phase's running time.
func (p *Phase) Elapsed() time.Duration { return p.Source.Elapsed() }

// Figures returns the phase's figures so far.
func (p *Phase) Figures() PhaseFigures {
	return PhaseFigures{
		Name:             p.Name,
		Files:            p.Files.Total(),
		SourceBytes:      p.Source.Total(),
		MediaBytes:       p.Media.Total(),
		AvgKBps:          units.KBps(p.Source.Average()),
		PeakKBps:         units.KBps(p.Source.Peak()),
		ElapsedSeconds:   p.Source.Elapsed().Seconds(),
		CompressionRatio: units.Ratio(p.Source.Total(), p.Media.Total()),
	}
}
