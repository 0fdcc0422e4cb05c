package monitor

import (
	"encoding/json"

	"github.com/kura-backup/kura/internal/units"
)

// Figures are the Job Monitor figures of one job. The JSON field names are a
// stable output contract (kura --json, the API, the web console): never
// rename one. Tapes and Phases encode as [] when empty, never null.
type Figures struct {
	JobID            int64          `json:"job_id"`
	SavesetID        int64          `json:"saveset_id"`
	Level            string         `json:"level"` // full, incremental, differential; "" for restores
	Files            int64          `json:"files"`
	SourceBytes      int64          `json:"source_bytes"`
	MediaBytes       int64          `json:"media_bytes"`
	AvgKBps          float64        `json:"avg_kbps"`  // source KB (1024 bytes) per second of elapsed time
	PeakKBps         float64        `json:"peak_kbps"` // highest 1-second window; never below AvgKBps
	ElapsedSeconds   float64        `json:"elapsed_seconds"`
	CompressionRatio string         `json:"compression_ratio"` // "5.26:1", "-" without media bytes
	Tapes            []string       `json:"tapes"`             // barcodes, in the order written
	Warnings         int64          `json:"warnings"`
	Kind             string         `json:"kind"`   // backup, restore, verify, copy, scan
	Status           string         `json:"status"` // succeeded, warnings, failed, canceled, running
	Phases           []PhaseFigures `json:"phases"`
}

// PhaseFigures are the figures of one phase of a job.
type PhaseFigures struct {
	Name             string  `json:"name"`
	Files            int64   `json:"files"`
	SourceBytes      int64   `json:"source_bytes"`
	MediaBytes       int64   `json:"media_bytes"`
	AvgKBps          float64 `json:"avg_kbps"`
	PeakKBps         float64 `json:"peak_kbps"`
	ElapsedSeconds   float64 `json:"elapsed_seconds"`
	CompressionRatio string  `json:"compression_ratio"`
}

// Measure sets the job-wide counters, rates, elapsed time and compression
// ratio of f from the job's meters (rates are of source bytes). The other
// fields (ids, level, tapes, warnings, kind, status, phases) are the
// caller's.
func (f *Figures) Measure(files, source, media *Meter) {
	f.Files = files.Total()
	f.SourceBytes = source.Total()
	f.MediaBytes = media.Total()
	f.AvgKBps = units.KBps(source.Average())
	f.PeakKBps = units.KBps(source.Peak())
	f.ElapsedSeconds = source.Elapsed().Seconds()
	f.CompressionRatio = units.Ratio(f.SourceBytes, f.MediaBytes)
}

// MarshalJSON encodes f with empty Tapes and Phases as [] rather than null.
func (f Figures) MarshalJSON() ([]byte, error) {
	type plain Figures // no methods: no recursion
	p := plain(f)
	if p.Tapes == nil {
		p.Tapes = []string{}
	}
	if p.Phases == nil {
		p.Phases = []PhaseFigures{}
	}
	return json.Marshal(p)
}
