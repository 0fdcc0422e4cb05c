package api

import "context"

// PlanService sizes a backup design: POST /plan. The plan is a pure
// computation (internal/planner); the service adds what only a catalog
// knows: with throughput_auto or daily_auto, the throughput and the size
// of a full backup are the medians of its history.
type PlanService interface {
	Plan(ctx context.Context, req PlanRequest) (*Plan, error)
}

func init() { wireTypes = append(wireTypes, PlanRequest{}, Plan{}) }

// PlanRequest is the inputs of a plan. Shares are fractions (0.3 = 30 %).
type PlanRequest struct {
	ThroughputBytesPerSecond float64 `json:"throughput_bytes_per_second,omitempty"` // the sustained backup rate
	ThroughputAuto           bool    `json:"throughput_auto,omitempty"`             // the median rate of recent backup jobs
	WindowSeconds            float64 `json:"window_seconds"`                        // the nightly backup window
	CapacityBytes            int64   `json:"capacity_bytes"`                        // backup storage
	Reserve                  float64 `json:"reserve"`                               // share of the window kept for verify and other work
	DailyBytes               int64   `json:"daily_bytes,omitempty"`                 // a full backup; 0: what the window allows
	DailyAuto                bool    `json:"daily_auto,omitempty"`                  // the median size of recent full backups
	ChangeRate               float64 `json:"change_rate,omitempty"`                 // share of the data that changes per day
	FullEvery                int     `json:"full_every,omitempty"`                  // days between fulls (0 or 1: a full every day)
	Diff                     bool    `json:"diff,omitempty"`                        // differentials between fulls, not incrementals
	Verify                   bool    `json:"verify,omitempty"`                      // every backup is verified
}

// Plan is a backup design and its reasons: every figure comes with a
// sentence in Reasons (the first ones say where auto inputs came from).
type Plan struct {
	WindowBytes   int64    `json:"window_bytes"`   // bytes the usable part of the window moves
	DailyBytes    int64    `json:"daily_bytes"`    // the full backup planned
	Fits          bool     `json:"fits"`           // the planned backups fit the window
	CycleBytes    int64    `json:"cycle_bytes"`    // storage of one generation (a full and what depends on it)
	Generations   int      `json:"generations"`    // generations the capacity holds
	VerifyFits    bool     `json:"verify_fits"`    // backup and verify fit the whole window
	ServersNeeded int      `json:"servers_needed"` // at this throughput, servers to back up the daily size in the window
	Reasons       []string `json:"reasons"`
}

// MaxFullEvery bounds the days between fulls.
const MaxFullEvery = 366

// Validate checks what the planner does not: a throughput and a daily
// size are each given or auto, not both, and full_every is in range.
func (r *PlanRequest) Validate() error {
	switch {
	case r.ThroughputAuto && r.ThroughputBytesPerSecond != 0:
		return bad("throughput_auto", "give a throughput or ask for auto, not both")
	case r.DailyAuto && r.DailyBytes != 0:
		return bad("daily_auto", "give a daily size or ask for auto, not both")
	case r.FullEvery < 0 || r.FullEvery > MaxFullEvery:
		return bad("full_every", "must be 1 to %d", MaxFullEvery)
	}
	return nil
}
