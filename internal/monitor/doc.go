// Package monitor measures jobs for the Job Monitor: bytes and files moved,
// elapsed time, average and peak rates and compression ratio, per job and per
// phase (backup, verify, restore), and it carries the job's events to their
// consumers (CLI, JSON output, web console, metrics) through a Sink.
//
// The package never prints on its own; Render writes the human summary to the
// writer it is given. Time comes from an injected Clock.
//
// Units: rates in Figures are KB/s with 1 KB = 1024 bytes, as NetVault's job
// monitor counts; the compression ratio is source bytes : media bytes written
// as "5.26:1" (units.Ratio). The peak rate is the highest count in any whole
// 1-second window, bucketed by second since the meter started.
package monitor
